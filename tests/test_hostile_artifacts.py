"""Crafted `.trga` artifacts: internally consistent files (digest recomputed, framing intact) that
break one invariant the compiler guarantees (issue 17, item 4).

Each case was accepted by the format-v1 reader; the format-v2 structural validator
(`trgc.artifact.codec`) refuses it. They only decode (or run `inspect`): none runs a command that
would act on a crafted size.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import trgc
from trgc.artifact import codec
from trgc.cli.app import app
from trgc.errors import TrgcError

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


@pytest.fixture(scope="module")
def base():
    return trgc.compile_grammar((ROOT / "grammars" / "json.trg").read_text(encoding="utf-8"))


def crafted(base, *, metadata: dict | None = None, **fields) -> bytes:
    """Canonical bytes of `base` with some fields replaced, digest recomputed (no self-check)."""
    artifact = dataclasses.replace(base, metadata=metadata or base.metadata, **fields)
    artifact._cache.clear()
    return codec._encode_unchecked(artifact)


def with_meta(base, raw_meta: bytes) -> bytes:
    """`base` re-framed with raw META bytes (which no encoder would write), digest recomputed."""
    data = codec.encode(base)
    sections = codec._frame_sections(data)
    out = codec._Writer()
    out.raw(codec.MAGIC)
    out.u32(codec.FORMAT_VERSION)
    for tag in codec.SECTIONS[:-1]:
        start, end = sections[tag]
        out.section(tag, raw_meta if tag == b"META" else data[start:end])
    out.section(b"DGST", hashlib.sha256(out.buf).digest())
    return bytes(out.buf)


def refused(data: bytes) -> TrgcError:
    with pytest.raises(TrgcError) as info:
        codec.decode(data)
    assert info.value.code == "E_ARTIFACT_CORRUPT", info.value
    return info.value


def inspect_status(tmp_path: Path, data: bytes) -> int:
    path = tmp_path / "crafted.trga"
    path.write_bytes(codec.compress(data))
    result = runner.invoke(app, ["inspect", str(path), "--json"])
    assert "Traceback" not in result.stderr
    return result.exit_code


def test_the_crafting_helpers_round_trip(base):
    """Without a change the helpers give the compiler's own bytes back (so a refusal below is
    caused by the one edited invariant)."""
    assert crafted(base) == codec.encode(base)
    assert with_meta(base, codec.canonical_json(base.metadata)) == codec.encode(base)


# ---------------------------------------------------------------------- what holds today


def test_mach_max_depth_must_agree_with_meta(base):
    refused(crafted(base, max_depth=base.max_depth + 1))


def test_meta_must_be_canonical(base):
    refused(with_meta(base, json.dumps(base.metadata, sort_keys=True).encode()))


def test_meta_nested_deeply(base):
    meta = codec.canonical_json(base.metadata)
    refused(with_meta(base, meta[:-1] + b',"zz":' + b"[" * 100_000 + b"]" * 100_000 + b"}"))


# ---------------------------------------------------------------------- for the v2 validator


def test_max_depth_beyond_the_recorded_limit(base):
    """MACH and META say 2^32-1 while LIMT says 1,024: `generate` would try to allocate 2 TiB."""
    huge = 2**32 - 1
    refused(crafted(base, metadata={**base.metadata, "max_depth": huge}, max_depth=huge))


@pytest.mark.parametrize("constant", [b"Infinity", b"-Infinity", b"NaN", b"1e400"])
def test_meta_with_a_non_finite_number(tmp_path, base, constant):
    meta = codec.canonical_json(base.metadata)
    raw = meta[:-1] + b',"zz":' + constant + b"}"
    refused(with_meta(base, raw))
    assert inspect_status(tmp_path, with_meta(base, raw)) == 2


@pytest.mark.parametrize("escape", [b'"\\ud800"', b'"a\\udfff"'])
def test_meta_with_a_lone_surrogate(tmp_path, base, escape):
    meta = codec.canonical_json(base.metadata)
    raw = meta[:-1] + b',"zz":' + escape + b"}"
    refused(with_meta(base, raw))
    assert inspect_status(tmp_path, with_meta(base, raw)) == 2


def test_unknown_limit_name(base):
    limits = {**base.metadata["limits"], "bogus": 7}
    refused(crafted(base, metadata={**base.metadata, "limits": limits}))


@pytest.mark.parametrize("value", [0, 2**64 - 1])
def test_all_limits_zero_or_all_max(base, value):
    limits = dict.fromkeys(base.metadata["limits"], value)
    refused(crafted(base, metadata={**base.metadata, "limits": limits}))


def test_max_depth_above_the_max_depth_limit(base):
    limits = {**base.metadata["limits"], "max_depth": 8}
    refused(crafted(base, metadata={**base.metadata, "limits": limits}))  # max_depth is 64
