"""Table identity: stable across processes and PYTHONHASHSEED; committed tables rebuild exactly."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from test_tokenizer_support import FIXTURES, REPO, SYNTH, table
from trgc.tokenizer import build_table, load_tokenizer

SCRIPT = (
    "import sys; from trgc.tokenizer import build_table; print(build_table(sys.argv[1]).sha256)"
)


def identity_in_subprocess(path, seed: str) -> str:
    env = dict(os.environ, PYTHONHASHSEED=seed)
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(path)],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


@pytest.mark.parametrize("seed", ["0", "1", "4242"])
def test_identity_stable_across_processes_and_hash_seeds(seed):
    assert identity_in_subprocess(SYNTH / "json-bytelevel", seed) == table("json-bytelevel").sha256
    assert (
        identity_in_subprocess(SYNTH / "sp-bytefallback", seed) == table("sp-bytefallback").sha256
    )


@pytest.mark.slow
def test_real_identity_stable_across_hash_seeds():
    assert (
        identity_in_subprocess(FIXTURES / "qwen3", "0")
        == identity_in_subprocess(FIXTURES / "qwen3", "987")
        == table("qwen3").sha256
    )


@pytest.mark.parametrize(
    ("trt", "source"),
    [
        ("qwen3.trt", "qwen3"),
        ("llama3.trt", "llama3/tokenizer.model.zst"),
        ("gpt2.trt", "gpt2/encoder.json.zst"),
    ],
)
def test_committed_tables_equal_a_rebuild(trt, source):
    committed = load_tokenizer(FIXTURES / trt)
    rebuilt = build_table(FIXTURES / source)
    assert committed.sha256 == rebuilt.sha256
    assert committed.to_bytes() == rebuilt.to_bytes()


def test_compression_does_not_change_identity(tmp_path):
    tab = table("json-bytelevel")
    (tmp_path / "raw.trt").write_bytes(tab.to_bytes())
    tab.save(tmp_path / "z.trt")
    assert (
        load_tokenizer(tmp_path / "raw.trt").sha256
        == load_tokenizer(tmp_path / "z.trt").sha256
        == tab.sha256
    )


def test_public_api_lazy_names():
    import trgc

    assert trgc.load_tokenizer is load_tokenizer
    assert trgc.TokenTable.__name__ == "TokenTable"
