"""The cyclic collector is paused while a compilation runs, and restored exactly after it
(`trgc.compiler.collector`): after success, after a refusal, when it was off to begin with,
when compilations nest and when they overlap in threads."""

from __future__ import annotations

import gc
import json
import threading
from pathlib import Path

import pytest

import trgc
from schema_helpers import BENCH_SUBSETS, CORPORA
from trgc.compiler import collector
from trgc.errors import TrgcError


@pytest.fixture
def seen(monkeypatch) -> list[bool]:
    """`gc.isenabled()` as each compilation's front end (parser, lowering, tool envelope) and
    its analysis found it: the front end runs before `compile_ast`, the analysis inside it."""
    import trgc.compiler.schema
    import trgc.compiler.toolcall
    import trgc.grammar.analysis
    import trgc.grammar.parser

    found: list[bool] = []

    def spy(module, name: str) -> None:
        stage = getattr(module, name)

        def run(*args, **kwargs):
            found.append(gc.isenabled())
            return stage(*args, **kwargs)

        monkeypatch.setattr(module, name, run)

    spy(trgc.grammar.analysis, "analyze")
    spy(trgc.grammar.parser, "parse_grammar")
    spy(trgc.compiler.schema, "lower_schema")
    spy(trgc.compiler.toolcall, "build_toolcall_grammar")
    return found


@pytest.fixture(autouse=True)
def collector_on():
    gc.enable()
    yield
    gc.enable()


@pytest.mark.parametrize(
    "compile_one",
    [
        lambda: trgc.compile_schema('{"type": "array", "items": {"type": "integer"}}'),
        lambda: trgc.compile_grammar('%trg 1\nstart ::= "a"+ ;\n'),
        lambda: trgc.compile_toolcall(
            [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
        ),
    ],
    ids=["schema", "grammar", "toolcall"],
)
def test_paused_during_each_entry_point_and_enabled_after(seen, compile_one):
    compile_one()
    assert seen == [False, False]
    assert gc.isenabled()


def test_enabled_again_after_a_refusal(seen):
    with pytest.raises(TrgcError):
        trgc.compile_grammar("%trg 1\nstart ::= missing ;\n")
    assert seen == [False, False]
    assert gc.isenabled()


def test_left_off_when_it_was_off(seen):
    gc.disable()
    trgc.compile_schema('{"type": "string"}')
    assert seen == [False, False]
    assert not gc.isenabled()


def test_nested_pauses_end_with_the_outermost():
    with collector.paused():
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_overlapping_threads_end_with_the_last():
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    states: dict[str, bool] = {}

    def first() -> None:
        with collector.paused():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second() -> None:
        first_in.wait(10)
        with collector.paused():
            second_in.set()
            first_out.wait(10)
            states["after the first ended"] = gc.isenabled()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert states == {"after the first ended": False}
    assert gc.isenabled()


ROOT = Path(__file__).resolve().parent.parent
BENCH = CORPORA / "jsonschemabench"
CONSTS = json.dumps(
    {
        "type": "object",
        "properties": {
            "kind": {"enum": ["a", 1, 2.0, [1.0, {"x": 3.0}], None]},
            "tag": {"oneOf": [{"const": f"x{i}"} for i in range(50)]},
        },
    }
)


@pytest.mark.parametrize(
    "compile_one",
    [
        *(
            pytest.param(lambda p=p: trgc.compile_schema(p.read_bytes()), id=p.name)
            for p in sorted((ROOT / "schemas").glob("*.json"))
        ),
        *(
            pytest.param(lambda p=p: trgc.compile_grammar(p.read_text()), id=p.name)
            for p in sorted((ROOT / "grammars").glob("*.trg"))
        ),
        pytest.param(lambda: trgc.compile_schema(CONSTS), id="enums-and-consts"),
    ],
)
def test_a_compilation_leaves_no_reference_cycles(compile_one):
    """Cycles made while the collector is paused outlive the compilation that made them (the
    oneOf of 20,000 consts held 10 MB more at its peak through one recursive closure), so a
    successful compilation makes none: the collector finds nothing after it."""
    assert _cycles_after(compile_one) == 0


def _cycles_after(run) -> int:
    """The objects the collector finds in cycles right after `run()`, run a second time with
    the collector off (the first run fills imports and caches)."""
    run()
    gc.collect()
    gc.disable()  # no collection between the compilation and the count
    run()
    return gc.collect()


@pytest.mark.parametrize(
    "refused",
    [
        '{"type": "object", "properties": {"a": {"type": "string", "readonly": true}}}',
        '{"type": "string", "maxLenght": 3}',
        '{"$ref": "#/$defs/missing"}',
        '{"type": "string", "pattern": "(?<=a)b"}',
    ],
    ids=["unknown keyword", "misspelt keyword", "missing ref", "unsupported pattern"],
)
def test_a_refusal_leaves_no_reference_cycles(refused):
    """A refused schema's error carries a traceback, and a frame that holds the error as a
    local closes a cycle through it that would keep the whole lowering alive."""

    def refuse() -> None:
        with pytest.raises(TrgcError):
            trgc.compile_schema(refused)

    assert _cycles_after(refuse) == 0


@pytest.mark.skipif(not BENCH.is_dir(), reason=f"the JSONSchemaBench corpus is missing: {BENCH}")
@pytest.mark.parametrize("subset", BENCH_SUBSETS)
def test_real_schemas_leave_no_reference_cycles(subset):
    """The same on fifteen real schemas of each subset, compiled or refused (every lowering
    path they take, every refusal code they meet): the collector finds nothing after each."""
    outcomes: list[str] = []
    for path in sorted((BENCH / subset).glob("*.json"))[:15]:

        def compile_one(raw: bytes = path.read_bytes()) -> None:
            try:
                trgc.compile_schema(raw, separators="compact")
                outcomes.append("compiled")
            except TrgcError as error:
                outcomes.append(error.code)

        garbage = _cycles_after(compile_one)
        assert garbage == 0, f"{path.name} ({outcomes[-1]}) left {garbage} objects in cycles"
    assert "compiled" in outcomes
