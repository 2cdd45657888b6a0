"""ConstrainedBatch (the bookkeeping behind the vLLM processor), request arguments and audit
records, driven with the batch changes vLLM reports: rows added, removed, moved, swapped,
preempted and resumed; output lists that grow behind the batch's back; placeholders."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import trgc  # noqa: E402
from engine_fixtures import STRUCTURAL, structural_table  # noqa: E402
from trgc.errors import TrgcError  # noqa: E402
from trgc.integrations.audit import check_audit, read_audit  # noqa: E402
from trgc.integrations.batch import ConstrainedBatch, publish_table  # noqa: E402
from trgc.integrations.constraints import ConstraintCache, artifact_path, parse_request  # noqa: E402

TOK = structural_table()
EOS = TOK.eos_ids[0]
ID = {piece: i for i, piece in enumerate(STRUCTURAL)}
LIST = '%trg 1\n%start s\ns ::= "[" ( "x" ( "," "x" )* )? "]" ;\n'
PAIR = '%trg 1\n%start s\ns ::= "{" "}" ;\n'
WIDTH = TOK.vocab_size + 45  # logits padded past the tokenizer


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TRGC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def make_batch(**kw) -> ConstrainedBatch:
    return ConstrainedBatch(TOK, max_rows=8, width=WIDTH, engine="test", **kw)


def fresh(grammar: str, tokens: list[int]) -> trgc.Matcher:
    m = trgc.Matcher(trgc.compile_grammar(grammar), TOK)
    for t in tokens:
        m.advance(t)
    return m


def logits(rows: int = 4) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(1).normal(size=(rows, WIDTH)).astype(np.float32))


def test_constrained_rows_masked_unconstrained_rows_untouched_padding_never_allowed():
    batch = make_batch()
    batch.add(0, {"grammar": LIST}, [])
    batch.add(2, None, [ID[b"x"]])  # unconstrained: not tracked at all
    assert sorted(batch.rows) == [0]
    before = logits()
    after = batch.apply(before.clone())
    assert torch.equal(after[[1, 2, 3]], before[[1, 2, 3]])
    allowed = np.zeros(WIDTH, dtype=bool)
    allowed[: TOK.vocab_size] = fresh(LIST, []).allowed_tokens()
    row = after[0].numpy()
    assert np.isneginf(row[~allowed]).all()
    assert (row[allowed] == before[0].numpy()[allowed]).all()
    assert np.isneginf(row[TOK.vocab_size :]).all()


def test_matchers_follow_the_live_output_lists_and_placeholders_wait():
    batch = make_batch()
    outputs: list[int] = []
    batch.add(1, {"grammar": LIST}, outputs)
    outputs += [ID[b"[x"], -1]  # the second token is still being copied
    batch.apply(logits())
    state = batch.rows[1]
    assert state.seen == 1 and state.matcher.config_id() == fresh(LIST, [ID[b"[x"]]).config_id()
    outputs[1] = ID[b","]
    outputs.append(ID[b"x]"])
    out = batch.apply(logits())
    assert state.seen == 3 and state.matcher.is_accepting()
    row = out[1].numpy()
    assert np.isfinite(row[EOS]) and np.isneginf(np.delete(row, EOS)).all()  # only EOS now


def test_move_swap_and_preempted_request_resumes_exactly(tmp_path):
    batch = make_batch()
    a = [ID[b"["]]
    b = [ID[b"{"]]
    batch.add(0, {"grammar": LIST}, a)
    batch.add(1, {"grammar": PAIR}, b)
    batch.move(0, 1, swap=True)
    assert batch.rows[1].outputs is a and batch.rows[0].outputs is b
    out = batch.apply(logits(2))
    assert np.isfinite(out[0].numpy()[ID[b"}"]]) and np.isneginf(out[0].numpy()[ID[b"x"]])
    assert np.isfinite(out[1].numpy()[ID[b"x"]]) and np.isneginf(out[1].numpy()[ID[b"}"]])
    batch.move(1, 3, swap=False)  # one-way: row 3 takes the list request, row 1 is empty
    assert sorted(batch.rows) == [0, 3] and batch.rows[3].outputs is a
    a += [ID[b"x"], ID[b","]]
    batch.apply(logits(4))
    # preempted: removed; resumed later in another row with the tokens produced so far
    batch.remove(3)
    a.append(ID[b"x"])
    batch.add(2, {"grammar": LIST}, a)
    resumed = batch.rows[2].matcher
    expected = fresh(LIST, a)
    assert resumed.config_id() == expected.config_id()
    assert (resumed.allowed_tokens() == expected.allowed_tokens()).all()


def test_audit_record_checks_and_tampering_is_found(tmp_path, cache_dir):
    publish_table(TOK, cache_dir / "tokenizers")
    path = tmp_path / "audit.jsonl"
    batch = make_batch()
    outputs: list[int] = []
    batch.add(0, {"grammar": LIST, "audit": str(path)}, outputs)
    for token in (ID[b"[x"], ID[b","], ID[b"x]"], EOS):
        batch.apply(logits(1))
        outputs.append(token)
    batch.remove(0)  # finished: the record is published with the last token
    record = read_audit(path)
    assert record.tokens == outputs
    assert record.final == {
        "final": True,
        "steps": 4,
        "reason": "finished",
        "accepting": True,
        "terminated": True,
    }
    assert check_audit(path, tokens=outputs).ok
    assert not check_audit(path, tokens=outputs[:-1]).ok

    lines = path.read_text().splitlines()
    step = json.loads(lines[3])
    step["token"] = ID[b"]"]  # "[x," then "]": not in the language
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("\n".join([*lines[:3], json.dumps(step), *lines[4:]]) + "\n")
    report = check_audit(tampered)
    assert not report.ok
    assert report.problems == [{"step": 2, "problem": f"token {ID[b']']} was not allowed"}]

    step = json.loads(lines[1])
    step["mask"] = "sha256:" + "0" * 64
    tampered.write_text("\n".join([lines[0], json.dumps(step), *lines[2:]]) + "\n")
    report = check_audit(tampered)
    assert not report.ok and report.problems[0] == {
        "step": 0,
        "problem": "the recorded mask differs",
    }

    for broken in (
        [lines[0], *lines[1:-1]],  # no final line
        [lines[0].replace('"engine"', '"engines"'), *lines[1:]],  # unknown header field
        [lines[0], lines[2], *lines[3:]],  # steps not consecutive
        ["not json", *lines[1:]],
    ):
        tampered.write_text("\n".join(broken) + "\n")
        with pytest.raises(TrgcError) as err:
            check_audit(tampered)
        assert err.value.code == "E_AUDIT_RECORD"


def test_a_disallowed_token_is_a_violation_in_the_record(tmp_path, cache_dir):
    publish_table(TOK, cache_dir / "tokenizers")
    path = tmp_path / "audit.jsonl"
    batch = make_batch()
    outputs = [ID[b"["], ID[b"{"]]  # "{" is not allowed after "["
    batch.add(0, {"grammar": LIST, "audit": str(path)}, outputs)
    assert batch.rows[0].violated and not batch.rows[0].masked
    before = logits(1)
    assert torch.equal(batch.apply(before.clone()), before)  # no longer masked, not repaired
    batch.remove(0)
    assert read_audit(path).final["reason"] == "violation"
    report = check_audit(path)
    assert not report.ok and report.problems == [
        {"step": 1, "problem": f"token {ID[b'{']} was not allowed"}
    ]


def test_request_arguments_are_validated():
    assert parse_request(None) is None
    spec = parse_request({"schema": {"type": "object", "properties": {"b": {}, "a": {}}}})
    assert spec.kind == "schema" and spec.source.index('"b"') < spec.source.index('"a"')
    for bad in (
        "schema",
        {},
        {"schema": {}, "grammar": LIST},
        {"grammer": LIST},
        {"grammar": ""},
        {"schema": "{not json"},
        {"schema": [1]},
        {"grammar": LIST, "audit": 3},
        {"artifact": "sha256:abc"},
    ):
        with pytest.raises(TrgcError) as err:
            ConstraintCache().artifact(parse_request(bad))
        assert err.value.code == "E_VLLM_REQUEST", bad


def test_constraints_are_compiled_once_and_found_by_identity():
    cache = ConstraintCache()
    first = cache.artifact(parse_request({"grammar": LIST}))
    assert cache.artifact(parse_request({"grammar": LIST})) is first
    assert artifact_path(first.sha256).is_file()  # published for audits and by-identity use
    again = ConstraintCache().artifact(parse_request({"artifact": first.sha256}))
    assert again.sha256 == first.sha256
    by_path = ConstraintCache().artifact(
        parse_request({"artifact": str(artifact_path(first.sha256))})
    )
    assert by_path.sha256 == first.sha256
    with pytest.raises(TrgcError) as err:
        cache.artifact(parse_request({"grammar": "%trg 1\n%start s\ns ::= t ;\n"}))
    assert err.value.code != "E_VLLM_REQUEST"  # the compiler's own code reaches the caller
    with pytest.raises(TrgcError) as err:
        ConstraintCache().artifact(parse_request({"artifact": "sha256:" + "1" * 64}))
    assert err.value.code == "E_VLLM_REQUEST"


def test_logits_narrower_than_the_table_are_refused():
    with pytest.raises(TrgcError) as err:
        ConstrainedBatch(TOK, max_rows=2, width=TOK.vocab_size - 1, engine="test")
    assert err.value.code == "E_MODEL_VOCAB"
