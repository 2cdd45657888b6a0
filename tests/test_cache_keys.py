"""Cache entry keys (`trgc.engine.diskcache.EntryKey`): the canonical JSON written out by hand
is byte for byte the general encoder's (sorted keys, no whitespace, non-ASCII kept), so an
address never changes with the way it is computed."""

from __future__ import annotations

import hashlib
import json

import pytest

from trgc.engine.diskcache import EntryKey

ODD = ["", "sha256:" + "ab" * 32, 'quote " and \\ backslash', "tab\tnew\nline\x00\x1f",
       "Zoë ü 漢字 \U0001f600", "artifact sha256:1 frame 2 trie 3"]  # fmt: skip


@pytest.mark.parametrize("text", ODD)
@pytest.mark.parametrize("fmt", [0, 2, 10**12])
def test_the_canonical_key_is_the_general_encoders(text, fmt):
    key = EntryKey("artifact-start", fmt, text, text[::-1], text + "p", text * 2)
    fields = {"kind": key.kind, "format": key.format, "tokenizer": key.tokenizer,
              "compiler": key.compiler, "policy": key.policy, "subject": key.subject}  # fmt: skip
    expected = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert key.canonical() == expected.encode()
    assert key.address() == hashlib.sha256(key.canonical()).hexdigest()
