"""Replay against the fake constraint: identical runs, cancellation, stop reasons, tampering."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest

from decode_fakes import EOS_ID, FakeConstraint, FakeVocab
from trgc.decode.generate import Identity, decode
from trgc.decode.logits import NpyLogits, RandomLogits, parse_logits_spec
from trgc.decode.replay import replay
from trgc.decode.sampler import SamplerSettings
from trgc.decode.trace import read_trace
from trgc.errors import TrgcError

VOCAB = FakeVocab()
IDENTITY = Identity(FakeConstraint.sha256, FakeVocab.sha256, "test-compiler", "0.1.0")


def run(
    tmp_path: Path,
    source=None,
    *,
    seed=5,
    max_tokens=40,
    constraint=None,
    name="run.jsonl",
    **settings,
):
    path = tmp_path / name
    result = decode(
        constraint or FakeConstraint(),
        VOCAB,
        source or RandomLogits(seed, VOCAB.vocab_size),
        settings=SamplerSettings(**settings),
        seed=seed,
        max_tokens=max_tokens,
        trace_path=path,
        identity=IDENTITY,
    )
    return path, result


def do_replay(path: Path, constraint=None):
    return replay(
        read_trace(path),
        constraint or FakeConstraint(),
        VOCAB,
        artifact_sha256=IDENTITY.artifact_sha256,
        tokenizer_sha256=IDENTITY.tokenizer_sha256,
        compiler=IDENTITY.compiler,
    )


def rewrite(path: Path, index: int, **changes) -> None:
    lines = path.read_text().splitlines()
    record = json.loads(lines[index])
    record.update(changes)
    lines[index] = json.dumps(record, sort_keys=True, separators=(",", ":"))
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"temperature": 0.0},
        {"temperature": 0.7, "top_p": 0.9},
        {
            "top_k": 2,
            "min_p": 0.05,
            "repetition_penalty": 1.3,
            "frequency_penalty": 0.2,
            "presence_penalty": 0.1,
        },
        {"temperature": 2.0, "banned_ids": [8]},
    ],
)
def test_replay_identical_for_many_seeds(tmp_path, settings):
    for seed in range(8):
        path, result = run(tmp_path, seed=seed, **settings)
        report = do_replay(path)
        assert report.identical, report.divergence
        assert report.steps == result.end["steps"]
        assert result.end["completed"] == (result.stop in ("eos", "eos_forced"))


def test_output_is_exactly_the_chosen_tokens_never_repaired(tmp_path):
    stops = set()
    for seed in range(10):
        _, result = run(tmp_path, seed=seed, max_tokens=3)
        stops.add(result.stop)
        assert result.output == b"".join(VOCAB.token_bytes(t) for t in result.tokens)
        assert result.output.startswith(b"[")
        if result.stop == "max_tokens":
            assert not result.completed and result.end["steps"] == 3
    assert "max_tokens" in stops


def test_cancellation_record(tmp_path):
    base = RandomLogits(11, VOCAB.vocab_size)

    def source(step, tokens):
        if step == 3:
            raise KeyboardInterrupt
        return base(step, tokens)

    constraint = FakeConstraint()
    path, result = run(tmp_path, source, seed=11, constraint=constraint)
    end = result.end
    assert end["stop"] == "cancelled" and end["completed"] is False and end["failure_code"] is None
    assert end["steps"] == 3 and bytes.fromhex(end["partial_hex"]) == result.output
    assert end["config"] == constraint.config_id() and end["accepting"] is False
    assert not result.output.endswith(b"]")  # nothing closed
    assert do_replay(path).identical


def test_cancellation_by_poll(tmp_path):
    calls = []

    def cancelled():
        calls.append(1)
        return len(calls) > 2

    path = tmp_path / "poll.jsonl"
    result = decode(
        FakeConstraint(),
        VOCAB,
        RandomLogits(1, VOCAB.vocab_size),
        settings=SamplerSettings(),
        seed=1,
        max_tokens=40,
        trace_path=path,
        identity=IDENTITY,
        cancelled=cancelled,
    )
    assert result.stop == "cancelled" and result.end["steps"] == 2
    assert do_replay(path).identical


def test_stop_reason_constraint_empty_set(tmp_path):
    # After `]` the dead-end variant allows nothing: E_CONSTRAINT_EMPTY_SET, never a retry.
    logits = np.zeros((10, VOCAB.vocab_size))
    logits[:, 0] = 5.0  # [
    logits[:, 3] = 5.0  # 1
    logits[1:, 1] = 9.0  # ]
    np.save(tmp_path / "l.npy", logits)
    path, result = run(
        tmp_path,
        NpyLogits(tmp_path / "l.npy", VOCAB.vocab_size),
        constraint=FakeConstraint(eos_when_accepting=False),
        temperature=0.0,
    )
    assert result.output == b"[1]"
    assert (
        result.stop == "constraint_empty_set"
        and result.end["failure_code"] == "E_CONSTRAINT_EMPTY_SET"
    )
    assert result.completed is False and result.end["accepting"] is True
    assert do_replay(path, FakeConstraint(eos_when_accepting=False)).identical


def test_stop_reason_positive_infinity_and_nan_counter(tmp_path):
    logits = np.zeros((5, VOCAB.vocab_size))
    logits[0, 5] = math.nan
    logits[1, 9] = math.nan
    logits[2, 11] = math.inf  # a token the grammar never allows: still a failure
    np.save(tmp_path / "l.npy", logits)
    path, result = run(tmp_path, NpyLogits(tmp_path / "l.npy", VOCAB.vocab_size))
    assert (
        result.stop == "logit_positive_infinity"
        and result.end["failure_code"] == "E_LOGIT_POSITIVE_INFINITY"
    )
    assert result.end["nan"] == 2 and result.end["steps"] == 3
    assert do_replay(path).identical


def test_stop_reason_sampling_failure(tmp_path):
    path, result = run(tmp_path, banned_ids=[0])  # `[` is the only start: all mass removed
    assert result.stop == "sampling_failure" and result.end["failure_code"] == "E_SAMPLING_FAILURE"
    assert result.end["rng_draws"] == 0
    assert do_replay(path).identical


def test_logits_sources(tmp_path):
    assert parse_logits_spec("random:42", 12).description == "random:42"
    a = parse_logits_spec("random:42", 12)(3, [1, 2])
    assert np.array_equal(a, RandomLogits(42, 12)(3, [2]))
    assert not np.array_equal(a, RandomLogits(42, 12)(3, [1]))
    # pinned values of the stand-in model (docs: logits.py formula)
    pinned = ["-0x1.fffff11c06358p+1", "-0x1.fcff375df28e8p+1", "-0x1.3347bb94297d1p+1"]
    assert [v.hex() for v in RandomLogits(42, 12)(0, [])[:3]] == pinned
    for bad in ("random:", "random:x", "gauss:1", "npy:"):
        with pytest.raises(TrgcError) as info:
            parse_logits_spec(bad, 12)
        assert info.value.code == "E_LOGITS_SOURCE"
    np.save(tmp_path / "wrong.npy", np.zeros((2, 5)))
    with pytest.raises(TrgcError) as info:
        parse_logits_spec(f"npy:{tmp_path / 'wrong.npy'}", 12)
    assert info.value.code == "E_LOGITS_SOURCE"
    np.save(tmp_path / "short.npy", np.zeros((2, 12), dtype=np.float32))
    with pytest.raises(TrgcError) as info:
        run(tmp_path, parse_logits_spec(f"npy:{tmp_path / 'short.npy'}", 12))
    assert info.value.code == "E_LOGITS_EXHAUSTED"
    assert (
        not (tmp_path / "run.jsonl").exists() and not (tmp_path / "run.jsonl.logits.zst").exists()
    )
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_identity_mismatch_refused(tmp_path):
    path, _ = run(tmp_path)
    trace = read_trace(path)
    given = {
        "artifact_sha256": IDENTITY.artifact_sha256,
        "tokenizer_sha256": IDENTITY.tokenizer_sha256,
        "compiler": IDENTITY.compiler,
    }
    for kwargs in (
        {**given, "artifact_sha256": "sha256:" + "00" * 32},
        {**given, "tokenizer_sha256": "sha256:" + "00" * 32},
        {**given, "compiler": "another-compiler"},
    ):
        with pytest.raises(TrgcError) as info:
            replay(trace, FakeConstraint(), VOCAB, **kwargs)
        assert info.value.code == "E_COMPOSITION_MISMATCH"


def test_tampered_step_is_reported_exactly(tmp_path):
    path, result = run(tmp_path, seed=3)
    steps = read_trace(path).steps
    k = 1
    other = next(t for t in (3, 4, 5, 7) if t != steps[k]["token"])
    rewrite(path, 1 + k, token=other)
    report = do_replay(path)
    assert not report.identical
    d = report.divergence
    assert (d.step, d.field, d.expected, d.got) == (k, "token", other, steps[k]["token"])


@pytest.mark.parametrize(
    "field,value",
    [
        ("rank", 99),
        ("draw", 1),
        ("nan", 3),
        ("config", "state:9"),
        ("allowed", 99),
        ("allowed", 2**31 - 1),  # declares a sidecar of 16 GiB; replay reads what is there
        ("intervention", 0.5),
    ],
)
def test_each_tampered_field_is_named(tmp_path, field, value):
    path, _ = run(tmp_path, seed=4)
    original = read_trace(path).steps[2][field]
    rewrite(path, 3, **{field: value})
    d = do_replay(path).divergence
    assert (d.step, d.field, d.expected, d.got) == (2, field, value, original)


def test_tampered_end_line_is_reported(tmp_path):
    path, result = run(tmp_path, seed=4)
    n = len(path.read_text().splitlines())
    rewrite(path, n - 1, output_sha256="0" * 64)
    d = do_replay(path).divergence
    assert (d.step, d.field, d.got) == (
        None,
        "output_sha256",
        hashlib.sha256(result.output).hexdigest(),
    )


def test_measured_fields_are_not_compared(tmp_path):
    path, _ = run(tmp_path, seed=4)
    rewrite(path, 1, mask_us=123456, sample_us=7, cache_hit=True)
    assert do_replay(path).identical


def test_tampered_sidecar_detected_by_hash_then_by_step(tmp_path):
    path, _ = run(tmp_path, seed=6, temperature=1.5)
    sidecar = tmp_path / "run.jsonl.logits.zst"
    import zstandard

    payload = bytearray(
        zstandard.ZstdDecompressor().decompressobj().decompress(sidecar.read_bytes())
    )
    trace = read_trace(path)
    # step 1's record: header 8 bytes magic; record 0 = 24 + 8 * allowed_0 bytes
    offset = 8 + 24 + 8 * trace.steps[0]["allowed"] + 24
    payload[offset : offset + 8 * trace.steps[1]["allowed"]] = np.full(
        trace.steps[1]["allowed"], 0.0
    ).tobytes()
    payload[offset : offset + 8] = np.array([40.0]).tobytes()  # first allowed token now dominates
    tampered = zstandard.ZstdCompressor().compress(bytes(payload))
    sidecar.write_bytes(tampered)
    with pytest.raises(TrgcError) as info:
        do_replay(path)
    assert info.value.code == "E_SIDECAR_HASH"
    # an attacker who also fixes the hash is caught at the first step whose decision changes
    rewrite(path, len(trace.steps) + 1, sidecar_sha256=hashlib.sha256(tampered).hexdigest())
    d = do_replay(path).divergence
    assert d.step == 1 and d.field in ("token", "rank", "intervention", "candidates")


def test_missing_sidecar_is_io_error(tmp_path):
    path, _ = run(tmp_path)
    (tmp_path / "run.jsonl.logits.zst").unlink()
    with pytest.raises(TrgcError) as info:
        do_replay(path)
    assert info.value.code == "E_IO"


def test_eos_is_advanced_and_terminates(tmp_path):
    constraint = FakeConstraint()
    _, result = run(tmp_path, constraint=constraint)
    assert result.completed and constraint.terminated and result.end["config"] == "terminated"
    assert EOS_ID not in result.tokens


def test_intervention_metric_is_the_mean_of_step_values(tmp_path):
    constraint = FakeConstraint()
    source = RandomLogits(2, VOCAB.vocab_size)
    path, result = run(tmp_path, source, seed=2, temperature=0.9)
    steps = read_trace(path).steps
    # recompute each step's value from the logits the model gave: max over the whole vocabulary
    tokens: list[int] = []
    values = []
    for step in steps:
        logits = source(step["step"], tokens)
        if step["intervention"] is not None:
            assert step["intervention"] == float(np.nanmax(logits) - logits[step["token"]])
            values.append(step["intervention"])
        if step["token"] is not None and step["token"] != EOS_ID:
            tokens.append(step["token"])
            constraint.advance(step["token"])
    total = 0.0
    for value in values:
        total += value
    assert result.end["intervention"] == total / len(values)
    assert result.end["intervention_steps"] == len(values) > 0
