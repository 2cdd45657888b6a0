"""What every command shares: error reporting, exit statuses, JSON and rich output.

Library code never prints or exits; commands call the library inside `reporting_errors`, which
turns a `TrgcError` into a diagnostic on stderr (or a JSON error document with `--json`) and
the exit status DESIGN.md assigns to its code. stdout carries only results.
"""

from __future__ import annotations

import functools
import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from trgc.errors import EXIT_INTERNAL, TrgcError
from trgc.limits import LIMIT_NAMES

F = TypeVar("F", bound=Callable[..., Any])


def stderr_console():
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def stdout_console():
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


def print_json(document: object) -> None:
    """Print exactly one JSON document on stdout (sorted keys, UTF-8, newline-terminated)."""
    sys.stdout.write(json.dumps(document, sort_keys=True, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


def report_error(error: TrgcError, as_json: bool) -> None:
    """Write one diagnostic for `error` on stderr: code, position, message, hint."""
    if as_json:
        sys.stderr.write(
            json.dumps({"error": error.to_dict()}, sort_keys=True, ensure_ascii=False) + "\n"
        )
        return
    console = stderr_console()
    where = error.location()
    console.print(
        f"[bold red]error[/] [bold]{error.code}[/]" + (f" at {where}" if where else ""), markup=True
    )
    console.print(f"  {error.message}", markup=False)
    if error.hint:
        console.print(f"  hint: {error.hint}", markup=False)


def reporting_errors(func: F) -> F:
    """Wrap a command: map `TrgcError` to its exit status, anything unexpected to 70."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        as_json = bool(kwargs.get("as_json", False))
        try:
            return func(*args, **kwargs)
        except TrgcError as error:
            report_error(error, as_json)
            raise typer.Exit(error.exit_status) from None
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except Exception as exc:  # an internal bug: say so, with the traceback for a report
            traceback.print_exc(file=sys.stderr)
            error = TrgcError(
                "E_INTERNAL",
                f"internal error: {type(exc).__name__}: {exc}",
                hint="please report this with the input that caused it",
            )
            report_error(error, as_json)
            raise typer.Exit(EXIT_INTERNAL) from None

    return wrapper  # type: ignore[return-value]


JSON_OPTION_HELP = "Print one machine-readable JSON document on stdout instead of a table."

# The options several commands share, defined once so that their spelling and help agree.
JsonOption = Annotated[bool, typer.Option("--json", help=JSON_OPTION_HELP)]
LimitOption = Annotated[
    list[str] | None,
    typer.Option(
        "--limit",
        metavar="NAME=VALUE",
        help="Override one limit, e.g. --limit states=100000 (repeatable). Known names: "
        + ", ".join(LIMIT_NAMES)
        + ". Applied after --limits-file.",
    ),
]
LimitsFileOption = Annotated[
    Path | None,
    typer.Option(
        "--limits-file",
        metavar="FILE",
        help="TOML file with a [limits] table of NAME = VALUE overrides.",
    ),
]

WHITESPACE_HELP = (
    "JSON Schema only: how JSON is written between tokens: `pretty` (`, ` and `: ` as json.dumps "
    "and chat templates write them, the default), `compact` (`,` `:`) or `flexible` (any JSON "
    "whitespace, at most --max-whitespace characters on each side of every structural "
    "character and around the value). `--separators` is its older name."
)
WhitespaceOption = Annotated[
    str, typer.Option("--whitespace", "--separators", metavar="MODE", help=WHITESPACE_HELP)
]
MaxWhitespaceOption = Annotated[
    int,
    typer.Option(
        "--max-whitespace",
        metavar="N",
        help="With --whitespace flexible: the longest whitespace run on each side of a "
        "structural character (default 8), so that a model cannot run away in whitespace.",
    ),
]
UnknownKeywordsOption = Annotated[
    str,
    typer.Option(
        "--unknown-keywords",
        metavar="MODE",
        help="JSON Schema only: `error` (the default: a keyword outside the trj-1 matrix is "
        "E_UNSUPPORTED_KEYWORD) or `annotate` (read such names as annotations, as the "
        "specification does; they are listed, sorted, in the artifact's options and warned "
        "about on stderr). A name one or two edits from an assertion keyword (emum, maxLenght) "
        "is an error in both modes.",
    ),
]


def warn_annotations(artifact) -> None:
    """One stderr warning per name a schema compiled in annotate mode did not enforce."""
    names = artifact.metadata.get("options", {}).get("annotations") or []
    if not names:
        return
    console = stderr_console()
    for name in names:
        if name.startswith("format:"):
            text = f"format {name[7:]!r} is not a format trj-1 knows: read as an annotation"
        elif name.startswith("$ref-sibling:"):
            text = f"{name[13:]!r} beside $ref is ignored, as draft-07 and earlier specify"
        else:
            text = f"keyword {name!r} is outside the trj-1 matrix: read as an annotation"
        console.print(f"[yellow]warning[/] {text}", markup=True, highlight=False)
