"""The typer application behind `trgc`: the root group, built lazily from `trgc.cli.catalog`.

Command modules import library code inside their functions so that `trgc --help` starts fast
and never loads numba. The root group (`LazyGroup`) goes further: it lists the commands from
the table `COMMANDS` and imports a command's module, and lets typer build its options, only
when that command runs or its own help is asked for, so `trgc --help` and `trgc compile` do
not pay for the other forty commands. `tests/test_cli_lazy.py` checks the table, the order
and every help page against the eagerly built application.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from importlib import import_module
from typing import Any

import typer
import typer.main
from typer._click import Context, HelpFormatter
from typer._click.utils import make_default_short_help

from trgc import __version__
from trgc.cli.catalog import COMMANDS, HELP, ROOT_OPTIONS, SETTINGS
from trgc.cli.coercion import PlainContext, install
from trgc.cli.funnel import TrgcGroup


class LazyGroup(TrgcGroup):
    """The root group: commands are looked up in `COMMANDS` and built on first use.

    `commands` (click's mapping) builds them all, for whatever walks the whole tree (man
    pages, shell completion, suggestions for a mistyped command)."""

    context_class = PlainContext

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._built: dict[str, Any] = {}
        self._loaded: set[str] = set()
        super().__init__(*args, **kwargs)

    @property  # type: ignore[override]
    def commands(self) -> MutableMapping[str, Any]:
        for _, module, _ in COMMANDS:
            self._load(module)
        return {name: self._built[name] for name, _, _ in COMMANDS}

    @commands.setter
    def commands(self, value: MutableMapping[str, Any]) -> None:
        self._built.update(value)

    def _load(self, module: str) -> None:
        if module in self._loaded:
            return
        self._loaded.add(module)
        holder = typer.Typer(**SETTINGS)
        import_module(f"trgc.cli.{module}").register(holder)
        built = typer.main.get_group(holder).commands
        for command in built.values():
            install(command)
        self._built.update(built)

    def list_commands(self, ctx: Context) -> list[str]:
        return [name for name, _, _ in COMMANDS]

    def get_command(self, ctx: Context, cmd_name: str) -> Any:
        for name, module, _ in COMMANDS:
            if name == cmd_name:
                self._load(module)
                break
        return self._built.get(cmd_name)

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        """The command list, as click writes it, from `COMMANDS` (no module imported)."""
        limit = formatter.width - 6 - max(len(name) for name, _, _ in COMMANDS)
        rows = [(name, make_default_short_help(text, limit)) for name, _, text in COMMANDS]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _root(cls: type) -> typer.Typer:
    return typer.Typer(name="trgc", help=HELP, cls=cls, no_args_is_help=True, **SETTINGS)


app = _root(LazyGroup)


_OPTION_HELP = dict(ROOT_OPTIONS)


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
        False, "--version", callback=_version, is_eager=True, help=_OPTION_HELP["--version"]
    ),
    debug: bool = typer.Option(
        False,
        "--debug",
        callback=_debug,
        is_eager=True,
        help=_OPTION_HELP["--debug"],
    ),
) -> None:
    """trgc: grammar-constrained decoding toolchain."""
