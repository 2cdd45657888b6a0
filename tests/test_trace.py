"""trgc-trace-1 and its logits sidecar: strict reading, canonical lines, round trips, corruption codes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import zstandard

from decode_fakes import FakeConstraint, FakeVocab
from trgc.decode.generate import Identity, decode
from trgc.decode.logits import RandomLogits
from trgc.decode.sampler import SamplerSettings, StepLogits
from trgc.decode.sidecar import SidecarWriter, read_sidecar
from trgc.decode.step import mask_sha256
from trgc.decode.stream import Utf8Stream
from trgc.decode.trace import PROTOCOL, parse_trace, read_trace
from trgc.errors import TrgcError


def make_trace(tmp_path: Path, seed: int = 3, **settings) -> Path:
    path = tmp_path / "run.jsonl"
    constraint, vocab = FakeConstraint(), FakeVocab()
    decode(
        constraint,
        vocab,
        RandomLogits(seed, vocab.vocab_size),
        settings=SamplerSettings(**settings),
        seed=seed,
        max_tokens=40,
        trace_path=path,
        identity=Identity(constraint.sha256, vocab.sha256, "test-compiler", "0.1.0"),
        logits_description=f"random:{seed}",
    )
    return path


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def code_of(data: bytes) -> str:
    with pytest.raises(TrgcError) as info:
        parse_trace(data)
    return info.value.code


def test_trace_lines_are_canonical_and_round_trip(tmp_path):
    path = make_trace(tmp_path)
    data = path.read_bytes()
    trace = read_trace(path)
    assert trace.to_bytes() == data
    for line in data.decode().splitlines():
        assert line == json.dumps(
            json.loads(line), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
    assert trace.header["protocol"] == PROTOCOL
    assert [s["step"] for s in trace.steps] == list(range(len(trace.steps)))
    assert trace.end["type"] == "end"
    assert (tmp_path / "run.jsonl.logits.zst").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl", "run.jsonl.logits.zst"]


def test_trace_holds_no_text(tmp_path):
    path = make_trace(tmp_path)
    text = path.read_text()
    # the generated output (e.g. `[1,23]`) appears nowhere, only its hash and token ids
    output = b"".join(
        FakeVocab().token_bytes(s["token"])
        for s in read_trace(path).steps
        if s["token"] is not None
    )
    assert output and output.decode("utf-8", "replace") not in text and output.hex() not in text


def test_unknown_field_version_type_are_errors(tmp_path):
    records = lines(make_trace(tmp_path))

    def dump(rs):
        return (
            "\n".join(json.dumps(r, sort_keys=True, separators=(",", ":")) for r in rs) + "\n"
        ).encode()

    assert parse_trace(dump(records)).end == records[-1]
    bad = [dict(records[0], protocol="trgc-trace-2"), *records[1:]]
    assert code_of(dump(bad)) == "E_TRACE_FORMAT"
    bad = [records[0], dict(records[1], extra=1), *records[2:]]
    assert code_of(dump(bad)) == "E_TRACE_FORMAT"
    bad = [records[0], {k: v for k, v in records[1].items() if k != "rank"}, *records[2:]]
    assert code_of(dump(bad)) == "E_TRACE_FORMAT"
    bad = [records[0], dict(records[1], token="7"), *records[2:]]
    assert code_of(dump(bad)) == "E_TRACE_FORMAT"
    bad = [records[0], dict(records[1], type="note"), *records[2:]]
    assert code_of(dump(bad)) == "E_TRACE_FORMAT"
    bad = [records[0], *records[2:]]  # a step missing: numbering must be consecutive
    assert code_of(dump(bad)) == "E_TRACE_FORMAT"
    header = dict(records[0], rng=dict(records[0]["rng"], state=[1, 2]))
    assert code_of(dump([header, *records[1:]])) == "E_TRACE_FORMAT"
    assert code_of(dump([*records, records[-1]])) == "E_TRACE_FORMAT"  # a line after the end
    assert code_of(b'{"type":"header","x":NaN}\n') == "E_TRACE_FORMAT"


def test_truncated_trace_is_detected(tmp_path):
    data = make_trace(tmp_path).read_bytes()
    lines_ = data.splitlines(keepends=True)
    with pytest.raises(TrgcError) as info:
        parse_trace(b"".join(lines_[:-1]))
    assert info.value.code == "E_TRACE_TRUNCATED"
    assert info.value.details["steps"] == len(lines_) - 2
    with pytest.raises(TrgcError) as info:
        parse_trace(data[:-20])  # cut inside the end line
    assert info.value.code == "E_TRACE_TRUNCATED"
    assert info.value.span.line == len(lines_)
    assert code_of(b"") == "E_TRACE_TRUNCATED"


def test_sidecar_round_trip_and_corruption(tmp_path):
    path = tmp_path / "s.zst"
    writer = SidecarWriter(path)
    records = [
        StepLogits(np.array([1.5, -math.inf, math.nan]), 2, False, 7.25),
        StepLogits(np.array([], dtype=np.float64), 0, True, -math.inf),
    ]
    for index, record in enumerate(records):
        writer.write(index, record)
    digest = writer.close()
    got = list(read_sidecar(path, digest))
    assert [g[0] for g in got] == [0, 1]
    assert got[0][1].allowed.tobytes() == records[0].allowed.tobytes()
    assert (got[0][1].outside_nan, got[0][1].outside_posinf, got[0][1].outside_max) == (
        2,
        False,
        7.25,
    )
    assert got[1][1].outside_posinf and got[1][1].outside_max == -math.inf
    with pytest.raises(TrgcError) as info:
        read_sidecar(path, "0" * 64)
    assert info.value.code == "E_SIDECAR_HASH"
    import hashlib

    junk = tmp_path / "junk.zst"
    junk.write_bytes(b"not zstd")
    with pytest.raises(TrgcError) as info:
        read_sidecar(junk, hashlib.sha256(b"not zstd").hexdigest())
    assert info.value.code == "E_SIDECAR_FORMAT"
    wrong = zstandard.ZstdCompressor().compress(b"XXXXXXXX")
    junk.write_bytes(wrong)
    with pytest.raises(TrgcError) as info:
        list(read_sidecar(junk, hashlib.sha256(wrong).hexdigest()))
    assert info.value.code == "E_SIDECAR_FORMAT"


def test_mask_hash_is_of_packed_int32_words():
    mask = np.zeros(40, dtype=bool)
    mask[[0, 33, 39]] = True
    words = np.array([1, (1 << 1) | (1 << 7)], dtype="<i4")
    import hashlib

    assert mask_sha256(mask) == hashlib.sha256(words.tobytes()).hexdigest()


def test_utf8_stream_shows_complete_scalars_only():
    stream = Utf8Stream()
    assert stream.feed(b"[\xc3") == "["
    assert stream.pending() == b"\xc3"
    assert stream.feed(b"\xa9,") == "é,"
    assert stream.feed(b"\xe2\x82") == "" and stream.feed(b"\xac") == "€"


def test_stats_distribution_and_aggregate(tmp_path):
    from trgc.decode.stats import distribution, trace_stats

    d = distribution([float(v) for v in range(100, 0, -1)])
    assert (d["count"], d["min"], d["p50"], d["p90"], d["p99"], d["max"], d["mean"]) == (
        100,
        1.0,
        50.0,
        90.0,
        99.0,
        100.0,
        50.5,
    )
    assert distribution([])["p50"] is None
    traces = []
    for seed in range(3):
        sub = tmp_path / str(seed)
        sub.mkdir()
        traces.append(read_trace(make_trace(sub, seed=seed)))
    doc = trace_stats(traces)
    assert doc["runs"] == 3 and doc["steps"] == sum(len(t.steps) for t in traces)
    assert sum(doc["stop_reasons"].values()) == 3
    assert doc["allowed_set_size"]["max"] == max(s["allowed"] for t in traces for s in t.steps)
    assert doc["cache_hit_rate"] == 0.0 and doc["cache_observed_steps"] == doc["steps"]


def test_sidecar_memory_follows_the_file_not_the_size_a_trace_declares(tmp_path):
    """A trace's step lines declare the sidecar's size; an edited `allowed` count declared
    gigabytes and the decompression buffer was allocated at that size (a fuzz finding: replay
    of such a trace allocated past its memory ceiling)."""
    import tracemalloc

    path = tmp_path / "s.zst"
    writer = SidecarWriter(path)
    writer.write(0, StepLogits(np.zeros(3), 0, False, 0.0))
    digest = writer.close()
    tracemalloc.start()
    try:
        records = list(read_sidecar(path, digest, max_payload=2**31))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(records) == 1 and peak < 8 * 2**20, peak


def test_sidecar_decompression_is_bounded(tmp_path):
    import hashlib

    from trgc.decode.sidecar import payload_size

    path = tmp_path / "s.zst"
    writer = SidecarWriter(path)
    writer.write(0, StepLogits(np.zeros(3), 0, False, 0.0))
    digest = writer.close()
    assert len(list(read_sidecar(path, digest, max_payload=payload_size([3])))) == 1
    bomb = zstandard.ZstdCompressor().compress(b"TRGCLGT1" + bytes(10_000_000))
    path.write_bytes(bomb)
    with pytest.raises(TrgcError) as info:
        read_sidecar(path, hashlib.sha256(bomb).hexdigest(), max_payload=payload_size([3]))
    assert info.value.code == "E_SIDECAR_FORMAT" and "more than" in info.value.message


def test_trace_reading_is_bounded(tmp_path, monkeypatch):
    import trgc.decode.trace as trace_module

    path = make_trace(tmp_path)
    monkeypatch.setattr(trace_module, "MAX_TRACE_BYTES", path.stat().st_size - 1)
    with pytest.raises(TrgcError) as info:
        read_trace(path)
    assert info.value.code == "E_LIMIT_INPUT_BYTES"


def test_sidecar_bytes_do_not_depend_on_how_a_step_is_compressed(tmp_path):
    """The writer compresses a large step in slices (so a Ctrl-C is not held back by one long
    zstd call); the file must be the bytes one call per record gives, the sidecar's identity."""
    import hashlib

    from trgc.decode import sidecar

    rng = np.random.default_rng(3)
    steps = [
        StepLogits(rng.standard_normal(n).astype("<f8"), 2, False, 1.5)
        for n in (1, 200_000, 37, sidecar.EMIT_SLICE // 8 + 1)
    ]
    writer = sidecar.SidecarWriter(tmp_path / "run.jsonl.logits.zst")
    for i, step in enumerate(steps):
        writer.write(i, step)
    digest = writer.close()
    whole = zstandard.ZstdCompressor(level=sidecar.ZSTD_LEVEL).compressobj()
    parts = [whole.compress(sidecar.MAGIC)]
    for i, step in enumerate(steps):
        header = sidecar._RECORD.pack(
            i, step.allowed.shape[0], step.outside_nan, 0, step.outside_max
        )
        parts.append(whole.compress(header + step.allowed.tobytes()))
    parts.append(whole.flush())
    data = (tmp_path / "run.jsonl.logits.zst").read_bytes()
    assert data == b"".join(parts)
    assert digest == hashlib.sha256(data).hexdigest()
