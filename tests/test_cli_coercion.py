"""Parameter values converted without pydantic (`trgc.cli.coercion`) come out exactly as typer's
own conversion makes them: same value and type for every accepted form, same error message for
every refused one, on every parameter of every command; and a whole `trgc compile` never
imports pydantic."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from typer._click import Context
from typer._click.exceptions import BadParameter
from typer._coercion import build_runtime_param
from typer.core import _TyperParameter
from typer.testing import CliRunner

from trgc.cli.app import app
from trgc.cli.coercion import PlainContext, PlainRuntimeParam

ROOT = Path(__file__).resolve().parents[1]

# Plain forms the fast path takes, forms it hands on, and values typer refuses.
SAMPLES = [
    "0", "7", "-3", "12345678901234567890", "007", " 7", "1_000", "+5", "1.5", "-0.25", "2.",
    "1e3", "inf", "nan", "abc", "", "true", "no", "schemas/person.json", "-", "a\0b", 3, 2.5,
    True, Path("x.json"),
]  # fmt: skip


def _commands(command, ctx):
    yield command, ctx
    for sub in (getattr(command, "commands", None) or {}).values():
        yield from _commands(sub, Context(sub, parent=ctx, info_name=sub.name))


def _outcome(runtime, value, param, ctx):
    try:
        result = runtime.coerce(value, param=param, ctx=ctx)
    except BadParameter as exc:
        return ("error", exc.format_message())
    items = result if isinstance(result, list) else [result]
    return ("value", repr(result), [type(item) for item in items])


def _parameters():
    root = typer.main.get_command(app)
    found = []
    for command, ctx in _commands(root, PlainContext(root, info_name="trgc")):
        if not isinstance(ctx, PlainContext):
            ctx = PlainContext(command, parent=ctx.parent, info_name=command.name)
        for param in command.get_params(ctx):
            if isinstance(param, _TyperParameter):
                found.append((command, ctx, param))
    return found


def test_every_parameter_of_every_command_converts_as_typer_does():
    parameters = _parameters()
    fast = [p for _, _, p in parameters if isinstance(p._runtime_param, PlainRuntimeParam)]
    # every parameter trgc declares is a plain str/int/float/bool/Path (or a list of them)
    assert len(fast) == len(parameters) > 150
    compared = 0
    for _, ctx, param in parameters:
        stock = build_runtime_param(param.type_descriptor)
        values = SAMPLES
        if param.multiple or param.nargs == -1:
            values = [(v,) for v in SAMPLES if not isinstance(v, bool)] + [("1", "x"), ()]
        for value in values:
            expected = _outcome(stock, value, param, ctx)
            assert _outcome(param._runtime_param, value, param, ctx) == expected, (
                param.name,
                param.type_descriptor.annotation,
                value,
            )
            compared += 1
    assert compared > 4000


def test_bad_values_keep_typers_messages_through_the_cli():
    runner = CliRunner()
    result = runner.invoke(app, ["generate", "x.trga", "--max-tokens", "many"])
    assert result.exit_code == 2
    assert "Invalid value for '--max-tokens'" in result.output
    assert "valid integer" in result.output


def test_compile_never_imports_pydantic(tmp_path):
    probe = (
        "import sys\n"
        "from trgc.cli.app import main\n"
        f"sys.argv = ['trgc', 'compile', {str(ROOT / 'schemas/person.json')!r}, '-o', "
        f"{str(tmp_path / 'p.trga')!r}]\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic'))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "p.trga").stat().st_size > 0


@pytest.mark.parametrize("value", ["4", "0"])
def test_int_with_min_hands_out_of_range_to_typer(value):
    for _, ctx, param in _parameters():
        info = param.type_descriptor.parameter_info
        if param.type_descriptor.annotation is int and info.min is not None:
            runtime = param._runtime_param
            number = int(value) + info.min - 1
            outcome = _outcome(runtime, str(number), param, ctx)
            stock = _outcome(build_runtime_param(param.type_descriptor), str(number), param, ctx)
            assert outcome == stock
            assert (outcome[0] == "error") == (number < info.min)
