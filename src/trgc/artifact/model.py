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

Machines. A machine is a *rule* (the start rule or a recursive rule), a *shared* rule (a
non-recursive rule the front end keeps as one machine instead of inlining it at every use) or
a *repeat*: the body of a counted repetition `x{m,n}`, whose frame carries counters. The bounds
belong to the call edge (`call_bounds[k] = (rep_min, rep_max)`, `rep_max` 0 = unbounded), so
one body serves every bound it is used with. Only rule frames count toward `max_depth`; the
other two nest only as deeply as the grammar is written, which `frame_capacity` bounds.

Configuration. A stack of `(machine, state, left, needed)` frames, `(0, 0, 0, 0)` at the
start, with at most `max_depth` rule frames. A call to a repeat machine pushes
`(callee, 0, rep_max - 1, rep_min - 1)` (`left = UNLIMITED` when `rep_max` is 0): `left` is
how many more iterations may begin, `needed` how many must still follow the current one; both
are 0 in other frames. At an accepting state of a repeat frame, on a symbol with no action
there: if `left > 0` and state 0 has an action on the symbol, the frame *restarts*: state 0,
`left - 1` (unchanged when UNLIMITED), `max(needed - 1, 0)`, and the symbol is handled there;
otherwise it may return only when `needed == 0`. The input is accepted when every frame's
state is accepting and every `needed` is 0. Every machine's start state is 0, and states are
numbered breadth-first (canonical).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

NO_ACTION = -1
RULE, SHARED, REPEAT = 0, 1, 2  # machine kinds
KIND_NAMES = ("rule", "shared", "repeat")
UNLIMITED = 2**31 - 1  # `left` of a frame whose repetition has no maximum
MAX_BOUND = 2**30  # repetition bounds are below this (a format ceiling, whatever the limits say)


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
    kind: int = RULE
    call_bounds: np.ndarray | None = None  # int32[n_calls, 2]: (rep_min, rep_max), 0s if no repeat

    def __post_init__(self) -> None:
        if self.call_bounds is None:
            object.__setattr__(
                self, "call_bounds", np.zeros((int(np.asarray(self.calls).shape[0]), 2), np.int32)
            )

    @property
    def n_states(self) -> int:
        return int(self.accepting.shape[0])

    @property
    def depth_cost(self) -> int:
        """How much one frame of this machine counts toward `max_depth` (rules 1, others 0)."""
        return 1 if self.kind == RULE else 0


def entry_counters(rep_min: int, rep_max: int) -> tuple[int, int]:
    """(left, needed) of a frame pushed by a call with these bounds ((0, 0) for `(0, 0)`)."""
    if rep_min == 0:
        return (0, 0)
    return (UNLIMITED if rep_max == 0 else rep_max - 1, rep_min - 1)


def restarted(left: int, needed: int) -> tuple[int, int]:
    """(left, needed) after a restart (the caller checked `left > 0`)."""
    return (left if left == UNLIMITED else left - 1, max(needed - 1, 0))


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
