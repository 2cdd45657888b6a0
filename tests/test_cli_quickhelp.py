"""`trgc --help`, `-h` and `--version` written without typer (`trgc.cli.quickhelp`) are byte for
byte what the typer application writes, at every width, and only those command lines of the
`trgc` script take that path."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import typer.main
from typer.testing import CliRunner

from trgc.cli import quickhelp
from trgc.cli.app import app

PROBE = (
    "import sys\n"
    "sys.argv = {argv!r}\n"
    "from trgc.cli.app import main\n"
    "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\n"
    "sys.stderr.write(repr((code, 'typer' in sys.modules)))\n"
)


def _run(argv: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    code = PROBE.format(argv=argv)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


def _typer_help(columns: int, monkeypatch) -> str:
    """The root help click renders for a terminal of `columns` (CliRunner forces 80)."""
    monkeypatch.setenv("COLUMNS", str(columns))
    command = typer.main.get_command(app)
    with command.make_context("trgc", [], resilient_parsing=True) as ctx:
        return command.get_help(ctx) + "\n"


@pytest.mark.parametrize("columns", [20, 50, 51, 52, 60, 72, 79, 80, 81, 200])
def test_root_help_is_typers_at_every_width(columns, monkeypatch):
    assert quickhelp.render(columns) == _typer_help(columns, monkeypatch)


def test_version_is_typers():
    expected = CliRunner().invoke(app, ["--version"])
    assert (expected.exit_code, expected.output) == (0, f"trgc {quickhelp.__version__}\n")


@pytest.mark.parametrize(
    "argv", [["trgc", "--help"], ["/usr/bin/trgc", "-h"], ["trgc", "--version"]]
)
def test_the_script_answers_without_importing_typer(argv):
    env = {**os.environ, "COLUMNS": "72"}
    env.pop("_TRGC_COMPLETE", None)
    done = _run(argv, env)
    assert done.stderr == repr((0, False))
    # the same command line through the typer application, in a process of its own
    code = f"import sys; sys.argv = {['trgc', argv[1]]!r}; from trgc.cli.root import app; app()"
    typer_run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env
    )
    assert (typer_run.returncode, typer_run.stdout) == (0, done.stdout)
    if argv[1] != "--version":
        assert done.stdout == quickhelp.render(72)


@pytest.mark.parametrize(
    "argv",
    [
        ["trgc"],
        ["trgc", "--help", "compile"],
        ["trgc", "compile", "--help"],
        ["trgc", "--debug", "--help"],
        ["trgc", "--HELP"],
        ["python", "--help"],
    ],
)
def test_other_command_lines_go_to_typer(argv):
    assert not quickhelp.answers(argv)


def test_shell_completion_goes_to_typer():
    done = _run(["trgc", "--help"], {**os.environ, "_TRGC_COMPLETE": "bash_source"})
    assert done.stderr.endswith(", True)")


def test_closed_stdout_ends_like_a_broken_pipe():
    code = (
        "import sys\n"
        "sys.argv = ['trgc', '--help']\n"
        "sys.stdout = None\n"
        "from trgc.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    sys.stderr.write(repr(exc.code))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stderr == "141"


def test_short_help_cuts_like_click():
    from typer._click.utils import make_default_short_help

    texts = [
        "One. Two.",
        "A sentence that runs on and on without ever stopping at all for breath",
        "Exactly ten",
        "word " * 30,
        "Short.",
        "Averyveryverylongwordthatdoesnotfit and more",
        "",
    ]
    for text in texts:
        for limit in range(1, 60):
            assert quickhelp.short_help(text, limit) == make_default_short_help(text, limit), (
                text,
                limit,
            )
