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


def print_table(table, console=None) -> None:
    """Print a rich `Table` on stdout: boxed and fitted to a terminal, or, when stdout is not a
    terminal (piped or redirected), as plain full-width columns (title line, header, rows;
    cells aligned with two spaces, nothing truncated, no trailing whitespace)."""
    if sys.stdout.isatty():
        (console or stdout_console()).print(table)
        return
    columns = list(table.columns)
    grid = [[str(c.header) for c in columns]]
    grid += [list(row) for row in zip(*([str(cell) for cell in c.cells] for c in columns), strict=True)]
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
            from trgc.cli.filekinds import redirect_hint

            redirect_hint(error)
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


def open_disk_cache(cache_dir: Path | None, no_cache: bool = False):
    """The `trgc.engine.diskcache.DiskCache` that --cache-dir / --no-cache select (None when
    disabled)."""
    from trgc.engine.diskcache import open_cache

    return open_cache(cache_dir, enabled=not no_cache)
