"""The `trgc` command's entry point: `main`, and the typer application as `app`.

`trgc --help`, `trgc -h` and `trgc --version` are answered by `trgc.cli.quickhelp` without
importing typer (most of their cost); every other command line goes to the typer
application in `trgc.cli.root`, which this module imports only when it is needed (and when
`app`, `root` or `LazyGroup` is asked for, as the tests do). The command tables live in
`trgc.cli.catalog`.
"""

from __future__ import annotations

import sys
from importlib import import_module
from typing import Any

from trgc.cli.catalog import COMMAND_MODULES, COMMANDS, HELP, ROOT_OPTIONS, SETTINGS

__all__ = ["COMMAND_MODULES", "COMMANDS", "HELP", "ROOT_OPTIONS", "SETTINGS", "main"]

_FROM_ROOT = ("app", "root", "LazyGroup")


def __getattr__(name: str) -> Any:
    if name in _FROM_ROOT:
        return getattr(import_module("trgc.cli.root"), name)
    raise AttributeError(f"module 'trgc.cli.app' has no attribute {name!r}")


def main() -> None:
    """Console-script entry point."""
    from trgc.cli import quickhelp

    if quickhelp.answers(sys.argv):
        sys.exit(quickhelp.run(sys.argv))
    import_module("trgc.cli.root").app()
