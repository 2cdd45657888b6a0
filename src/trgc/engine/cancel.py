"""Cancellation inside long mask computations: `cancellation_checkpoint()` and its scopes.

The research report asks that a cancel request (Ctrl-C, a server dropping a request) be
acknowledged within 16 ms, and that the mask engine call `cancellation_checkpoint()` inside its
trie loop. A full trie walk can take several milliseconds and a precompute seconds, so the
kernel runs in chunks of at most `CHUNK_NODES` trie nodes (at most a few milliseconds of work) and the
engine calls `cancellation_checkpoint()` between chunks, between the frame entries of a
precompute and between the rounds of its state partition.

A checkpoint raises `Cancelled` (a `KeyboardInterrupt`, so code that already handles Ctrl-C
handles it too) when a check of the current thread's innermost
`cancellable(check)` scope returns true; between chunks the interpreter also runs pending
signal handlers, so a plain Ctrl-C (Python's default handler) lands there too. Whatever was
being computed is dropped with the exception: the engine publishes a mask, a frame entry or a
cache file only once it is complete, so a cancelled computation leaves no partial entry in the
in-memory cache, the disk cache or a `.trm` file.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

CHUNK_NODES = 1 << 15  # trie nodes a kernel call visits before returning to a checkpoint

_local = threading.local()


class Cancelled(KeyboardInterrupt):
    """A mask computation stopped at a checkpoint because its scope's check asked for it."""


def _checks() -> list[Callable[[], bool]]:
    found = getattr(_local, "checks", None)
    if found is None:
        found = _local.checks = []
    return found


@contextmanager
def cancellable(check: Callable[[], bool] | None) -> Iterator[None]:
    """Within the block, checkpoints on this thread raise `Cancelled` once `check()`
    returns true (`threading.Event.is_set`, a deadline test, ...). Scopes nest; None adds no
    check."""
    if check is None:
        yield
        return
    checks = _checks()
    checks.append(check)
    try:
        yield
    finally:
        checks.pop()


def cancellation_checkpoint() -> None:
    """Raise `Cancelled` if a check of an enclosing `cancellable` scope asks to stop."""
    for check in getattr(_local, "checks", ()):
        if check():
            raise Cancelled("cancelled at a mask-engine checkpoint")
