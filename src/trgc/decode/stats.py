"""Aggregate statistics over traces, safe to publish: distributions and counts, never text.

The report ("Privacy-safe observability") allows public aggregates of allowed-set size, mask
time, failure frequency and the like, and forbids prompts, outputs, file names, paths and
per-session traces. `trace_stats` therefore reads only numeric step fields and stop reasons;
it never copies a path, a hash, a token id or a byte of output into its result.
"""

from __future__ import annotations

import math
from collections import Counter

from trgc.decode.sampler import STOP_REASONS
from trgc.decode.trace import Trace


def distribution(values: list[float]) -> dict:
    """count, min, p50, p90, p99, max (nearest-rank percentiles) and the sequential mean."""
    if not values:
        return {
            "count": 0,
            "min": None,
            "p50": None,
            "p90": None,
            "p99": None,
            "max": None,
            "mean": None,
        }
    ordered = sorted(values)
    n = len(ordered)

    def rank(p: float):
        return ordered[max(0, math.ceil(p * n) - 1)]

    total = 0.0
    for v in ordered:
        total = total + v
    return {
        "count": n,
        "min": ordered[0],
        "p50": rank(0.5),
        "p90": rank(0.9),
        "p99": rank(0.99),
        "max": ordered[-1],
        "mean": total / n,
    }


def trace_stats(traces: list[Trace]) -> dict:
    """The aggregate document printed by `trgc trace stats`."""
    allowed: list[float] = []
    mask_us: list[float] = []
    sample_us: list[float] = []
    ranks: list[float] = []
    step_interventions: list[float] = []
    run_interventions: list[float] = []
    hits = observed = nan = 0
    stops: Counter[str] = Counter()
    completed = 0
    for trace in traces:
        for step in trace.steps:
            allowed.append(step["allowed"])
            mask_us.append(step["mask_us"])
            sample_us.append(step["sample_us"])
            if step["rank"] is not None:
                ranks.append(step["rank"])
            if step["intervention"] is not None:
                step_interventions.append(step["intervention"])
            if step["cache_hit"] is not None:
                observed += 1
                hits += step["cache_hit"]
        end = trace.end
        stops[end["stop"] if end["stop"] in STOP_REASONS else "other"] += 1
        completed += end["completed"]
        nan += end["nan"]
        if end["intervention"] is not None:
            run_interventions.append(end["intervention"])
    intervention_total = 0.0
    for value in step_interventions:
        intervention_total = intervention_total + value
    return {
        "runs": len(traces),
        "steps": len(allowed),
        "completed": completed,
        "stop_reasons": {reason: stops[reason] for reason in sorted(stops)},
        "allowed_set_size": distribution(allowed),
        "mask_us": distribution(mask_us),
        "sample_us": distribution(sample_us),
        "chosen_rank": distribution(ranks),
        "cache_hit_rate": hits / observed if observed else None,
        "cache_observed_steps": observed,
        "nan_logits": nan,
        "intervention": {
            "overall": intervention_total / len(step_interventions) if step_interventions else None,
            "steps": len(step_interventions),
            "per_run": distribution(run_interventions),
        },
    }
