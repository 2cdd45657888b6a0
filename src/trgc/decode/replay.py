"""Replay a trace: recompute every mask and every draw and report the first divergence exactly.

Replay needs the artifact and tokenizer the trace names (checked by SHA-256, with the compiler
version the artifact records, before anything else: `E_COMPOSITION_MISMATCH`), and the logits
sidecar (checked against the SHA-256 in the end line: `E_SIDECAR_HASH`). It then runs the very
same step code as generation (`decode.step`) with the recorded seed and the stored logits, and
compares, per step, every field that the inputs determine — in the order allowed, mask_sha256,
config, logits (for a `random:SEED` trace, the stand-in's logits regenerated against the
sidecar's), stop, token, draw, rank, candidates, nan, intervention — and then every field of the
end line. Timings and cache hits (`MEASURED_STEP_FIELDS`) are measurements of one run and are
not compared; the header's informative provenance (`trace.PROVENANCE`) is reported, not compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trgc.decode.logits import RandomLogits
from trgc.decode.rng import Xoshiro256StarStar
from trgc.decode.sampler import (
    STOP_CANCELLED,
    STOP_MAX_TOKENS,
    SamplerSettings,
    StepLogits,
    summarize,
)
from trgc.decode.sidecar import payload_size, read_sidecar
from trgc.decode.step import (
    Constraint,
    DecodeState,
    Vocabulary,
    commit,
    decide,
    end_record,
    observe,
    step_record,
)
from trgc.decode.trace import END_FIELDS, MEASURED_STEP_FIELDS, STEP_FIELDS, Trace, validate_header
from trgc.errors import TrgcError

STEP_COMPARED: tuple[str, ...] = (
    "allowed",
    "mask_sha256",
    "config",
    "stop",
    "token",
    "draw",
    "rank",
    "candidates",
    "nan",
    "intervention",
)
END_COMPARED: tuple[str, ...] = (
    "stop",
    "completed",
    "accepting",
    "config",
    "steps",
    "tokens",
    "output_bytes",
    "output_sha256",
    "nan",
    "intervention",
    "intervention_steps",
    "failure_code",
    "partial_hex",
    "rng_draws",
)
assert set(STEP_COMPARED) | set(MEASURED_STEP_FIELDS) | {"type", "step"} == set(STEP_FIELDS)
assert set(END_COMPARED) | {"type", "sidecar_sha256"} == set(END_FIELDS)


@dataclass(frozen=True)
class Divergence:
    """The first difference: `step` is the step index, or None for the end line."""

    step: int | None
    field: str
    expected: object
    got: object

    def to_dict(self) -> dict:
        return {"step": self.step, "field": self.field, "expected": self.expected, "got": self.got}

    def __str__(self) -> str:
        where = "end line" if self.step is None else f"step {self.step}"
        return f"{where}, field {self.field}: expected {self.expected!r}, got {self.got!r}"


@dataclass(frozen=True)
class ReplayReport:
    identical: bool
    steps: int
    divergence: Divergence | None
    informative: dict | None = None  # header provenance shown, not compared (trace.PROVENANCE)

    def to_dict(self) -> dict:
        return {
            "identical": self.identical,
            "steps": self.steps,
            "divergence": None if self.divergence is None else self.divergence.to_dict(),
            "informative": self.informative or {},
        }


def check_identity(
    trace: Trace,
    *,
    artifact_sha256: str,
    tokenizer_sha256: str,
    compiler: str,
    vocab: Vocabulary,
) -> None:
    """Refuse to replay against an artifact or tokenizer other than the trace's (the compiler
    version is part of the artifact's identity: the header's must be the one it records)."""
    header = trace.header
    pairs = (
        ("artifact", header["artifact"]["sha256"], artifact_sha256),
        ("compiler", header["compiler"], compiler),
        ("tokenizer", header["tokenizer"]["sha256"], tokenizer_sha256),
        ("vocab_size", header["tokenizer"]["vocab_size"], int(vocab.vocab_size)),
        ("eos_ids", header["tokenizer"]["eos_ids"], sorted(int(i) for i in vocab.eos_ids)),
    )
    for what, recorded, given in pairs:
        if recorded != given:
            raise TrgcError(
                "E_COMPOSITION_MISMATCH",
                f"the trace was recorded with {what} {recorded}, but {given} was given",
                source=None if trace.path is None else str(trace.path),
                hint="replay with the artifact and tokenizer the trace header names",
                details={"what": what, "expected": recorded, "got": given},
            )


def _stand_in(trace: Trace, vocab: Vocabulary) -> RandomLogits | None:
    """The `random:SEED` stand-in model a trace names, regenerated to bind its logits."""
    description = trace.header["logits"]
    if not description.startswith("random:"):
        return None
    return RandomLogits(int(description.removeprefix("random:")), int(vocab.vocab_size))


def _same_logits(a: StepLogits, b: StepLogits) -> bool:
    """Bit-for-bit equality of two steps' sampler inputs (NaN payloads included)."""
    return (
        a.allowed.shape == b.allowed.shape
        and a.allowed.astype("<f8").tobytes() == b.allowed.astype("<f8").tobytes()
        and a.outside_nan == b.outside_nan
        and a.outside_posinf == b.outside_posinf
        and np.float64(a.outside_max).tobytes() == np.float64(b.outside_max).tobytes()
    )


def informative_fields(trace: Trace) -> dict:
    """The header provenance replay shows but cannot check (docs/trace-format.md)."""
    out = {"trgc_version": trace.header["trgc_version"]}
    if not trace.header["logits"].startswith("random:"):
        out["logits"] = trace.header["logits"]
    return out


def sidecar_path(trace: Trace, base: Path | None = None) -> Path:
    directory = (
        base if base is not None else (trace.path.parent if trace.path is not None else Path("."))
    )
    return directory / trace.header["sidecar"]["file"]


def replay(
    trace: Trace,
    constraint: Constraint,
    vocab: Vocabulary,
    *,
    artifact_sha256: str,
    tokenizer_sha256: str,
    compiler: str,
    sidecar: Path | str | None = None,
) -> ReplayReport:
    """Replay `trace` against a fresh `constraint` (start configuration) over `vocab`;
    `compiler` is the compiler version the artifact records."""
    validate_header(trace.header, 1, None if trace.path is None else str(trace.path))
    check_identity(
        trace,
        artifact_sha256=artifact_sha256,
        tokenizer_sha256=tokenizer_sha256,
        compiler=compiler,
        vocab=vocab,
    )
    settings = SamplerSettings.from_dict(trace.header["sampler"])
    stand_in = _stand_in(trace, vocab)
    informative = informative_fields(trace)
    path = Path(sidecar) if sidecar is not None else sidecar_path(trace)
    bound = payload_size([step["allowed"] for step in trace.steps])
    records = read_sidecar(path, trace.end["sidecar_sha256"], max_payload=bound)
    rng = Xoshiro256StarStar.from_seed(trace.header["rng"]["seed"])
    state = DecodeState.new(int(vocab.vocab_size))
    for expected in trace.steps:
        index = expected["step"]
        if state.stop is not None:
            return _diverged(
                index,
                "step",
                "a step line",
                f"no step: replay stopped with {state.stop!r}",
                informative,
            )
        if index >= trace.header["max_tokens"]:
            return _diverged(
                index,
                "step",
                "a step line",
                f"no step: max_tokens is {trace.header['max_tokens']}",
                informative,
            )
        obs = observe(constraint)
        record = next(records, None)
        if record is None or record[0] != index:
            raise TrgcError(
                "E_SIDECAR_FORMAT",
                f"the logits sidecar has no record for step {index}",
                source=str(path),
            )
        logits = record[1]
        observed = step_record(index, obs, _NO_DECISION, 0)
        for name in ("allowed", "mask_sha256", "config"):
            if observed[name] != expected[name]:
                return _diverged(index, name, expected[name], observed[name], informative)
        if logits.allowed.shape[0] != obs.ids.shape[0]:
            raise TrgcError(
                "E_SIDECAR_FORMAT",
                f"the sidecar holds {logits.allowed.shape[0]} logits for step {index}, which allows {obs.ids.shape[0]} tokens",
                source=str(path),
            )
        if stand_in is not None:
            regenerated = summarize(np.asarray(stand_in(index, list(state.tokens))), obs.ids)
            if not _same_logits(regenerated, logits):
                return _diverged(
                    index,
                    "logits",
                    f"the logits of {trace.header['logits']}",
                    "other logits in the sidecar",
                    informative,
                )
        decision, _ = decide(obs, logits, constraint, vocab, settings, state, rng)
        got = step_record(index, obs, decision, 0)
        for name in STEP_COMPARED:
            if got[name] != expected[name]:
                return _diverged(index, name, expected[name], got[name], informative)
        commit(constraint, vocab, state, decision)
    if next(records, None) is not None:
        raise TrgcError(
            "E_SIDECAR_FORMAT",
            f"the logits sidecar has records after step {len(trace.steps) - 1}",
            source=str(path),
        )
    if state.stop is None:
        if trace.end["stop"] == STOP_CANCELLED:
            state.stop = STOP_CANCELLED
        elif len(trace.steps) == trace.header["max_tokens"]:
            state.stop = STOP_MAX_TOKENS
    got_end = end_record(state, constraint, rng, len(trace.steps), trace.end["sidecar_sha256"])
    for name in END_COMPARED:
        if got_end[name] != trace.end[name]:
            return _diverged(
                None, name, trace.end[name], got_end[name], informative, steps=len(trace.steps)
            )
    return ReplayReport(
        identical=True, steps=len(trace.steps), divergence=None, informative=informative
    )


class _NoDecision:
    token = stop = draw = rank = intervention = None
    candidates = nan = 0


_NO_DECISION = _NoDecision()


def _diverged(
    step: int | None,
    name: str,
    expected: object,
    got: object,
    informative: dict,
    steps: int | None = None,
) -> ReplayReport:
    return ReplayReport(
        identical=False,
        steps=step if steps is None else steps,
        divergence=Divergence(step, name, expected, got),
        informative=informative,
    )
