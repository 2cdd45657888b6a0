"""Peers run on the same schemas and instance bytes as trgc's coverage (`trgc coverage --peer`).

`LlguidancePeer` compiles each schema with llguidance's JSON compiler (compact separators, no
flexible whitespace, so that both accept the same spellings) and checks each canonical
instance by tokenizing it with a real vocabulary and feeding the tokens to an `LLMatcher`. The
peer is optional: `llguidance` is imported only when a peer is asked for.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from trgc.errors import TrgcError
from trgc.limits import read_file

PEERS = ("llguidance",)


@dataclass
class PeerSchema:
    """One schema compiled by a peer: None when the peer refused it (with its message)."""

    grammar: str | None
    error: str | None


class LlguidancePeer:
    """llguidance's JSON Schema compiler and matcher over one tokenizer."""

    name = "llguidance"

    def __init__(self, tokenizer_json: Path) -> None:
        try:
            import llguidance
        except ImportError:
            raise TrgcError(
                "E_USAGE",
                "--peer llguidance needs the llguidance package",
                hint="pip install 'llguidance>=1.9'",
            ) from None
        self._ll = llguidance
        raw = read_file(tokenizer_json, "tokenizer source")
        if tokenizer_json.name.endswith(".zst"):
            import zstandard

            raw = zstandard.ZstdDecompressor().decompress(raw, max_output_size=1 << 28)
        self.tokenizer = llguidance.LLTokenizer(raw.decode("utf-8"))
        self.version = llguidance.get_version() if hasattr(llguidance, "get_version") else "?"

    def compile(self, schema_text: bytes) -> PeerSchema:
        ll = self._ll
        try:
            grammar = ll.LLMatcher.grammar_from_json_schema(
                json.loads(schema_text), defaults={"whitespace_flexible": False}
            )
        except (ValueError, TypeError) as exc:
            return PeerSchema(None, str(exc))
        message = ll.LLMatcher.validate_grammar(grammar, self.tokenizer)
        if message:
            return PeerSchema(None, message)
        matcher = ll.LLMatcher(self.tokenizer, grammar, log_level=0)
        if matcher.is_error():
            return PeerSchema(None, matcher.get_error())
        return PeerSchema(grammar, None)

    def accepts(self, compiled: PeerSchema, text: bytes) -> bool:
        assert compiled.grammar is not None
        matcher = self._ll.LLMatcher(self.tokenizer, compiled.grammar, log_level=0)
        tokens = self.tokenizer.tokenize_bytes(text)
        return bool(matcher.consume_tokens(tokens)) and matcher.is_accepting()


def make_peer(name: str, tokenizer_json: Path) -> LlguidancePeer:
    if name not in PEERS:
        raise TrgcError(
            "E_USAGE", f"unknown peer {name!r}", hint=f"known peers: {', '.join(PEERS)}"
        )
    return LlguidancePeer(tokenizer_json)
