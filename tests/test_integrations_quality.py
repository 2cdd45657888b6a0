"""The quality experiment with a scripted stand-in model over a byte-level table: arms, sharing,
scoring (syntax, schema, profile, gold), the intervention metric, report and plot, task-file
errors. The scripted model prefers, at every step, the next byte of a fixed reply."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from trgc.decode.sampler import SamplerSettings
from trgc.errors import TrgcError
from trgc.evaluation.quality import run_experiment
from trgc.evaluation.quality_run import ARMS, parse_arms
from trgc.evaluation.quality_tasks import load_tasks
from trgc.tokenizer.table import KIND_NORMAL, KIND_SPECIAL, make_table

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "benchmarks" / "quality" / "schemas"
TINYCALC = ROOT / "grammars" / "tinycalc.trg"

PIECES: list[bytes | None] = [bytes([b]) for b in range(256)] + [None]
TABLE = make_table(
    PIECES,
    np.array([KIND_NORMAL] * 256 + [KIND_SPECIAL], dtype=np.uint8),
    special_tokens={"<eos>": 256},
    added_tokens={},
    eos_ids=(256,),
    metadata={"family": "synthetic"},
)

# JSON written as json.dumps and chat models write it: ", " and ": " (the schemas' default
# whitespace, pretty)
REPLIES = {
    "fenced person": '```json\n{"name": "Ada Lovelace", "born": 1815, "occupation": "writer"}\n```',
    "clean person": '{"name": "Ada Lovelace", "born": 1815, "occupation": "writer"}',
    "answer": '{"answer": 400}',
    "expression": "17 * 23",
    "capital": "Paris is the capital of France.",
}


class Scripted:
    """A stand-in model: prompt text is the key of its reply; logit 8 for the reply's next
    byte (then EOS), 0 for everything else."""

    name = "scripted"
    table = TABLE

    def __init__(self) -> None:
        self.decodes = 0

    def prompt_ids(self, prompt: str) -> list[int]:
        return list(prompt.encode())

    def logits(self, prompt_ids: list[int]):
        reply = REPLIES[bytes(prompt_ids).decode()].encode()
        self.decodes += 1

        def source(step, tokens):
            out = np.zeros(TABLE.vocab_size)
            done = bytes(tokens)
            if reply.startswith(done) and len(done) < len(reply):
                out[reply[len(done)]] = 8.0
            else:
                out[256] = 8.0
            return out

        return source


def _tasks(tmp_path: Path) -> Path:
    lines = [
        {
            "id": "fenced",
            "kind": "extraction",
            "prompt": "fenced person",
            "max_tokens": 160,
            "schema": str(SCHEMAS / "person.json"),
            "gold": {"name": "Ada Lovelace", "born": 1815},
        },
        {
            "id": "clean",
            "kind": "extraction",
            "prompt": "clean person",
            "max_tokens": 80,
            "schema": str(SCHEMAS / "person.json"),
            "gold": {"name": "ada lovelace ", "born": 1815},
        },
        {
            "id": "pens",
            "kind": "arithmetic",
            "prompt": "answer",
            "max_tokens": 20,
            "schema": str(SCHEMAS / "answer.json"),
            "tool_prompt": "expression",
            "tool_grammar": str(TINYCALC),
            "gold": "391",
        },
        {
            "id": "capital",
            "kind": "plain",
            "prompt": "capital",
            "max_tokens": 40,
            "gold": {"contains_any": ["paris"]},
        },
    ]
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("quality")
    model = Scripted()
    doc = run_experiment(
        _tasks(tmp),
        list(ARMS),
        model,
        out=tmp / "q.md",
        settings=SamplerSettings(temperature=0.0),
        plot=False,  # the plot (matplotlib) has its own test
        runs_path=tmp / "runs.jsonl",
    )
    return doc, tmp, model


def _run(doc, task, arm):
    return next(r for r in doc["runs"] if r["task"] == task and r["arm"] == arm)


def test_unconstrained_takes_the_models_choices(experiment):
    doc, _, _ = experiment
    fenced = _run(doc, "fenced", "unconstrained")
    assert (fenced["syntax"], fenced["schema"], fenced["profile"], fenced["correct"]) == (
        False,
        False,
        False,
        False,
    )
    assert fenced["intervention"] == 0.0 and fenced["completed"]
    clean = _run(doc, "clean", "unconstrained")
    assert (clean["syntax"], clean["schema"], clean["profile"], clean["correct"]) == (
        True,
        True,
        True,
        True,
    )
    assert clean["fields"] == 1.0


def test_constraint_forces_validity_and_costs_intervention(experiment):
    doc, _, _ = experiment
    fenced = _run(doc, "fenced", "constrained")
    # the fence is masked away; the stand-in then has no preference left and argmax takes the
    # smallest allowed ids: complete, valid, and wrong
    assert fenced["completed"] and fenced["syntax"] and fenced["schema"] and fenced["profile"]
    assert not fenced["correct"] and fenced["intervention"] > 0
    clean = _run(doc, "clean", "constrained")
    assert clean["correct"] and clean["intervention"] == 0.0
    answer = _run(doc, "pens", "constrained")
    assert answer["profile"] and not answer["correct"]  # valid, and wrong: membership, not truth


def test_tool_arm_delegates_arithmetic_to_tinycalc(experiment):
    doc, _, _ = experiment
    tool = _run(doc, "pens", "tool")
    assert tool["constraint"] == "tinycalc" and tool["syntax"] and tool["profile"]
    assert tool["correct"] and tool["schema"] is None
    assert doc["arms"]["tool"]["accuracy"] > doc["arms"]["constrained"]["accuracy"]


def test_identical_runs_are_decoded_once_and_marked_shared(experiment):
    doc, _, model = experiment
    plain = [_run(doc, "capital", arm) for arm in ARMS]
    assert [r["shared"] for r in plain] == [False, True, True]
    assert all(r["correct"] and r["constraint"] == "none" for r in plain)
    assert _run(doc, "clean", "tool")["shared"]
    assert model.decodes == doc["facts"]["decodes"] == 4 + 3 + 1
    assert doc["facts"]["runs"] == 12


def test_report_and_runs_files(experiment):
    doc, tmp, _ = experiment
    text = (tmp / "q.md").read_text(encoding="utf-8")
    assert "135-million" in text and "membership" in text
    assert "| constrained |" in text and "q.png" not in text
    assert not (tmp / "q.png").exists()
    for reply in REPLIES.values():
        assert reply not in text  # no output text in the report
    runs = [json.loads(x) for x in (tmp / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == 12 and runs[0]["output"] == REPLIES["fenced person"]
    arms = doc["arms"]
    assert arms["constrained"]["syntax_valid_rate"] == 1.0
    assert arms["unconstrained"]["syntax_valid_rate"] == pytest.approx(2 / 3)
    assert arms["unconstrained"]["intervention"] == 0.0


def test_parse_arms():
    assert parse_arms("all") == list(ARMS)
    assert parse_arms("tool,unconstrained") == ["unconstrained", "tool"]
    with pytest.raises(TrgcError) as info:
        parse_arms("bogus")
    assert info.value.code == "E_USAGE"


def test_committed_task_set_loads_and_is_small():
    tasks = load_tasks(ROOT / "benchmarks" / "quality" / "tasks.jsonl")
    assert 12 <= len(tasks) <= 20
    assert {t.kind for t in tasks} == {"extraction", "toolargs", "arithmetic", "plain"}
    assert all(t.max_tokens <= 64 for t in tasks)


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("{not json", "not JSON"),
        ('{"id":"a","kind":"poem","prompt":"p","max_tokens":5,"gold":{}}', "kind must be"),
        (
            '{"id":"a","kind":"plain","prompt":"p","max_tokens":5,"gold":{"contains_any":["x"]},"x":1}',
            "unknown field",
        ),
        ('{"id":"a","kind":"plain","prompt":"p","max_tokens":5}', "missing field"),
        (
            '{"id":"a","kind":"plain","prompt":"p","max_tokens":0,"gold":{"contains_any":["x"]}}',
            "max_tokens",
        ),
        (
            '{"id":"a","kind":"plain","prompt":"p","max_tokens":5,"gold":{"contains_any":[]}}',
            "contains_any",
        ),
        (
            '{"id":"a","kind":"extraction","prompt":"p","max_tokens":5,"schema":"nope.json","gold":{"a":1}}',
            "cannot read",
        ),
    ],
)
def test_bad_task_files_are_refused(tmp_path, line, needle):
    path = tmp_path / "t.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(TrgcError) as info:
        load_tasks(path)
    assert info.value.code == "E_QUALITY_TASKS" and needle in str(info.value)


def test_duplicate_ids_and_gold_outside_the_schema_are_refused(tmp_path):
    plain = '{"id":"a","kind":"plain","prompt":"p","max_tokens":5,"gold":{"contains_any":["x"]}}'
    path = tmp_path / "t.jsonl"
    path.write_text(plain + "\n" + plain + "\n", encoding="utf-8")
    with pytest.raises(TrgcError, match="duplicate task id"):
        load_tasks(path)
    line = {
        "id": "b",
        "kind": "extraction",
        "prompt": "p",
        "max_tokens": 5,
        "schema": str(SCHEMAS / "person.json"),
        "gold": {"age": 3},
    }
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(TrgcError, match="gold names members"):
        load_tasks(path)


def test_tool_arm_grammar_is_one_line_tinycalc():
    import trgc
    from trgc.tools import tinycalc

    art = trgc.compile_grammar((ROOT / "benchmarks/quality/grammars/tinycalc-line.trg").read_text())
    for text in ["1234 + 5678", "17*23\n", "-(12.5 / 4) ^ 2", "((1))", "2 ^ -64"]:
        assert trgc.check(art, text.encode()).accepted
        tinycalc.parse(text)
    for text in ["1 +\n2", "1\n\n", "1\n+ 2", "1 + ", "2^3^2", "1.0000000000000000001", ""]:
        assert not trgc.check(art, text.encode()).accepted


def test_report_plot(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib (in the hf extra) is not installed")
    run_experiment(
        _tasks(tmp_path),
        ["unconstrained", "constrained"],
        Scripted(),
        out=tmp_path / "q.md",
        settings=SamplerSettings(temperature=0.0),
    )
    assert "![intervention vs accuracy](q.png)" in (tmp_path / "q.md").read_text(encoding="utf-8")
    assert (tmp_path / "q.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
