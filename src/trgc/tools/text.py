"""`text.length@1.0.0` and `text.trim@1.0.0`: one operation per UTF-8 byte, charged up front."""

from __future__ import annotations

from trgc.errors import TrgcError
from trgc.tools.outcome import Checkpoint, Outcome, failure

# ASCII whitespace removed by text.trim: space, \t, \n, \v, \f, \r.
ASCII_WHITESPACE = " \t\n\v\f\r"


def _text_budget(text: str, budget: int) -> tuple[int, Outcome | None]:
    cost = len(text.encode("utf-8"))  # the input check refused lone surrogates
    if cost > budget:
        error = TrgcError(
            "E_LIMIT_OPERATIONS",
            f"the text needs {cost:,} operations (one per UTF-8 byte), over the budget of {budget:,}",
        )
        return cost, failure(error, 0)
    return cost, None


def text_length(data: dict, budget: int, checkpoint: Checkpoint) -> Outcome:
    checkpoint()
    cost, over = _text_budget(data["text"], budget)
    if over is not None:
        return over
    text = data["text"]
    return Outcome("ok", {"utf8_bytes": cost, "scalars": len(text)}, cost, "completed")


def text_trim(data: dict, budget: int, checkpoint: Checkpoint) -> Outcome:
    checkpoint()
    cost, over = _text_budget(data["text"], budget)
    if over is not None:
        return over
    return Outcome("ok", {"text": data["text"].strip(ASCII_WHITESPACE)}, cost, "completed")
