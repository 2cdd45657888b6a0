"""`trgc masks precompute` end to end, and the kernels run as plain Python (NUMBA_DISABLE_JIT)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import trgc
from engine_fixtures import ROOT
from trgc.cli.app import app
from trgc.engine import reference, trm
from trgc.engine.binding import bind
from trgc.engine.config import step_bytes
from trgc.engine.matcher import Matcher
from trgc.errors import TrgcError

SYNTHETIC = ROOT / "tokenizers" / "synthetic" / "json-bytelevel"


def _artifact(tmp_path, name: str):
    art = trgc.compile_grammar((ROOT / "grammars" / f"{name}.trg").read_text(encoding="utf-8"))
    path = tmp_path / f"{name}.trga"
    art.save(path)
    return art, path


def _run(*args: str):
    return CliRunner().invoke(app, ["masks", "precompute", *args])


def test_precompute_cli_writes_a_usable_cache(tmp_path):
    art, path = _artifact(tmp_path, "json")
    out = tmp_path / "json.trm"
    result = _run(str(path), "--tokenizer", str(SYNTHETIC), "-o", str(out), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["artifact"] == art.sha256 and doc["states"] == sum(m.n_states for m in art.machines)
    assert doc["sha256"].startswith("sha256:") and doc["file_bytes"] == out.stat().st_size
    tok = trgc.load_tokenizer(SYNTHETIC)
    masks = trm.load_masks(out, binding=bind(art, tok))
    m = Matcher(art, tok, cache=masks)  # a FrameMasks given as cache is the precomputed table
    assert m._precomputed is masks
    for text in (b"", b'{"a', b'[1, {"k": [tru'):
        m.reset()
        config = step_bytes(bind(art, tok).tables, m.config, text)
        m._history = [config]
        assert (m.allowed_tokens() == reference.allowed_mask(bind(art, tok), config)).all()
    again = _run(str(path), "--tokenizer", str(SYNTHETIC), "-o", str(tmp_path / "b.trm"), "--json")
    assert json.loads(again.stdout)["sha256"] == doc["sha256"]  # identical hash on rebuild
    human = _run(str(path), "--tokenizer", str(SYNTHETIC), "-o", str(tmp_path / "c.trm"))
    assert human.exit_code == 0 and doc["sha256"] in human.stdout


def test_precompute_cli_refusals_and_limits(tmp_path):
    art, path = _artifact(tmp_path, "csv")
    _, other_path = _artifact(tmp_path, "arith")
    out = tmp_path / "csv.trm"
    assert _run(str(path), "-t", str(SYNTHETIC), "-o", str(out)).exit_code == 0
    tok = trgc.load_tokenizer(SYNTHETIC)
    other = trgc.load_artifact(other_path)
    with pytest.raises(TrgcError) as err:
        Matcher(other, tok, precomputed=trm.load_masks(out))
    assert err.value.code == "E_CACHE_MISMATCH"
    limited = _run(
        str(path),
        "-t",
        str(SYNTHETIC),
        "-o",
        str(tmp_path / "x.trm"),
        "--limit",
        "cache_bytes=100",
        "--json",
    )
    assert limited.exit_code == 3 and "E_LIMIT_CACHE_BYTES" in limited.output
    assert not (tmp_path / "x.trm").exists()
    missing = _run(str(tmp_path / "nope.trga"), "-t", str(SYNTHETIC), "-o", str(tmp_path / "y.trm"))
    assert missing.exit_code == 2


def test_precompute_and_generate_use_the_persistent_cache(tmp_path):
    """`--cache-dir` fills a cache that a second precompute reads back entry for entry (the
    same file); `generate --cache-dir` adds its frame entries there too; `--no-cache` neither
    reads nor writes."""
    _, path = _artifact(tmp_path, "json")
    cache = tmp_path / "cache"
    llama3 = ROOT / "tokenizers" / "llama3.trt"  # on a tiny vocabulary every frame stays in memory

    def precompute_doc(out: str, *extra: str) -> dict:
        result = _run(str(path), "-t", str(llama3), "-o", str(tmp_path / out), "--json", *extra)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    first = precompute_doc("a.trm", "--cache-dir", str(cache))
    assert first["disk_cache"]["location"] == str(cache) and first["disk_cache"]["hits"] == 0
    assert first["disk_cache"]["writes"] > 0
    second = precompute_doc("b.trm", "--cache-dir", str(cache))
    assert second["disk_cache"]["hits"] == first["disk_cache"]["writes"]
    assert second["disk_cache"]["writes"] == 0 and second["sha256"] == first["sha256"]
    none = precompute_doc("c.trm", "--no-cache", "--cache-dir", str(tmp_path / "unused"))
    assert none["disk_cache"] is None and not (tmp_path / "unused").exists()
    assert none["sha256"] == first["sha256"]
    fresh = tmp_path / "fresh"
    generated = CliRunner().invoke(
        app, ["generate", str(path), "-t", str(llama3), "--max-tokens", "8", "--json",
              "--cache-dir", str(fresh)],
    )  # fmt: skip
    assert generated.exit_code in (0, 4), generated.output
    assert list(fresh.rglob("*.entry"))  # published by the background writer before exit


def test_kernels_as_plain_python():
    """The kernel tests again with NUMBA_DISABLE_JIT=1: the kernels run as ordinary Python,
    so their lines are covered and debuggable."""
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_engine_matcher.py",
            "tests/test_engine_cache.py",
            "tests/test_engine_slices.py",
            "tests/test_engine_residual.py",
            "-k",
            "not llama3",  # a 128k vocabulary walked in plain Python is too slow for the suite
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    check = "import numba; print(numba.config.DISABLE_JIT)"
    flag = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True)
    assert flag.stdout.strip() == "1"


def test_trgc_exports_the_engine():
    assert trgc.Matcher is Matcher and isinstance(trgc.MaskCache(1024), trgc.MaskCache)
