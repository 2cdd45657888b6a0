"""Where a decoding run's logits come from: a seeded stand-in model, a .npy file, or a callback.

A logits source is any callable `source(step, tokens) -> float array of shape (vocab_size,)`
where `tokens` are the ids generated so far; callers with a real model pass their own.

`random:SEED` is a stand-in model for demos and tests, deterministic on every machine: the
logit of token `i` at step `t` after previous token `p` (-1 at the start) is

    key   = s(SEED) ^ s(t * 2**32 + p + 1)      s(v) = SplitMix64 output for state v:
                                                 fin(v + 0x9E3779B97F4A7C15)
    x     = fin(i ^ key)                         fin = SplitMix64's finaliser (rng.py)
    u     = (x >> 11) * 2**-53                   uniform in [0, 1)
    logit = 12 * (u*u) * (u*u) - 4               a few tokens stand out

in wrapping uint64 arithmetic, then float64 with the operations in that order.

`npy:FILE` reads a float32/float64 array of shape (steps, vocab_size); row `t` is step `t`.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from trgc.errors import TrgcError
from trgc.limits import read_file

LogitsSource = Callable[[int, Sequence[int]], np.ndarray]
NPY_MAGIC = b"\x93NUMPY"

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GAMMA = 0x9E3779B97F4A7C15
_MASK64 = (1 << 64) - 1


def _mix64_array(z: np.ndarray) -> np.ndarray:
    z = z.astype(np.uint64, copy=True)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def _mix64(value: int) -> int:
    z = (value + _GAMMA) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


class RandomLogits:
    """The `random:SEED` stand-in model (see the module docstring for the exact formula)."""

    def __init__(self, seed: int, vocab_size: int) -> None:
        self.seed = seed
        self.vocab_size = vocab_size
        self._ids = np.arange(vocab_size, dtype=np.uint64)
        self.description = f"random:{seed}"

    def __call__(self, step: int, tokens: Sequence[int]) -> np.ndarray:
        previous = tokens[-1] if tokens else -1
        key = _mix64(self.seed) ^ _mix64(((step << 32) + previous + 1) & _MASK64)
        x = _mix64_array(self._ids ^ np.uint64(key))
        u = (x >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
        return 12.0 * (u * u) * (u * u) - 4.0


class NpyLogits:
    """Logits supplied per step from a (steps, vocab_size) array stored as .npy."""

    def __init__(self, path: Path | str, vocab_size: int) -> None:
        data = read_file(path, "logits", magic=NPY_MAGIC)
        if not data.startswith(NPY_MAGIC):  # np.load would take other bytes for a pickle
            raise TrgcError("E_LOGITS_SOURCE", "not a .npy array: no .npy magic", source=str(path))
        self.sha256 = hashlib.sha256(data).hexdigest()
        try:
            array = np.load(io.BytesIO(data), allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise TrgcError(
                "E_LOGITS_SOURCE", f"not a .npy array: {exc}", source=str(path)
            ) from None
        if (
            array.ndim != 2
            or array.shape[1] != vocab_size
            or array.dtype not in (np.float32, np.float64)
        ):
            raise TrgcError(
                "E_LOGITS_SOURCE",
                f"expected a float32/float64 array of shape (steps, {vocab_size}), got {array.dtype} {array.shape}",
                source=str(path),
            )
        self.array = array
        self.description = f"npy:sha256:{self.sha256}"

    def __call__(self, step: int, tokens: Sequence[int]) -> np.ndarray:
        if step >= self.array.shape[0]:
            raise TrgcError(
                "E_LOGITS_EXHAUSTED",
                f"the logits file has {self.array.shape[0]} rows; step {step} needs row {step}",
                hint="supply more rows or lower --max-tokens",
            )
        return self.array[step].astype(np.float64)


def parse_logits_spec(spec: str, vocab_size: int) -> RandomLogits | NpyLogits:
    """`random:SEED` or `npy:FILE` -> a logits source with a `description` for the trace."""
    kind, sep, value = spec.partition(":")
    if kind == "random" and sep and value.isdigit() and int(value) < 1 << 64:
        return RandomLogits(int(value), vocab_size)
    if kind == "npy" and sep and value:
        return NpyLogits(value, vocab_size)
    raise TrgcError(
        "E_LOGITS_SOURCE",
        f"unknown logits source {spec!r}",
        hint="use random:SEED (a seeded stand-in model) or npy:FILE",
    )
