"""The compiled constraint held in memory: flat numpy tables, one per machine.

Symbols. A machine's input alphabet is the artifact's byte classes followed by its special
tokens: symbol `c` for `0 <= c < n_classes` stands for every byte `b` with
`byte_class[b] == c`; symbol `n_classes + k` stands for the special token `specials[k]`.

Actions. `Machine.next[s, sym]` says what state `s` does on symbol `sym`:
  * `v >= 0`  shift: consume the symbol and go to state `v` of the same machine;
  * `v == -1` no action: if `s` is accepting and a caller frame exists, return (pop) and let
    the caller handle the same symbol; otherwise the symbol is rejected;
  * `v <= -2` call: `calls[-2 - v] = (callee, return_state)`; the top frame becomes
    `(machine, return_state)`, `(callee, 0)` is pushed, and the same symbol is handled there.
The compiler guarantees (predictive check) that at most one of shift, call and return can
apply to any symbol in any configuration, so this table is the whole semantics.

Configuration. A stack of `(machine, state)` frames, machine 0 state 0 at the start, depth at
most `max_depth`. The input is accepted when every frame's state is accepting.
Every machine's start state is 0, and states are numbered breadth-first (canonical).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

NO_ACTION = -1


def call_action(index: int) -> int:
    """The `next` table entry encoding call edge `index`."""
    return -2 - index


def call_index(action: int) -> int:
    """The call edge index encoded by a `next` table entry `<= -2`."""
    return -2 - action


@dataclass(frozen=True, eq=False)
class Machine:
    """One DFA with call edges; machine 0 is the start rule."""

    name: str
    accepting: np.ndarray  # bool[n_states]
    next: np.ndarray  # int32[n_states, n_symbols]
    calls: np.ndarray  # int32[n_calls, 2]: (callee machine, return state)

    @property
    def n_states(self) -> int:
        return int(self.accepting.shape[0])


@dataclass(frozen=True, eq=False)
class Artifact:
    """A compiled, canonical constraint. `sha256` is the identity of its canonical bytes."""

    metadata: dict  # canonical-JSON-able; see docs/artifact-format.md
    byte_class: np.ndarray  # uint8[256]: byte -> class
    n_classes: int
    specials: tuple[str, ...]  # sorted special-token names
    machines: tuple[Machine, ...]
    max_depth: int
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def n_symbols(self) -> int:
        return self.n_classes + len(self.specials)

    @property
    def sha256(self) -> str:
        """The identity: `sha256:<hex>` of the canonical bytes (docs/artifact-format.md)."""
        from trgc.artifact.codec import identity

        return identity(self)

    def to_bytes(self) -> bytes:
        """The canonical uncompressed bytes (self-checked); their SHA-256 is the identity."""
        from trgc.artifact.codec import encode

        return encode(self)

    def save(self, path) -> str:
        """Write the zstd-framed file atomically; return the identity."""
        from trgc.artifact.codec import save_artifact

        return save_artifact(self, path)

    @classmethod
    def from_bytes(cls, data: bytes) -> Artifact:
        """Decode and validate canonical bytes or a whole artifact file's bytes."""
        from trgc.artifact.codec import from_file_bytes

        return from_file_bytes(data)

    def special_symbol(self, name: str) -> int | None:
        """The symbol of a special token by name, or None if the grammar never names it."""
        try:
            return self.n_classes + self.specials.index(name)
        except ValueError:
            return None
