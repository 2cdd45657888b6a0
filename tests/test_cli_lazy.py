"""The lazy root group: `trgc --help` lists every command without importing the command
modules, and nothing a user can see differs from the application built eagerly."""

from __future__ import annotations

import subprocess
import sys
from importlib import import_module

import pytest
import typer
import typer.main
from typer.testing import CliRunner

from trgc.cli.app import COMMAND_MODULES, COMMANDS, HELP, SETTINGS, app, root
from trgc.cli.funnel import TrgcGroup


def _eager() -> typer.Typer:
    eager = typer.Typer(name="trgc", help=HELP, cls=TrgcGroup, no_args_is_help=True, **SETTINGS)
    eager.callback()(root)
    for name in COMMAND_MODULES:
        import_module(name).register(eager)
    return eager


def _paths(group, prefix=()):
    for name, command in group.commands.items():
        yield (*prefix, name)
        if hasattr(command, "commands"):
            yield from _paths(command, (*prefix, name))


def test_table_lists_every_command_in_typers_order():
    eager = typer.main.get_command(_eager())
    assert [name for name, _, _ in COMMANDS] == list(eager.commands)
    lazy = typer.main.get_command(app)
    assert list(lazy.commands) == list(eager.commands)
    for name, module, summary in COMMANDS:
        command = eager.commands[name]
        assert f"trgc.cli.{module}" in COMMAND_MODULES
        assert not command.hidden and not command.short_help and not command.deprecated
        first = " ".join(command.help.split("\n\n")[0].split())
        assert first.startswith(summary.removesuffix(" ...")), name
        assert summary.endswith(".") or summary.endswith(" ...") and len(summary) > 100


@pytest.mark.parametrize("columns", ["50", "80", "200"])
def test_every_help_page_is_the_eager_one(columns):
    runner = CliRunner()
    env = {"COLUMNS": columns}
    eager = _eager()
    paths = [()] + sorted(_paths(typer.main.get_command(eager)))
    for path in paths:
        expected = runner.invoke(eager, [*path, "--help"], env=env)
        got = runner.invoke(app, [*path, "--help"], env=env)
        assert (got.exit_code, got.output) == (expected.exit_code, expected.output), path


def test_a_mistyped_command_is_reported_as_before():
    runner = CliRunner()
    expected = runner.invoke(_eager(), ["compil", "x"])
    got = runner.invoke(app, ["compil", "x"])
    assert (got.exit_code, got.output) == (expected.exit_code, expected.output)


def test_help_imports_no_command_module():
    code = (
        "import sys\n"
        "from trgc.cli.app import main\n"
        "sys.argv = ['trgc', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "loaded = sorted(m for m in sys.modules if m.endswith('_cmds'))\n"
        "sys.stderr.write(repr(loaded))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stderr == "[]"
    assert "compile " in run.stdout and "trace " in run.stdout


def test_running_a_command_imports_only_its_module():
    code = (
        "import sys\n"
        "from trgc.cli.app import main\n"
        "sys.argv = ['trgc', 'keywords', '--json']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "loaded = sorted(m for m in sys.modules if m.endswith('_cmds'))\n"
        "sys.stderr.write(repr(loaded))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stderr == "['trgc.cli.schema_cmds']"
