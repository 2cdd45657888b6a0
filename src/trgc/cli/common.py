"""What every command shares: error reporting, exit statuses, JSON and rich output.

Library code never prints or exits; commands call the library inside `reporting_errors`, which
turns a `TrgcError` into a diagnostic on stderr (or a JSON error document with `--json`) and
the exit status DESIGN.md assigns to its code. stdout carries only results.
"""

from __future__ import annotations

import errno
import functools
import json
import os
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


def read_stdin(max_bytes: int) -> bytes:
    """At most `max_bytes + 1` bytes of standard input (enough to tell an over-long input without
    holding it); a closed or unreadable standard input is `E_IO`."""
    stream = sys.stdin.buffer if sys.stdin is not None else None
    try:
        if stream is None:
            raise OSError(errno.EBADF, "standard input is closed")
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = stream.read(min(max_bytes + 1 - size, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except (OSError, ValueError) as exc:  # ValueError: the stream object was closed
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "it is closed"
        raise TrgcError("E_IO", f"cannot read standard input: {reason}", source="<stdin>") from None
    return b"".join(chunks)


def read_input(path: str | Path, max_bytes: int, what: str = "the input") -> bytes:
    """The bytes of a file or of standard input (`-`), refusing more than `max_bytes`
    (`E_LIMIT_INPUT_BYTES`, exit 3) without reading past the limit."""
    from trgc.atomic import read_bytes

    if str(path) != "-":
        return read_bytes(path, max_bytes, what=what)
    data = read_stdin(max_bytes)
    if len(data) > max_bytes:
        raise TrgcError(
            "E_LIMIT_INPUT_BYTES",
            f"standard input holds more than the ceiling of {max_bytes:,} bytes for {what}",
            source="<stdin>",
            hint="raise it with --limit input_bytes=N if this is intended",
        )
    return data


def refuse_overwriting_inputs(
    outputs: dict[str, Path | str | None], inputs: list[Path | str | None]
) -> None:
    """`E_USAGE` when an output would replace one of the command's inputs (`compile SRC -o SRC`,
    `generate ART --trace ART`): the same path after resolving links, or the same file."""

    def same(a: Path, b: Path) -> bool:
        if os.path.realpath(a) == os.path.realpath(b):
            return True
        try:
            return a.exists() and b.exists() and os.path.samefile(a, b)
        except OSError:
            return False

    for option, output in outputs.items():
        if output is None or str(output) == "-":
            continue
        for given in inputs:
            if given is not None and str(given) != "-" and same(Path(output), Path(given)):
                raise TrgcError(
                    "E_USAGE",
                    f"{option} {output} would overwrite the input {given}",
                    source=str(output),
                    hint="write the output to another file; nothing was written",
                )


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
