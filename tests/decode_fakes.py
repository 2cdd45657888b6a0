"""A tiny stand-in for the decode protocol (constraint + vocabulary) used by the decode tests.

Language: `[` E (`,` E)* `]` with E = one or more digits, or `é` (which two of the tokens split
into its two UTF-8 bytes). EOS (id 10) is allowed only after the closing bracket.
"""

from __future__ import annotations

import numpy as np

TOKENS: tuple[bytes, ...] = (
    b"[",
    b"]",
    b",",
    b"1",
    b"23",
    b"\xc3",
    b"\xa9",
    b"\xc3\xa9",
    b",1",
    b"],",
    b"",
    b"",
)
EOS_ID = 10
SPECIAL_ID = 11


def _step(state: int, byte: int) -> int | None:
    if state == 0:
        return 1 if byte == ord("[") else None
    if state == 1:
        if chr(byte).isdigit():
            return 2
        return 3 if byte == 0xC3 else None
    if state == 2:
        if chr(byte).isdigit():
            return 2
        return {ord(","): 1, ord("]"): 5}.get(byte)
    if state == 3:
        return 4 if byte == 0xA9 else None
    if state == 4:
        return {ord(","): 1, ord("]"): 5}.get(byte)
    return None


class FakeVocab:
    vocab_size = len(TOKENS)
    eos_ids = (EOS_ID,)
    sha256 = "sha256:" + "ab" * 32

    def token_bytes(self, i: int) -> bytes:
        return TOKENS[i]


class FakeConstraint:
    """Byte DFA over the fake vocabulary; `eos_when_accepting=False` makes the end a dead end."""

    sha256 = "sha256:" + "cd" * 32

    def __init__(self, eos_when_accepting: bool = True) -> None:
        self.state = 0
        self.terminated = False
        self.eos_when_accepting = eos_when_accepting
        self.last_cache_hit = False

    def _after(self, token: int) -> int | None:
        state: int | None = self.state
        for byte in TOKENS[token]:
            state = _step(state, byte)
            if state is None:
                return None
        return state

    def allowed_tokens(self) -> np.ndarray:
        mask = np.zeros(len(TOKENS), dtype=bool)
        if self.terminated:
            return mask
        for token, data in enumerate(TOKENS):
            if data:
                mask[token] = self._after(token) is not None
        mask[EOS_ID] = self.eos_when_accepting and self.is_accepting()
        return mask

    def advance(self, token: int) -> None:
        if not self.allowed_tokens()[token]:
            raise ValueError(f"token {token} not allowed in state {self.state}")
        if token == EOS_ID:
            self.terminated = True
        else:
            self.state = self._after(token)

    def is_accepting(self) -> bool:
        return self.state == 5

    def config_id(self) -> str:
        return "terminated" if self.terminated else f"state:{self.state}"
