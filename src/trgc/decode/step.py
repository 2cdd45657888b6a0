"""One decoding step, shared by `generate` and `replay` so that both run the same code.

A step observes the constraint (mask, mask hash, configuration id), asks the sampler for a
decision, and then commits it atomically: the constraint advances first (it refuses a token
it does not allow, with no state change), and only then do the penalty counts, the output
bytes and the counters change. The decode layer needs only this small protocol:

* constraint: `allowed_tokens() -> bool[V]`, `advance(id)`, `is_accepting()`, `config_id()`,
  and optionally `last_source` or `last_cache_hit` (see `cache_hit`) — `trgc.Matcher` is one;
* vocabulary: `vocab_size`, `eos_ids`, `token_bytes(id)` — `trgc` token tables are one.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from trgc.decode.rng import Xoshiro256StarStar
from trgc.decode.sampler import (
    FAILURE_CODES,
    STOP_CANCELLED,
    STOP_EOS,
    STOP_EOS_FORCED,
    Decision,
    SamplerSettings,
    StepLogits,
    sample,
)


class Constraint(Protocol):
    def allowed_tokens(self) -> np.ndarray: ...
    def advance(self, token_id: int) -> None: ...
    def is_accepting(self) -> bool: ...
    def config_id(self) -> str: ...


class Vocabulary(Protocol):
    vocab_size: int
    eos_ids: tuple[int, ...]

    def token_bytes(self, i: int) -> bytes: ...


def mask_sha256(mask: np.ndarray) -> str:
    """SHA-256 (hex) of the packed mask: int32 little-endian words, bit t % 32 of word t // 32."""
    mask = np.asarray(mask, dtype=bool)
    padded = np.zeros(-(-mask.shape[0] // 32) * 32, dtype=bool)
    padded[: mask.shape[0]] = mask
    return hashlib.sha256(np.packbits(padded, bitorder="little").tobytes()).hexdigest()


@dataclass(frozen=True)
class Observation:
    """The constraint's state before a step: allowed ids (ascending) and their identities."""

    ids: np.ndarray
    mask_sha256: str
    config: str
    cache_hit: bool | None
    mask_us: int


def cache_hit(constraint: Constraint) -> bool | None:
    """Whether the last mask came from a cache: `last_source` ("cache", "frame" or "disk" = hit,
    "walk" = miss) as `trgc.Matcher` reports it, or a boolean `last_cache_hit`; else None."""
    source = getattr(constraint, "last_source", None)
    if source in ("cache", "frame", "disk"):
        return True
    if source == "walk":
        return False
    hit = getattr(constraint, "last_cache_hit", None)
    return hit if isinstance(hit, bool) else None


def observe(constraint: Constraint) -> Observation:
    start = time.perf_counter_ns()
    mask = np.asarray(constraint.allowed_tokens(), dtype=bool)
    mask_us = (time.perf_counter_ns() - start) // 1000
    return Observation(
        ids=np.flatnonzero(mask).astype(np.int64),
        mask_sha256=mask_sha256(mask),
        config=str(constraint.config_id()),
        cache_hit=cache_hit(constraint),
        mask_us=int(mask_us),
    )


@dataclass
class DecodeState:
    """What a run accumulates: generated ids (EOS excluded), bytes, penalty counts, counters."""

    counts: np.ndarray
    tokens: list[int] = field(default_factory=list)
    output: bytearray = field(default_factory=bytearray)
    nan: int = 0
    interventions: list[float] = field(default_factory=list)
    stop: str | None = None

    @classmethod
    def new(cls, vocab_size: int) -> DecodeState:
        return cls(counts=np.zeros(vocab_size, dtype=np.int64))

    def intervention(self) -> float | None:
        """The intervention metric I: the mean, summed in step order, of max unmasked logit
        minus the chosen token's logit over the steps where the sampler chose a token."""
        if not self.interventions:
            return None
        total = 0.0
        for value in self.interventions:
            total = total + value
        return total / len(self.interventions)


def decide(
    obs: Observation,
    logits: StepLogits,
    constraint: Constraint,
    vocab: Vocabulary,
    settings: SamplerSettings,
    state: DecodeState,
    rng: Xoshiro256StarStar,
) -> tuple[Decision, int]:
    """Run the sampler; returns the decision and the time it took in µs."""
    start = time.perf_counter_ns()
    decision = sample(
        obs.ids,
        logits,
        eos_ids=tuple(vocab.eos_ids),
        accepting=bool(constraint.is_accepting()),
        settings=settings,
        counts=state.counts,
        rng=rng,
    )
    return decision, int((time.perf_counter_ns() - start) // 1000)


def commit(
    constraint: Constraint, vocab: Vocabulary, state: DecodeState, decision: Decision
) -> bytes:
    """Advance constraint, then penalties, output and counters; returns the token's bytes."""
    data = b""
    if decision.token is not None:
        constraint.advance(decision.token)
        if decision.token not in vocab.eos_ids:
            data = vocab.token_bytes(decision.token)
            state.counts[decision.token] += 1
            state.tokens.append(decision.token)
            state.output += data
    state.nan += decision.nan
    if decision.intervention is not None:
        state.interventions.append(decision.intervention)
    if decision.stop is not None:
        state.stop = decision.stop
    return data


def step_record(index: int, obs: Observation, decision: Decision, sample_us: int) -> dict:
    return {
        "type": "step",
        "step": index,
        "allowed": int(obs.ids.shape[0]),
        "mask_sha256": obs.mask_sha256,
        "config": obs.config,
        "token": decision.token,
        "stop": decision.stop,
        "draw": decision.draw,
        "rank": decision.rank,
        "candidates": decision.candidates,
        "nan": decision.nan,
        "intervention": decision.intervention,
        "cache_hit": obs.cache_hit,
        "mask_us": obs.mask_us,
        "sample_us": sample_us,
    }


def end_record(
    state: DecodeState,
    constraint: Constraint,
    rng: Xoshiro256StarStar,
    steps: int,
    sidecar_sha256: str,
) -> dict:
    stop = state.stop or ""
    return {
        "type": "end",
        "stop": stop,
        "completed": stop in (STOP_EOS, STOP_EOS_FORCED),
        "accepting": bool(constraint.is_accepting()),
        "config": str(constraint.config_id()),
        "steps": steps,
        "tokens": len(state.tokens),
        "output_bytes": len(state.output),
        "output_sha256": hashlib.sha256(bytes(state.output)).hexdigest(),
        "nan": state.nan,
        "intervention": state.intervention(),
        "intervention_steps": len(state.interventions),
        "failure_code": FAILURE_CODES.get(stop),
        "partial_hex": bytes(state.output).hex() if stop == STOP_CANCELLED else None,
        "rng_draws": rng.draws,
        "sidecar_sha256": sidecar_sha256,
    }
