"""What a registered tool's implementation returns, and the helpers every implementation shares.

An implementation takes the tool's input object (already checked against its input schema),
an operation budget and a `checkpoint` (called during long work; the envelope's wall-clock
limit raises from it), and returns an `Outcome`. Implementations (`calculator`, `text`) touch
no file, network, clock or environment themselves; each lives in its own module so that its
`implementation_hash` covers exactly the source that defines it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from trgc.errors import TrgcError

Checkpoint = Callable[[], None]


@dataclass(frozen=True)
class Outcome:
    """What a tool produced: status "ok" or "error", its content, operations used, why it stopped."""

    status: str
    content: dict
    operations: int
    stop_reason: str  # "completed", "tool_error", "operation_budget" or "wall_clock_timeout"
    deterministic: bool = True  # False only when the host's clock stopped the run


def failure(error: TrgcError, operations: int) -> Outcome:
    """The outcome of a tool that ran and failed on its input (status error)."""
    content: dict = {"error": {"code": error.code, "message": error.message}}
    if error.span is not None and error.span.offset is not None:
        content["error"]["offset"] = error.span.offset
    reason = "operation_budget" if error.code == "E_LIMIT_OPERATIONS" else "tool_error"
    return Outcome("error", content, operations, reason)
