"""`trgc calc`, `trgc tool run` and `trgc evidence check`: the deterministic local tools."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from trgc.cli.common import print_json, reporting_errors, stdout_console
from trgc.errors import exit_status


def _read_stdin(limit: int) -> bytes:
    """At most `limit + 1` bytes of stdin: enough to detect an over-long input without holding it."""
    return sys.stdin.buffer.read(limit + 1)


@reporting_errors
def calc_command(
    expression: Annotated[
        str,
        typer.Argument(
            metavar="EXPR",
            help="A tinycalc-1 expression, e.g. '1 / 3' or '(2 + 3) * -4.5'. Use '-' to read it "
            "from stdin; put '--' before an expression that starts with '-'.",
        ),
    ],
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the tinycalc-1 result record on stdout (also for errors, with "
            'status "error"; the exit status still reports the failure).',
        ),
    ] = False,
) -> None:
    """Evaluate a tinycalc-1 expression: decimal fixed point at scale 18 in checked signed
    128-bit integers, half-even rounding, no binary floating point (docs/tinycalc.md).

    Prints the canonical value (no trailing zeros). Exit 2 on a syntax, division-by-zero or
    overflow error, 3 when a tinycalc-1 limit (4,096 bytes, 10,000 operations, 256 nested
    parentheses) is exceeded."""
    from trgc.tools import tinycalc

    text: str | bytes = expression
    if expression == "-":
        text = _read_stdin(tinycalc.DEFAULT_CALC_LIMITS.input_bytes)
    if as_json:
        record = tinycalc.calc_record(text)
        print_json(record)
        if record["status"] != "ok":
            raise typer.Exit(exit_status(record["error"]["code"]))
        return
    result = tinycalc.evaluate(text)
    stdout_console().print(result.value, markup=False)


def register(app: typer.Typer) -> None:
    app.command("calc")(calc_command)
