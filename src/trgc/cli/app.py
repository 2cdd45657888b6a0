"""The `trgc` command: a typer application assembled from one module per command group.

Command modules import library code inside their functions so that `trgc --help` starts fast
and never loads numba.
"""

from __future__ import annotations

import os
from importlib import import_module

import typer

from trgc import __version__
from trgc.cli.funnel import TrgcGroup

app = typer.Typer(
    name="trgc",
    help="Grammar-constrained decoding toolchain: compile grammars and JSON Schemas into "
    "canonical SHA-256-identified artifacts, build verified token-byte tables, precompute "
    "token masks, replay decoding traces bit for bit.",
    cls=TrgcGroup,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# Each module defines `register(app)`; order here is the order of `trgc --help`.
COMMAND_MODULES: tuple[str, ...] = (
    "trgc.cli.tokenizer_cmds",
    "trgc.cli.compile_cmds",
    "trgc.cli.schema_cmds",
    "trgc.cli.tools_cmds",
    "trgc.cli.release_cmds",
    "trgc.cli.masks_cmds",
    "trgc.cli.cache_cmds",
    "trgc.cli.decode_cmds",
    "trgc.cli.audit_cmds",
    "trgc.cli.toolcall_cmds",
    "trgc.cli.quality_cmds",
    "trgc.cli.man_cmds",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"trgc {__version__}")
        raise typer.Exit(0)


def _debug(value: bool) -> None:
    if value:
        os.environ["TRGC_DEBUG"] = "1"


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    debug: bool = typer.Option(
        False,
        "--debug",
        callback=_debug,
        is_eager=True,
        help="Also print the traceback of an internal error (E_INTERNAL); same as TRGC_DEBUG=1.",
    ),
) -> None:
    """trgc: grammar-constrained decoding toolchain."""


for _name in COMMAND_MODULES:
    import_module(_name).register(app)


def main() -> None:
    """Console-script entry point."""
    app()
