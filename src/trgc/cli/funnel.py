"""The root command's error funnel: every way a `trgc` run can end goes through one place.

Commands report their own `TrgcError`s (`common.reporting_errors`); what happens before a
command runs or after it wrote its output ends here, the same way:

* click's usage errors (missing argument, unknown option, a value that does not parse) become
  `E_USAGE` — one JSON error document on stderr with `--json`, the usual diagnostic otherwise;
* a stdout that is closed (`>&-`) or whose reader went away (`| head -c1`: EPIPE) ends the run
  quietly with `EXIT_BROKEN_PIPE` (141, what a shell reports for a process killed by SIGPIPE):
  nothing more is printed, no traceback;
* an exception no command caught is `E_INTERNAL` (exit 70), its traceback only under
  `trgc --debug` / `TRGC_DEBUG=1`.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Sequence
from typing import Any

from typer.core import TyperGroup
from typer.exceptions import Abort, TyperException

from trgc.cli.common import (
    OutputClosed,
    debug_enabled,
    internal_error,
    report_error,
    write_stderr,
)
from trgc.cli.streams import EXIT_BROKEN_PIPE, ClosedStdout, silence_stdout
from trgc.errors import EXIT_INTERNAL, EXIT_INVALID, TrgcError


def wants_json(args: Sequence[str]) -> bool:
    """Whether the command line asks for `--json` (options end at `--`)."""
    args = list(args)
    return "--json" in (args[: args.index("--")] if "--" in args else args)


def usage_error(error: TyperException) -> TrgcError:
    """`E_USAGE` for one of click's errors, naming the command and where its help is."""
    ctx = getattr(error, "ctx", None)
    command = ctx.command_path if ctx is not None else "trgc"
    return TrgcError(
        "E_USAGE",
        error.format_message(),
        hint=f"see '{command} --help'",
        details={"command": command},
    )


class TrgcGroup(TyperGroup):
    """The `trgc` group: runs click without its standalone handling and ends every run itself."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        as_json = wants_json(argv)
        if sys.stdout is None:
            sys.stdout = ClosedStdout()  # type: ignore[assignment]
        try:
            result = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
            code = result if isinstance(result, int) and not isinstance(result, bool) else 0
        except TyperException as error:  # click's errors (typer vendors click)
            if type(error).__name__ == "NoArgsIsHelpError":  # `trgc` alone: the help, as ever
                error.show()  # type: ignore[attr-defined]
                code = error.exit_code
            else:
                report_error(usage_error(error), as_json)
                code = EXIT_INVALID
        except Abort:  # end of input at a prompt
            code = EXIT_INVALID
        except (OutputClosed, BrokenPipeError):
            silence_stdout()
            code = EXIT_BROKEN_PIPE
        except Exception as exc:  # raised outside any command's own reporting
            if debug_enabled():
                write_stderr("".join(traceback.format_exception(exc)))
            report_error(internal_error(exc), as_json)
            code = EXIT_INTERNAL
        if code == 0:
            try:
                if sys.stdout is not None:
                    sys.stdout.flush()
            except BrokenPipeError:
                silence_stdout()
                code = EXIT_BROKEN_PIPE
        if standalone_mode:
            sys.exit(code)
        return code
