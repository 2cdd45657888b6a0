"""Crafted `.trm` mask caches and `.trt` token tables are refused before use (issue 17, item 4).

Each file here is internally consistent — its digest recomputed, its bytes canonical — and breaks
exactly one invariant the precompute or the table builder guarantees, the way an edited file
would. Every one must be refused with its format's code, never loaded and never an internal error.
"""

from __future__ import annotations

import dataclasses
import hashlib
import struct
from pathlib import Path

import numpy as np
import pytest
import zstandard

import trgc
from trgc.engine import trm
from trgc.engine.binding import bind
from trgc.engine.precompute import precompute
from trgc.errors import TrgcError
from trgc.tokenizer import codec
from trgc.tokenizer.table import TokenTable

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bound():
    artifact = trgc.compile_grammar((ROOT / "grammars" / "json.trg").read_text(encoding="utf-8"))
    table = trgc.load_tokenizer(ROOT / "tokenizers" / "synthetic" / "json-bytelevel")
    return artifact, table, precompute(artifact, table)


def refused_masks(tmp_path: Path, data: bytes, bound=None) -> TrgcError:
    path = tmp_path / "crafted.trm"
    path.write_bytes(data)
    with pytest.raises(TrgcError) as info:
        trm.load_masks(path, binding=None if bound is None else bind(*bound[:2]))
    assert info.value.code == "E_CACHE_MISMATCH", info.value
    return info.value


def frame(body: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=3).compress(body)


def with_digest(body: bytes) -> bytes:
    return body + hashlib.sha256(body).digest()


def test_the_real_cache_loads(tmp_path, bound):
    artifact, table, masks = bound
    trm.save_masks(masks, tmp_path / "ok.trm")
    loaded = trm.load_masks(tmp_path / "ok.trm", binding=bind(artifact, table))
    assert trm.to_bytes(loaded) == trm.to_bytes(masks)
    assert 1 <= int(masks.height.max()) <= masks.max_depth
    assert not masks.masks[0].any()


@pytest.mark.parametrize("max_depth", [2**32 - 1, 2**31, 0, 5000])
def test_max_depth_out_of_range(tmp_path, bound, max_depth):
    crafted = dataclasses.replace(bound[2], max_depth=max_depth)
    error = refused_masks(tmp_path, frame(trm.to_bytes(crafted)))
    assert "max_depth" in error.message


def test_max_depth_other_than_the_artifacts(tmp_path, bound):
    crafted = dataclasses.replace(bound[2], max_depth=bound[2].max_depth + 1)
    trm.from_bytes(trm.to_bytes(crafted))  # well-formed on its own
    error = refused_masks(tmp_path, frame(trm.to_bytes(crafted)), bound)
    assert "max_depth" in error.message


@pytest.mark.parametrize("value", [-1, "max"])
def test_height_outside_zero_to_max_depth(tmp_path, bound, value):
    """Heights are in 0..max_depth: a frame of a repeat or shared machine costs no depth."""
    masks = bound[2]
    height = masks.height.copy()
    height[0] = masks.max_depth + 1 if value == "max" else value
    error = refused_masks(tmp_path, frame(trm.to_bytes(dataclasses.replace(masks, height=height))))
    assert "height" in error.message


def test_non_empty_row_zero(tmp_path, bound):
    table = bound[2].masks.copy()
    table[0, 0] = 1
    error = refused_masks(tmp_path, frame(trm.to_bytes(dataclasses.replace(bound[2], masks=table))))
    assert "row 0" in error.message


def test_bits_past_the_vocabulary(tmp_path, bound):
    masks = bound[2]
    assert masks.vocab_size % 32, "the fixture needs a partial last word"
    table = masks.masks.copy()
    table[1, -1] |= np.uint32(1 << 31)
    error = refused_masks(tmp_path, frame(trm.to_bytes(dataclasses.replace(masks, masks=table))))
    assert "vocab_size" in error.message


def test_repeated_rows(tmp_path, bound):
    masks = bound[2]
    table = np.vstack([masks.masks, masks.masks[1:2]])
    error = refused_masks(tmp_path, frame(trm.to_bytes(dataclasses.replace(masks, masks=table))))
    assert "repeats" in error.message


@pytest.mark.parametrize("tail", [b"\0", b"junk", "second frame"])
def test_bytes_after_the_zstd_frame(tmp_path, bound, tail):
    data = frame(trm.to_bytes(bound[2]))
    data += frame(b"x") if tail == "second frame" else tail
    assert "zstd frame" in refused_masks(tmp_path, data).message


def _trm_with_header(header: bytes) -> bytes:
    body = trm.MAGIC + struct.pack("<II", trm.VERSION, len(header)) + header
    return frame(with_digest(body + b"\0" * (-len(body) % 4)))


def test_header_nested_deeply_is_refused_without_recursion(tmp_path):
    error = refused_masks(tmp_path, _trm_with_header(b"[" * 100_000 + b"]" * 100_000))
    assert "nest" in error.message


@pytest.mark.parametrize(
    "change",
    [{"n_states": True}, {"artifact": 5}, {"n_masks": 2**40}, {"max_depth": 1.0}],
)
def test_header_values_of_the_wrong_type(tmp_path, bound, change):
    import json

    masks = bound[2]
    body = trm.to_bytes(masks)[:-32]
    (header_len,) = struct.unpack_from("<I", body, len(trm.MAGIC) + 4)
    start = len(trm.MAGIC) + 8
    header = json.loads(body[start : start + header_len]) | change
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    rest = body[start + header_len + (-(start + header_len) % 4) :]
    prefix = trm.MAGIC + struct.pack("<II", trm.VERSION, len(text)) + text
    data = with_digest(prefix + b"\0" * (-len(prefix) % 4) + rest)
    refused_masks(tmp_path, frame(data))


# ---------------------------------------------------------------------------- .trt


@pytest.fixture(scope="module")
def table_blob() -> bytes:
    return codec.read_table_bytes(ROOT / "tokenizers" / "gpt2.trt")


def refused_table(tmp_path: Path, data: bytes) -> TrgcError:
    path = tmp_path / "crafted.trt"
    path.write_bytes(data)
    with pytest.raises(TrgcError) as info:
        TokenTable.load(path)
    assert info.value.code.startswith("E_TOKENIZER_TABLE_"), info.value
    return info.value


def _table_with_header(blob: bytes, header: bytes) -> bytes:
    pos = len(codec.MAGIC)
    _, meta_len = struct.unpack_from("<IQ", blob, pos)
    rest = blob[pos + 12 + meta_len : -32]
    return with_digest(
        codec.MAGIC + struct.pack("<IQ", codec.FORMAT_VERSION, len(header)) + header + rest
    )


def _header(blob: bytes) -> dict:
    import json

    _, meta_len = struct.unpack_from("<IQ", blob, len(codec.MAGIC))
    start = len(codec.MAGIC) + 12
    return json.loads(blob[start : start + meta_len])


@pytest.mark.parametrize("tail", [b"\0", "second frame"])
def test_table_bytes_after_the_zstd_frame(tmp_path, table_blob, tail):
    data = codec.compress(table_blob)
    data += codec.compress(b"x") if tail == "second frame" else tail
    error = refused_table(tmp_path, data)
    assert error.code == "E_TOKENIZER_TABLE_CORRUPT" and "follow the zstd frame" in error.message


def test_table_header_nested_deeply(tmp_path, table_blob):
    deep = b"[" * 100_000 + b"]" * 100_000
    error = refused_table(tmp_path, codec.compress(_table_with_header(table_blob, deep)))
    assert error.code == "E_TOKENIZER_TABLE_CORRUPT" and "nest" in error.message


@pytest.mark.parametrize(
    "change",
    [
        {"eos_ids": [True]},
        {"eos_ids": ["50256"]},
        {"eos_ids": [50256, 50256]},
        {"special_tokens": {"<|endoftext|>": 50256.0}},
        {"added_tokens": {"x": -1}},
        {"metadata": []},
        {"extra": 1},
    ],
)
def test_table_header_values_of_the_wrong_type(tmp_path, table_blob, change):
    header = _header(table_blob) | change
    text = codec.canonical_json(header)
    error = refused_table(tmp_path, codec.compress(_table_with_header(table_blob, text)))
    assert error.code == "E_TOKENIZER_TABLE_CORRUPT"


def test_the_real_table_still_loads(tmp_path, table_blob):
    path = tmp_path / "ok.trt"
    path.write_bytes(
        codec.compress(_table_with_header(table_blob, codec.canonical_json(_header(table_blob))))
    )
    assert TokenTable.load(path).eos_ids == (50256,)
