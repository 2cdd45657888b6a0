"""`calculator.evaluate@1.0.0`: tinycalc-1 under the request's operation budget."""

from __future__ import annotations

from trgc.errors import TrgcError
from trgc.tools import tinycalc
from trgc.tools.outcome import Checkpoint, Outcome, failure


def calculator_evaluate(data: dict, budget: int, checkpoint: Checkpoint) -> Outcome:
    """Evaluate `data["expression"]`, charging tinycalc-1 operations (at most `budget`)."""
    limits = tinycalc.CalcLimits(operations=min(budget, tinycalc.DEFAULT_CALC_LIMITS.operations))
    try:
        result = tinycalc.evaluate(data["expression"], limits, checkpoint)
    except TrgcError as error:
        if error.code == "E_INTERNAL":
            raise
        return failure(error, 0)
    return Outcome(
        "ok", {"value": result.value, "exact": result.exact}, result.operations, "completed"
    )
