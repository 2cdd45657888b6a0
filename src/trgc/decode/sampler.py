"""The normative sampler: one decoding step from a grammar mask and logits to a decision.

The order is the report's ("Sampling order and edge cases"), and every step is pure float64
arithmetic in a documented order (docs/sampling.md) so that replay is bit-identical:

 1. raw logits (`StepLogits`: the grammar-allowed tokens' logits plus a summary of the rest);
 2. NaN -> forbidden and counted; +inf anywhere -> `logit_positive_infinity` failure;
 3. grammar mask; EOS is removed unless the constraint is accepting;
    nothing left -> `constraint_empty_set`;
 4. policy mask (`banned_ids`); only EOS left -> stop without a draw (`eos_forced`);
    nothing left -> `sampling_failure`;
 5. penalties on the survivors only (repetition, then frequency, then presence);
 6. temperature (0 = argmax, exact ties to the smallest id, no draw);
 7. min-p; 8. top-k; 9. top-p; 10. normalise (sequential sum in ascending id order);
11. one draw: the first index whose cumulative weight exceeds `u * total`;
12. the caller advances constraint, penalties and trace together (`decode.loop`).

The sampler never sees the full vocabulary: it works on the allowed ids and a `StepLogits`
summary, which is exactly what the trace sidecar stores, so replay runs this same code.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import numpy as np

from trgc.decode.portable_math import exp_portable_array
from trgc.decode.rng import Xoshiro256StarStar, bits53_to_unit
from trgc.errors import TrgcError

# Stop reasons (trace `end.stop`); the first three complete normally.
STOP_EOS = "eos"  # EOS drawn (or chosen by argmax)
STOP_EOS_FORCED = "eos_forced"  # only EOS survived the masks: stop without a draw
STOP_MAX_TOKENS = "max_tokens"
STOP_EMPTY_SET = "constraint_empty_set"
STOP_SAMPLING_FAILURE = "sampling_failure"
STOP_POSITIVE_INFINITY = "logit_positive_infinity"
STOP_CANCELLED = "cancelled"
STOP_REASONS: tuple[str, ...] = (
    STOP_EOS,
    STOP_EOS_FORCED,
    STOP_MAX_TOKENS,
    STOP_EMPTY_SET,
    STOP_SAMPLING_FAILURE,
    STOP_POSITIVE_INFINITY,
    STOP_CANCELLED,
)
# Stop reasons that are explicit failures, with the error code a caller raises or reports.
FAILURE_CODES: dict[str, str] = {
    STOP_EMPTY_SET: "E_CONSTRAINT_EMPTY_SET",
    STOP_SAMPLING_FAILURE: "E_SAMPLING_FAILURE",
    STOP_POSITIVE_INFINITY: "E_LOGIT_POSITIVE_INFINITY",
}


# The settings that are real numbers: validated as finite and stored as Python floats.
FLOAT_SETTINGS = (
    "temperature",
    "top_p",
    "min_p",
    "repetition_penalty",
    "frequency_penalty",
    "presence_penalty",
)


def _token_id(value: object) -> bool:
    """An integer that fits the int64 arrays ids and counts are compared in."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 63


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


@dataclass(frozen=True)
class SamplerSettings:
    """Sampling parameters; neutral defaults (temperature 1, every filter and penalty off)."""

    temperature: float = 1.0
    top_k: int = 0  # 0 = off
    top_p: float = 1.0  # 1 = off
    min_p: float = 0.0  # 0 = off
    repetition_penalty: float = (
        1.0  # 1 = off; CTRL-style: positive logits divided, others multiplied
    )
    frequency_penalty: float = 0.0  # subtracted once per earlier occurrence
    presence_penalty: float = 0.0  # subtracted once if the token occurred
    banned_ids: tuple[int, ...] = ()  # policy mask, sorted ascending

    def __post_init__(self) -> None:
        problems = []
        for name in FLOAT_SETTINGS:
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
            ):
                problems.append(f"{name} must be a finite number, got {value!r}")
        if not all(_token_id(i) for i in self.banned_ids):
            problems.append(
                f"banned_ids must be token ids (integers in [0, 2**63)), got {_shown(self.banned_ids)}"
            )
        if problems:
            raise TrgcError("E_SAMPLER_SETTINGS", "; ".join(problems))
        object.__setattr__(self, "banned_ids", tuple(sorted(set(self.banned_ids))))
        checks = [
            (
                self.temperature == 0 or 1e-3 <= self.temperature <= 100,
                f"temperature must be 0 or in [0.001, 100], got {self.temperature!r}",
            ),
            (
                _token_id(self.top_k),
                f"top_k must be an integer in [0, 2**63), got {_shown(self.top_k)}",
            ),
            (0 < self.top_p <= 1, f"top_p must be in (0, 1], got {self.top_p!r}"),
            (0 <= self.min_p <= 1, f"min_p must be in [0, 1], got {self.min_p!r}"),
            (
                1 <= self.repetition_penalty <= 100,
                f"repetition_penalty must be in [1, 100], got {self.repetition_penalty!r}",
            ),
            (
                abs(self.frequency_penalty) <= 100,
                f"frequency_penalty must be in [-100, 100], got {self.frequency_penalty!r}",
            ),
            (
                abs(self.presence_penalty) <= 100,
                f"presence_penalty must be in [-100, 100], got {self.presence_penalty!r}",
            ),
        ]
        problems = [message for ok, message in checks if not ok]
        if problems:
            raise TrgcError("E_SAMPLER_SETTINGS", "; ".join(problems))
        for name in FLOAT_SETTINGS:
            object.__setattr__(self, name, float(getattr(self, name)))

    def to_dict(self) -> dict:
        out = asdict(self)
        out["banned_ids"] = list(self.banned_ids)
        return out

    @classmethod
    def from_dict(cls, data: dict) -> SamplerSettings:
        """Strict inverse of `to_dict`: every field required, unknown fields refused."""
        names = [f.name for f in fields(cls)]
        if not isinstance(data, dict) or sorted(data) != sorted(names):
            got = sorted(data) if isinstance(data, dict) else type(data).__name__
            raise TrgcError(
                "E_SAMPLER_SETTINGS",
                f"sampler settings must have exactly the fields {sorted(names)}, got {got}",
            )
        values = dict(data)
        if not isinstance(values["banned_ids"], list):
            raise TrgcError(
                "E_SAMPLER_SETTINGS", f"banned_ids must be a list, got {values['banned_ids']!r}"
            )
        values["banned_ids"] = tuple(values["banned_ids"])
        return cls(**values)


@dataclass(frozen=True)
class StepLogits:
    """What the sampler needs of one step's raw logits (and what the sidecar stores).

    `allowed` holds the raw float64 logits of the grammar-allowed ids in ascending id order;
    the other tokens are summarised: their NaN count, whether any is +inf, and the largest
    non-NaN value among them (-inf when there is none), used by the intervention metric.
    """

    allowed: np.ndarray
    outside_nan: int
    outside_posinf: bool
    outside_max: float


def summarize(logits: np.ndarray, allowed_ids: np.ndarray) -> StepLogits:
    """Split full-vocabulary logits into the allowed tokens' values and a summary of the rest."""
    logits = np.asarray(logits, dtype=np.float64)
    outside = np.ones(logits.shape[0], dtype=bool)
    outside[allowed_ids] = False
    rest = logits[outside]
    nan = np.isnan(rest)
    finite_or_inf = rest[~nan]
    return StepLogits(
        allowed=np.ascontiguousarray(logits[allowed_ids]),
        outside_nan=int(nan.sum()),
        outside_posinf=bool(np.any(finite_or_inf == np.inf)),
        outside_max=float(finite_or_inf.max()) if finite_or_inf.size else -math.inf,
    )


@dataclass(frozen=True)
class Decision:
    """The outcome of one step: a token to advance with, or a stop reason (or both, for EOS)."""

    token: int | None
    stop: str | None
    draw: int | None  # the 53-bit RNG output consumed, None when no draw happened
    rank: int | None  # rank of `token` among the grammar-allowed tokens by raw logit
    nan: int  # NaN logits seen at this step (whole vocabulary)
    candidates: int  # tokens with non-zero weight at the draw (1 for argmax)
    intervention: float | None  # max unmasked logit - raw logit of `token`


def _stop(reason: str, nan: int, token: int | None = None) -> Decision:
    return Decision(
        token=token, stop=reason, draw=None, rank=None, nan=nan, candidates=0, intervention=None
    )


def _rank(raw: np.ndarray, eligible: np.ndarray, index: int) -> int:
    """Tokens ranked by raw logit descending, ties by ascending id; `index` must be eligible."""
    value = raw[index]
    better = eligible & (raw > value)
    tied_before = eligible[:index] & (raw[:index] == value)
    return int(better.sum() + tied_before.sum())


def _top(weights: np.ndarray, m: int) -> np.ndarray:
    """The first `m` positions with positive weight in the order (weight descending, position
    ascending) — exactly the prefix a full stable sort would give, found with a partial
    partition: all weights above the m-th largest, then the tied ones with the smallest ids."""
    alive = np.flatnonzero(weights > 0)
    if m < alive.shape[0]:
        threshold = np.partition(weights[alive], alive.shape[0] - m)[alive.shape[0] - m]
        above = alive[weights[alive] > threshold]
        tied = alive[weights[alive] == threshold][: m - above.shape[0]]
        alive = np.concatenate([above, tied])
    return alive[np.lexsort((alive, -weights[alive]))][:m]


def sample(
    ids: np.ndarray,
    logits: StepLogits,
    *,
    eos_ids: tuple[int, ...],
    accepting: bool,
    settings: SamplerSettings,
    counts: np.ndarray,
    rng: Xoshiro256StarStar,
) -> Decision:
    """Run the normative order for one step. `ids` = the constraint's mask, ascending.

    `counts[token]` = how often `token` was generated before (for penalties). Consumes at most
    one RNG output, and none when it stops or the temperature is 0.
    """
    raw = np.asarray(logits.allowed, dtype=np.float64)
    if raw.shape != ids.shape:
        raise TrgcError("E_INTERNAL", f"{raw.shape[0]} logits for {ids.shape[0]} allowed tokens")
    if ids.shape[0] > 1 and not bool(np.all(ids[1:] > ids[:-1])):
        raise TrgcError("E_INTERNAL", "allowed token ids must be strictly ascending")
    # 2. NaN -> forbidden and counted; +inf -> failure
    is_nan = np.isnan(raw)
    nan = int(is_nan.sum()) + logits.outside_nan
    if logits.outside_posinf or bool(np.any(raw == np.inf)):
        return _stop(STOP_POSITIVE_INFINITY, nan)
    # 3. grammar mask, with EOS impossible before an accepting state
    is_eos = np.isin(ids, np.asarray(eos_ids, dtype=np.int64))
    grammar = np.ones(ids.shape[0], dtype=bool) if accepting else ~is_eos
    if not grammar.any():
        return _stop(STOP_EMPTY_SET, nan)
    # 4. policy masks; NaN tokens are forbidden here too
    keep = grammar & ~is_nan & ~np.isin(ids, np.asarray(settings.banned_ids, dtype=np.int64))
    if not keep.any():
        return _stop(STOP_SAMPLING_FAILURE, nan)
    if not (keep & ~is_eos).any():
        return _stop(STOP_EOS_FORCED, nan, token=int(ids[np.flatnonzero(keep)[0]]))
    # 5. penalties, survivors only
    z = np.where(keep, raw, -np.inf)
    seen = counts[ids].astype(np.float64)
    hit = keep & (seen > 0)
    if settings.repetition_penalty != 1.0:
        z = np.where(
            hit & (z > 0),
            z / settings.repetition_penalty,
            np.where(hit, z * settings.repetition_penalty, z),
        )
    if settings.frequency_penalty != 0.0:
        z = np.where(hit, z - settings.frequency_penalty * seen, z)
    if settings.presence_penalty != 0.0:
        z = np.where(hit, z - settings.presence_penalty, z)
    # 6. temperature
    if settings.temperature == 0.0:
        top = float(z.max())
        if not math.isfinite(top):
            return _stop(STOP_SAMPLING_FAILURE, nan)
        index = int(np.flatnonzero(z == top)[0])
        return _decide(ids, raw, grammar & ~is_nan, index, None, 1, nan, logits, eos_ids)
    z = z / settings.temperature
    top = float(z.max())
    if not math.isfinite(top):
        return _stop(STOP_SAMPLING_FAILURE, nan)
    weights = exp_portable_array(z - top)  # the maximum has weight exactly 1.0
    # 7. min-p, relative to the most probable token
    if settings.min_p > 0.0:
        weights[weights < settings.min_p] = 0.0
    # 8. top-k
    if 0 < settings.top_k < int(np.count_nonzero(weights)):
        keep_k = np.zeros(weights.shape[0], dtype=bool)
        keep_k[_top(weights, settings.top_k)] = True
        weights[~keep_k] = 0.0
    # 9. top-p: the shortest prefix (weight desc, id asc) whose running sum reaches top_p
    # times the total (summed in ascending id order); all tokens if rounding never reaches it
    if settings.top_p < 1.0:
        threshold = settings.top_p * float(np.cumsum(weights)[-1])
        alive = int((weights > 0).sum())
        m = 256
        while True:
            order = _top(weights, m)
            reached = np.flatnonzero(np.cumsum(weights[order]) >= threshold)
            if reached.size or m >= alive:
                break
            m *= 4
        if reached.size:
            keep_p = np.zeros(weights.shape[0], dtype=bool)
            keep_p[order[: int(reached[0]) + 1]] = True
            weights[~keep_p] = 0.0
    # 10. normalise: sequential sum in ascending id order
    cumulative = np.cumsum(weights)
    total = float(cumulative[-1])
    if not (total > 0.0 and math.isfinite(total)):
        return _stop(STOP_SAMPLING_FAILURE, nan)
    # 11. one draw
    bits = rng.next_bits53()
    target = bits53_to_unit(bits) * total
    index = int(np.searchsorted(cumulative, target, side="right"))
    if index >= cumulative.shape[0]:  # u * total rounded up to total: take the last live token
        index = int(np.flatnonzero(weights > 0)[-1])
    return _decide(
        ids, raw, grammar & ~is_nan, index, bits, int((weights > 0).sum()), nan, logits, eos_ids
    )


def _decide(ids, raw, eligible, index, bits, candidates, nan, logits, eos_ids) -> Decision:
    token = int(ids[index])
    finite_allowed = raw[~np.isnan(raw)]
    unmasked_max = max(
        logits.outside_max, float(finite_allowed.max()) if finite_allowed.size else -math.inf
    )
    return Decision(
        token=token,
        stop=STOP_EOS if token in eos_ids else None,
        draw=bits,
        rank=_rank(raw, eligible, index),
        nan=nan,
        candidates=candidates,
        intervention=float(unmasked_max - raw[index]),
    )
