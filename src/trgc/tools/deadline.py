"""The wall-clock half of a tool request's `timeout_ms`.

The operation budget (`timeout_ms × OPERATIONS_PER_MS`, capped by `limits.operations`) makes
a run's outcome deterministic; it does not stop a slow host from taking longer than the
envelope allows. `Deadline` does: the envelope starts it before the tool runs, the tool calls
`check()` during long work (tinycalc once per operation), and the envelope checks once more
when the tool returns, so no result produced after `timeout_ms` is ever delivered. Running
out raises `WallClockExceeded`, which the envelope turns into the stop reason
`wall_clock_timeout` (status error, code `E_TOOL_TIMEOUT`, `deterministic: false`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], int]  # monotonic nanoseconds


class WallClockExceeded(Exception):
    """The tool ran past its wall-clock limit; `elapsed_ns` is how long it had run."""

    def __init__(self, elapsed_ns: int) -> None:
        super().__init__(f"ran {elapsed_ns} ns")
        self.elapsed_ns = elapsed_ns


class Deadline:
    """`timeout_ms` from now on `clock` (default `time.monotonic_ns`)."""

    def __init__(self, timeout_ms: int, clock: Clock | None = None) -> None:
        self.clock = clock or time.monotonic_ns
        self.timeout_ms = timeout_ms
        self.start = self.clock()
        self.limit = self.start + timeout_ms * 1_000_000

    def check(self) -> None:
        """Raise `WallClockExceeded` once the limit has passed."""
        now = self.clock()
        if now > self.limit:
            raise WallClockExceeded(now - self.start)
