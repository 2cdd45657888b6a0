"""Membership of a byte string in an artifact's language, with a precise rejection report.

`check` sees only bytes. Special tokens have no bytes (DESIGN.md principle 6), so they can
never appear in the checked data: a grammar that requires a special token at some point
rejects there, and the report lists the special names that would have been allowed.
"""

from __future__ import annotations

from dataclasses import dataclass

from trgc.artifact.model import Artifact
from trgc.artifact.stepper import Frames, allowed_symbols, initial, is_accepting, is_viable, step


@dataclass(frozen=True)
class CheckResult:
    """The outcome of `check`.

    `offset` is where the input was rejected: the index of the first byte that could not be
    consumed, or `len(data)` when the input ended too early. At that point `allowed_bytes` and
    `allowed_specials` are what could have come next and `end_allowed` says whether ending there
    would have been accepted. For an accepted input `offset` is None and the `allowed_*` fields
    describe the end of the input (what could follow it).
    """

    accepted: bool
    offset: int | None
    reason: str  # "accepted", "unexpected_byte", "unexpected_end" or "dead_end"
    allowed_bytes: tuple[int, ...]
    allowed_specials: tuple[str, ...]
    end_allowed: bool
    frames: Frames
    prefix: bool

    def to_dict(self) -> dict:
        return {
            "accepted": self.accepted,
            "offset": self.offset,
            "reason": self.reason,
            "allowed_bytes": list(self.allowed_bytes),
            "allowed_specials": list(self.allowed_specials),
            "end_allowed": self.end_allowed,
            "frames": [list(frame) for frame in self.frames],
            "prefix": self.prefix,
        }


def _allowed(artifact: Artifact, frames: Frames) -> tuple[tuple[int, ...], tuple[str, ...]]:
    symbols = allowed_symbols(artifact, frames)
    classes = {s for s in symbols if s < artifact.n_classes}
    byte_class = artifact.byte_class.tolist()
    allowed_bytes = tuple(b for b in range(256) if byte_class[b] in classes)
    specials = tuple(
        artifact.specials[s - artifact.n_classes] for s in symbols if s >= artifact.n_classes
    )
    return allowed_bytes, specials


def check(artifact: Artifact, data: bytes, *, prefix: bool = False) -> CheckResult:
    """Is `data` in the language (or, with `prefix`, a prefix of some member)?

    With `prefix=True` the input is accepted when every byte was consumed and the configuration
    can still be completed (by bytes or special tokens) within `max_depth`.
    """
    frames = initial(artifact)
    byte_class = artifact.byte_class.tolist()
    for offset, byte in enumerate(data):
        after = step(artifact, frames, byte_class[byte])
        if after is None:
            return _rejected(artifact, frames, offset, "unexpected_byte", prefix)
        frames = after
    end = len(data)
    if prefix and not is_viable(artifact, frames):
        return _rejected(artifact, frames, end, "dead_end", prefix)
    if not prefix and not is_accepting(artifact, frames):
        return _rejected(artifact, frames, end, "unexpected_end", prefix)
    allowed_bytes, specials = _allowed(artifact, frames)
    return CheckResult(
        True,
        None,
        "accepted",
        allowed_bytes,
        specials,
        is_accepting(artifact, frames),
        frames,
        prefix,
    )


def _rejected(
    artifact: Artifact, frames: Frames, offset: int, reason: str, prefix: bool
) -> CheckResult:
    allowed_bytes, specials = _allowed(artifact, frames)
    return CheckResult(
        False,
        offset,
        reason,
        allowed_bytes,
        specials,
        is_accepting(artifact, frames),
        frames,
        prefix,
    )


def _byte_text(b: int) -> str:
    if 0x20 <= b < 0x7F and b not in (0x27, 0x5C):
        return f"'{chr(b)}'"
    return f"0x{b:02X}"


def describe_bytes(values: tuple[int, ...]) -> str:
    """A short human form of a set of bytes: runs become ranges, e.g. "'0'..'9', ',', 0x80..0xBF"."""
    runs: list[list[int]] = []
    for b in sorted(set(values)):
        if runs and runs[-1][1] == b - 1:
            runs[-1][1] = b
        else:
            runs.append([b, b])
    return ", ".join(
        _byte_text(lo) if lo == hi else f"{_byte_text(lo)}..{_byte_text(hi)}" for lo, hi in runs
    )
