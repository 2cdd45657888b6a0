"""`trgc --help`, `trgc -h` and `trgc --version` written without importing typer.

Importing typer (and the click it vendors) is most of what `trgc --help` costs; the root help
is plain data (`trgc.cli.catalog`), so it is laid out here the way click's help formatter lays
it out: width `max(min(terminal columns, 80) - 2, 50)`, text wrapped by `textwrap` with
two-space indents, definition lists with a first column of at most 30 characters plus two,
command summaries cut like click's short help. Only those exact command lines of the
installed `trgc` script take this path; everything else (another program name, shell
completion, any other argument) goes through typer. `tests/test_cli_quickhelp.py` compares
the output with typer's at several widths.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from collections.abc import Sequence

from trgc import __version__
from trgc.cli.catalog import COMMANDS, HELP, ROOT_OPTIONS
from trgc.cli.streams import EXIT_BROKEN_PIPE, ClosedStdout, silence_stdout

FIRST_COLUMN_MAX = 30
COLUMN_SPACING = 2
INDENT = "  "


def _wrap(text: str, width: int, indent: str = "") -> list[str]:
    wrapper = textwrap.TextWrapper(
        width, initial_indent=indent, subsequent_indent=indent, replace_whitespace=False
    )
    return wrapper.wrap(text)


def _definitions(rows: Sequence[tuple[str, str]], width: int) -> list[str]:
    first = min(max(len(name) for name, _ in rows), FIRST_COLUMN_MAX) + COLUMN_SPACING
    text_width = max(width - first - 2, 10)
    lines = []
    for name, text in rows:
        wrapped = _wrap(text, text_width)
        if len(name) <= first - COLUMN_SPACING:
            lines.append(f"{INDENT}{name}{' ' * (first - len(name))}{wrapped[0]}")
        else:
            lines.append(f"{INDENT}{name}")
            lines.append(f"{' ' * (first + len(INDENT))}{wrapped[0]}")
        lines.extend(f"{' ' * (first + len(INDENT))}{line}" for line in wrapped[1:])
    return lines


def short_help(text: str, limit: int) -> str:
    """A command's summary as a group's command list shows it: its first sentence when that
    fits in `limit` characters, else the words that fit before "..."."""
    words = text.split()
    length = 0
    for i, word in enumerate(words):
        length += len(word) + (i > 0)
        if length > limit or (length == limit and i < len(words) - 1 and word[-1] != "."):
            break
        if word[-1] == ".":
            return " ".join(words[: i + 1])
    else:
        return " ".join(words)
    length += len("...")
    while i > 0:  # drop words from the end until the rest and "..." fit
        length -= len(words[i]) + 1
        if length <= limit:
            break
        i -= 1
    return " ".join(words[:i]) + "..."


def render(columns: int | None = None) -> str:
    """The root help as click writes it for a terminal of `columns` (default: this one)."""
    if columns is None:
        columns = shutil.get_terminal_size().columns
    width = max(min(columns, 80) - 2, 50)
    usage = "Usage: trgc "
    lines = _wrap("[OPTIONS] COMMAND [ARGS]...", width, "")
    out = [usage + lines[0], ""]
    out += _wrap(HELP, width, INDENT)
    out += ["", "Options:"]
    out += _definitions(ROOT_OPTIONS, width)
    out += ["", "Commands:"]
    limit = width - 6 - max(len(name) for name, _, _ in COMMANDS)
    rows = [(name, short_help(text, limit)) for name, _, text in COMMANDS]
    out += _definitions(rows, width)
    return "\n".join(out) + "\n"


def answers(argv: Sequence[str]) -> bool:
    """Whether this command line is one the quick path answers exactly as typer would."""
    if list(argv[1:]) not in (["--help"], ["-h"], ["--version"]):
        return False
    if os.path.basename(argv[0]) != "trgc" or "_TRGC_COMPLETE" in os.environ:
        return False
    main = sys.modules.get("__main__")
    return getattr(main, "__package__", None) in (None, "")


def run(argv: Sequence[str]) -> int:
    """Write the root help or the version; the exit status (141 when stdout went away)."""
    text = f"trgc {__version__}\n" if argv[1] == "--version" else render()
    if sys.stdout is None:
        sys.stdout = ClosedStdout()  # type: ignore[assignment]
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
        return EXIT_BROKEN_PIPE
    return 0
