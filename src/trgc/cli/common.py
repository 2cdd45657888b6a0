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

from trgc.errors import EXIT_INTERNAL, EXIT_INVALID, TrgcError
from trgc.limits import LIMIT_NAMES

F = TypeVar("F", bound=Callable[..., Any])


def stderr_console():
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def stdout_console():
    """A rich console on stdout whose broken pipe reaches the root command's funnel (rich's own
    handling would exit 1 on its own)."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            raise BrokenPipeError(errno.EPIPE, "standard output was closed by its reader")

    return _Console(highlight=False, soft_wrap=True)


def print_table(table, console=None) -> None:
    """Print a rich `Table` on stdout: boxed and fitted to a terminal, or, when stdout is not a
    terminal (piped or redirected), as plain full-width columns (title line, header, rows;
    cells aligned with two spaces, nothing truncated, no trailing whitespace)."""
    if sys.stdout.isatty():
        (console or stdout_console()).print(table)
        return
    columns = list(table.columns)
    grid = [[str(c.header) for c in columns]]
    grid += [
        list(row) for row in zip(*([str(cell) for cell in c.cells] for c in columns), strict=True)
    ]
    widths = [max(len(row[i]) for row in grid) for i in range(len(columns))]
    lines = [str(table.title)] if table.title else []
    for row in grid:
        cells = [
            cell.rjust(width) if column.justify == "right" else cell.ljust(width)
            for cell, width, column in zip(row, widths, columns, strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()


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
            return os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b)
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


def _printable(text: str) -> str:
    """`text` with anything UTF-8 cannot carry (lone surrogates from undecodable argv or file
    names) backslash-escaped, so a diagnostic never fails to print."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def write_stderr(text: str) -> None:
    """Write to stderr; a closed or broken stderr drops the text instead of raising."""
    try:
        if sys.stderr is not None:
            sys.stderr.write(_printable(text))
            sys.stderr.flush()
    except (OSError, ValueError):
        pass


def debug_enabled() -> bool:
    """`trgc --debug` or `TRGC_DEBUG=1`: internal errors also print their traceback."""
    return os.environ.get("TRGC_DEBUG", "") not in ("", "0")


def report_error(error: TrgcError, as_json: bool) -> None:
    """Write one diagnostic for `error` on stderr: code, position, message, hint (with `--json`,
    one JSON document on one line)."""
    if as_json:
        write_stderr(
            json.dumps({"error": error.to_dict()}, sort_keys=True, ensure_ascii=False) + "\n"
        )
        return
    where = _printable(error.location())
    lines = [f"error {error.code}" + (f" at {where}" if where else ""), f"  {error.message}"]
    if error.hint:
        lines.append(f"  hint: {error.hint}")
    if sys.stderr is not None and sys.stderr.isatty():
        from rich.markup import escape

        head = escape(lines[0]).replace(
            f"error {error.code}", f"[bold red]error[/] [bold]{error.code}[/]", 1
        )
        try:
            console = stderr_console()
            console.print(head, markup=True)
            for line in lines[1:]:
                console.print(_printable(line), markup=False)
            return
        except (OSError, ValueError):
            return
    write_stderr("\n".join(lines) + "\n")


def internal_error(exc: BaseException) -> TrgcError:
    """The `E_INTERNAL` report of an unexpected exception (a bug in trgc, never user input)."""
    return TrgcError(
        "E_INTERNAL",
        f"internal error: {type(exc).__name__}: {exc}",
        hint="please report this with the input that caused it"
        + ("" if debug_enabled() else " (rerun with trgc --debug to see the traceback)"),
    )


class OutputClosed(Exception):
    """stdout is closed or its reader went away. Deliberately not an `OSError`: it must pass
    click's own EPIPE handling (which exits 1) to reach the root command's funnel."""


def reporting_errors(func: F) -> F:
    """Wrap a command: map `TrgcError` to its exit status, anything unexpected to 70 (one
    diagnostic, or one JSON document with `--json`; the traceback only under `--debug`). A
    broken or closed stdout propagates to the root command, which ends quietly (`funnel`)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        as_json = bool(kwargs.get("as_json", False))
        try:
            return func(*args, **kwargs)
        except TrgcError as error:
            from trgc.cli.filekinds import redirect_hint

            redirect_hint(error)
            report_error(error, as_json)
            raise typer.Exit(error.exit_status) from None
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except BrokenPipeError:
            raise OutputClosed from None
        except OSError as exc:  # the OS refused a file the user named (a name too long, ...)
            if debug_enabled():
                write_stderr("".join(traceback.format_exception(exc)))
            where = exc.filename if isinstance(exc.filename, str) else None
            report_error(
                TrgcError("E_IO", f"cannot access: {exc.strerror or exc}", source=where), as_json
            )
            raise typer.Exit(EXIT_INVALID) from None
        except Exception as exc:  # an internal bug: say so, with the traceback only when asked
            if debug_enabled():
                write_stderr("".join(traceback.format_exception(exc)))
            report_error(internal_error(exc), as_json)
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
CacheDirOption = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        metavar="DIR",
        help="Persistent mask-cache directory (default: $TRGC_CACHE_DIR, else the user's "
        "cache directory, e.g. ~/.cache/trgc). Shared safely by concurrent processes.",
    ),
]
NoCacheOption = Annotated[
    bool,
    typer.Option(
        "--no-cache",
        help="Neither read nor write the persistent mask cache.",
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


def open_disk_cache(cache_dir: Path | None, no_cache: bool = False):
    """The `trgc.engine.diskcache.DiskCache` that --cache-dir / --no-cache select (None when
    disabled)."""
    from trgc.engine.diskcache import open_cache

    return open_cache(cache_dir, enabled=not no_cache)


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
