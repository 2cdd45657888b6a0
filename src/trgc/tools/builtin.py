"""The implementations behind the registered tools: pure functions of validated input.

Each takes the tool's input object (already checked against its input schema) and an
operation budget, and returns an `Outcome`. None touches files, the network, the clock or
the environment. Text tools charge one operation per UTF-8 byte of their input, checked
before they run; the calculator charges tinycalc-1 operations.
"""

from __future__ import annotations

from dataclasses import dataclass

from trgc.errors import TrgcError
from trgc.tools import tinycalc

# ASCII whitespace removed by text.trim: space, \t, \n, \v, \f, \r.
ASCII_WHITESPACE = " \t\n\v\f\r"


@dataclass(frozen=True)
class Outcome:
    """What a tool produced: status "ok" or "error", its content, operations used, why it stopped."""

    status: str
    content: dict
    operations: int
    stop_reason: str  # "completed", "tool_error" or "operation_budget"


def _failure(error: TrgcError, operations: int) -> Outcome:
    content: dict = {"error": {"code": error.code, "message": error.message}}
    if error.span is not None and error.span.offset is not None:
        content["error"]["offset"] = error.span.offset
    reason = "operation_budget" if error.code == "E_LIMIT_OPERATIONS" else "tool_error"
    return Outcome("error", content, operations, reason)


def _text_budget(text: str, budget: int) -> tuple[int, Outcome | None]:
    cost = len(text.encode("utf-8"))  # the input check refused lone surrogates
    if cost > budget:
        error = TrgcError(
            "E_LIMIT_OPERATIONS",
            f"the text needs {cost:,} operations (one per UTF-8 byte), over the budget of {budget:,}",
        )
        return cost, _failure(error, 0)
    return cost, None


def calculator_evaluate(data: dict, budget: int) -> Outcome:
    limits = tinycalc.CalcLimits(operations=min(budget, tinycalc.DEFAULT_CALC_LIMITS.operations))
    try:
        result = tinycalc.evaluate(data["expression"], limits)
    except TrgcError as error:
        if error.code == "E_INTERNAL":
            raise
        return _failure(error, 0)
    return Outcome(
        "ok", {"value": result.value, "exact": result.exact}, result.operations, "completed"
    )


def text_length(data: dict, budget: int) -> Outcome:
    cost, over = _text_budget(data["text"], budget)
    if over is not None:
        return over
    text = data["text"]
    return Outcome("ok", {"utf8_bytes": cost, "scalars": len(text)}, cost, "completed")


def text_trim(data: dict, budget: int) -> Outcome:
    cost, over = _text_budget(data["text"], budget)
    if over is not None:
        return over
    return Outcome("ok", {"text": data["text"].strip(ASCII_WHITESPACE)}, cost, "completed")
