"""`tokenizer verify` on a tokenizer.json compares every id's bytes with what the `tokenizers`
library yields for that id, not only the probe text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trgc.cli.app import app
from trgc.tokenizer.bytelevel import byte_to_char
from trgc.tokenizer.load import build_table
from trgc.tokenizer.table import make_table
from trgc.tokenizer.verify import library_byte_alphabet, verify_table

tokenizers = pytest.importorskip("tokenizers", reason="the tokenizers library is the reference")

ROOT = Path(__file__).resolve().parents[1]
SYNTH = ROOT / "tokenizers" / "synthetic"


def _with_bytes(table, token_id: int, data: bytes):
    """A copy of `table` whose token `token_id` has other bytes (and the same metadata)."""
    pieces = [table.token_bytes(i) for i in range(table.vocab_size)]
    pieces[token_id] = data
    meta = {k: v for k, v in table.metadata.items() if k != "reports"}
    return make_table(
        pieces,
        table.kinds,
        special_tokens=dict(table.special_tokens),
        added_tokens=dict(table.added_tokens),
        eos_ids=table.eos_ids,
        metadata=meta,
    )


def test_the_library_alphabet_is_gpt2s_and_13_bytes_are_inferred():
    alphabet, inferred = library_byte_alphabet(tokenizers)
    assert alphabet == {c: b for b, c in enumerate(byte_to_char())}
    assert sorted(alphabet[c] for c in inferred) == [0xC0, 0xC1, *range(0xF5, 0x100)]


@pytest.mark.parametrize(("folder", "inferred"), [("json-bytelevel", 13), ("sp-bytefallback", 0)])
def test_every_model_id_is_compared(folder, inferred):
    path = SYNTH / folder / "tokenizer.json"
    table = build_table(path)
    library = tokenizers.Tokenizer.from_file(str(path))
    added = library.get_added_tokens_decoder()
    model_ids = library.get_vocab_size(with_added_tokens=True) - len(added)
    report = verify_table(path, table, "x")
    assert report.ok, report.to_dict()
    assert report.checked_token_bytes == model_ids
    assert report.inferred_token_bytes == inferred


@pytest.mark.parametrize(
    ("folder", "token", "piece"),
    [("json-bytelevel", 265, b" tha"), ("sp-bytefallback", 3 + 0x41, b"B")],
)
def test_a_wrong_token_the_probe_never_uses_is_found(folder, token, piece):
    """One token's bytes changed in the table; the probe text does not contain the token, so
    only the per-id comparison can see it."""
    path = SYNTH / folder / "tokenizer.json"
    table = _with_bytes(build_table(path), token, piece)
    report = verify_table(path, table, "{}")
    assert report.mismatches == []
    assert [p for p in report.problems if p.startswith(f"token {token} ")] == [
        f"token {token} ({tokenizers.Tokenizer.from_file(str(path)).id_to_token(token)!r}): "
        f"library bytes {build_table(path).token_bytes(token).hex()}, table {piece.hex()}"
    ]


def test_a_library_vocabulary_string_outside_the_alphabet_is_reported(tmp_path):
    doc = json.loads((SYNTH / "json-bytelevel" / "tokenizer.json").read_text(encoding="utf-8"))
    table = build_table(SYNTH / "json-bytelevel")
    vocab = doc["model"]["vocab"]
    name = next(k for k, v in vocab.items() if v == 268)
    vocab["n\u4e00me"] = vocab.pop(name)  # a CJK character is no byte-level character
    doc["model"]["merges"] = [
        m
        for m in doc["model"]["merges"]
        if name not in (m if isinstance(m, list) else m.split(" "))
        and "".join(m if isinstance(m, list) else m.split(" ")) != name
    ]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    report = verify_table(path, table, "x")
    assert any(
        p.startswith("token 268 ") and "outside its byte alphabet" in p for p in report.problems
    )


def test_qwen3_compares_all_its_ids():
    """The issue's example: Qwen3's tokenizer.json compared 0 token byte strings."""
    result = CliRunner().invoke(
        app, ["tokenizer", "verify", str(ROOT / "tokenizers" / "qwen3"), "--json"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["ok"] is True
    assert doc["checked_token_bytes"] == 151_643 and doc["inferred_token_bytes"] == 13
    human = CliRunner().invoke(app, ["tokenizer", "verify", str(ROOT / "tokenizers" / "qwen3")])
    assert "151,643 token byte strings compared" in human.stdout
