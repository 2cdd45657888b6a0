"""`decode`: run a constrained generation loop and (optionally) publish its trace and sidecar.

The loop is: observe the constraint, take the step's logits from the source, sample, commit,
record. It stops on the sampler's stop reasons, after `max_tokens` steps (`max_tokens`), or
when cancelled (`cancelled`): a `KeyboardInterrupt` raised by the logits source, the
`cancelled()` poll between steps, or the mask engine's `cancellation_checkpoint()` inside a
long mask computation (the run is a `trgc.engine.cancel.cancellable(cancelled)` scope, so a
cancel request is acknowledged within a kernel chunk, not after the step). Cancellation keeps
every committed step, records the raw partial bytes and the configuration with
`completed: false`, and never closes anything; a mask cut short is dropped, never cached.

Trace and sidecar are written to temporary files and renamed into place when the run ends
(normally, by a stop reason, or cancelled); on any other error nothing is left behind, and the
error carries the run's identities and configuration (`details["run"]`, see `run_details`) so
that a failure document names what failed, as the report's failure taxonomy asks.

The header (`make_header`, the one place it is built) records the whole composition: artifact,
tokenizer, compiler, sampler, RNG, logits source, and (`Identity`) the model's weights hash, the
prompt-policy hash, every registered tool's implementation hash and the load and bind timings.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from trgc.decode import sidecar as sidecar_mod
from trgc.decode.claims import KIND_GRAMMAR, Claim, claim
from trgc.decode.logits import LogitsSource
from trgc.decode.rng import ALGORITHM, Xoshiro256StarStar
from trgc.decode.sampler import STOP_CANCELLED, STOP_MAX_TOKENS, SamplerSettings, summarize
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
from trgc.decode.trace import PROTOCOL, TIMING_FIELDS, Trace, write_trace
from trgc.engine.cancel import cancellable
from trgc.errors import TrgcError
from trgc.tools.registry import tool_identities

SIDECAR_SUFFIX = ".logits.zst"


@dataclass(frozen=True)
class Identity:
    """What a trace header says about the inputs (paths are stored relative to the trace).

    `model` is `{"name", "weights_sha256"}` for a real model (None for stand-in logits),
    `prompt_policy_sha256` the hash of its chat template and system prompt, `tools` the
    registered tools' identities, `timings` the µs of each TIMING_FIELDS phase that ran.
    `kind` is the artifact's language kind (`trgc.decode.claims`), for the run's claim label.
    """

    artifact_sha256: str
    tokenizer_sha256: str
    compiler: str
    trgc_version: str
    artifact_path: str | None = None
    tokenizer_path: str | None = None
    model: dict | None = None
    prompt_policy_sha256: str | None = None
    tools: tuple[dict, ...] = field(default_factory=lambda: tuple(tool_identities()))
    timings: dict[str, int] = field(default_factory=dict)
    kind: str = KIND_GRAMMAR


@dataclass
class DecodeResult:
    """The outcome of a run: raw output bytes are authoritative; `end` is the trace's end line."""

    output: bytes
    tokens: list[int]
    end: dict
    steps: list[dict] = field(default_factory=list)
    trace_path: Path | None = None
    header: dict | None = None  # what the trace header holds (None without an identity)
    kind: str = KIND_GRAMMAR

    @property
    def stop(self) -> str:
        return self.end["stop"]

    @property
    def completed(self) -> bool:
        return self.end["completed"]

    @property
    def claim(self) -> Claim:
        """What the run guarantees about `output` (`trgc.decode.claims`)."""
        return claim(self.stop, self.kind)


def sidecar_path_for(trace_path: Path) -> Path:
    return trace_path.with_name(trace_path.name + SIDECAR_SUFFIX)


def _relative(path: str | None, trace_path: Path) -> str | None:
    if path is None:
        return None
    try:
        return os.path.relpath(Path(path).resolve(), trace_path.resolve().parent)
    except ValueError:  # another drive (Windows): no relative path; replay then needs the option
        return None


def make_header(
    identity: Identity,
    vocab: Vocabulary,
    settings: SamplerSettings,
    *,
    seed: int,
    max_tokens: int,
    logits: str,
    trace_path: Path | None,
) -> dict:
    """The trace header (docs/trace-format.md); paths are relative to `trace_path` (None:
    the header of a run without a trace, for failure documents, keeps them as given)."""
    unknown = sorted(set(identity.timings) - set(TIMING_FIELDS))
    if unknown:
        raise TrgcError("E_INTERNAL", f"unknown timing phases {unknown}")
    return {
        "type": "header",
        "protocol": PROTOCOL,
        "trgc_version": identity.trgc_version,
        "compiler": identity.compiler,
        "artifact": {
            "sha256": identity.artifact_sha256,
            "path": _path(identity.artifact_path, trace_path),
        },
        "tokenizer": {
            "sha256": identity.tokenizer_sha256,
            "path": _path(identity.tokenizer_path, trace_path),
            "vocab_size": int(vocab.vocab_size),
            "eos_ids": sorted(int(i) for i in vocab.eos_ids),
        },
        "sampler": settings.to_dict(),
        "max_tokens": max_tokens,
        "rng": {"algorithm": ALGORITHM, "seed": seed},
        "logits": logits,
        "sidecar": {
            "file": sidecar_path_for(trace_path or Path("run.jsonl")).name,
            "format": sidecar_mod.FORMAT,
        },
        "composition": {
            "model": None if identity.model is None else dict(identity.model),
            "prompt_policy_sha256": identity.prompt_policy_sha256,
            "tools": [dict(t) for t in identity.tools],
        },
        "timings": {name: identity.timings.get(name) for name in TIMING_FIELDS},
    }


def _path(path: str | None, trace_path: Path | None) -> str | None:
    return path if trace_path is None else _relative(path, trace_path)


RUN_FIELDS = (
    "trgc_version",
    "compiler",
    "artifact",
    "tokenizer",
    "composition",
    "sampler",
    "max_tokens",
    "rng",
    "logits",
)


def run_identity(header: dict) -> dict:
    """The header's identities and configuration, without paths' context, timings or sidecar:
    what a result or failure document says about the run."""
    return {k: header[k] for k in RUN_FIELDS}


def run_details(header: dict, step: int | None, config: str | None) -> dict:
    """What a failure document says about the run: `run_identity`, the step it failed at and
    the constraint's configuration id."""
    return {**run_identity(header), "step": step, "config": config}


def decode(
    constraint: Constraint,
    vocab: Vocabulary,
    source: LogitsSource,
    *,
    settings: SamplerSettings,
    seed: int,
    max_tokens: int,
    trace_path: Path | str | None = None,
    identity: Identity | None = None,
    logits_description: str = "callback",
    on_bytes: Callable[[bytes], None] | None = None,
    on_step: Callable[[int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> DecodeResult:
    """Generate under `constraint` with logits from `source`; write a trace when asked.

    `on_bytes` receives each token's bytes, `on_step` the number of steps done (progress).
    A `TrgcError` raised during the run gets `details["run"]` (`run_details`) when the
    identity is known."""
    if (
        not isinstance(max_tokens, int)
        or isinstance(max_tokens, bool)
        or not 1 <= max_tokens < 1 << 63
    ):
        raise TrgcError(
            "E_SAMPLER_SETTINGS", f"max_tokens must be an integer in [1, 2**63), got {max_tokens!r}"
        )
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 1 << 64:
        raise TrgcError(
            "E_SAMPLER_SETTINGS", f"the seed must be an integer in [0, 2**64), got {seed!r}"
        )
    if trace_path is not None and identity is None:
        raise TrgcError("E_USAGE", "writing a trace needs the identities of artifact and tokenizer")
    rng = Xoshiro256StarStar.from_seed(seed)
    state = DecodeState.new(int(vocab.vocab_size))
    records: list[dict] = []
    trace_path = Path(trace_path) if trace_path is not None else None
    header = (
        None
        if identity is None
        else make_header(
            identity,
            vocab,
            settings,
            seed=seed,
            max_tokens=max_tokens,
            logits=logits_description,
            trace_path=trace_path,
        )
    )
    writer = (
        sidecar_mod.SidecarWriter(sidecar_path_for(trace_path)) if trace_path is not None else None
    )
    try:
        for index in range(max_tokens):
            try:
                if cancelled is not None and cancelled():
                    raise KeyboardInterrupt
                with cancellable(cancelled):  # checkpoints inside the mask computation
                    obs = observe(constraint)
                raw = np.asarray(source(index, list(state.tokens)), dtype=np.float64)
                if raw.shape != (vocab.vocab_size,):
                    raise TrgcError(
                        "E_LOGITS_SOURCE",
                        f"step {index}: expected logits of shape ({vocab.vocab_size},), got {raw.shape}",
                    )
                logits = summarize(raw, obs.ids)
                decision, sample_us = decide(obs, logits, constraint, vocab, settings, state, rng)
            except KeyboardInterrupt:
                state.stop = STOP_CANCELLED
                break
            data = commit(constraint, vocab, state, decision)
            records.append(step_record(index, obs, decision, sample_us))
            if writer is not None:
                writer.write(index, logits)
            if on_bytes is not None and data:
                on_bytes(data)
            if on_step is not None:
                on_step(index + 1)
            if state.stop is not None:
                break
        else:
            state.stop = STOP_MAX_TOKENS
        sidecar_sha256 = writer.close() if writer is not None else "0" * 64
    except BaseException as error:
        if writer is not None:
            writer.discard()
        if isinstance(error, TrgcError) and header is not None:
            error.details.setdefault(
                "run", run_details(header, len(records), str(constraint.config_id()))
            )
        raise
    end = end_record(state, constraint, rng, len(records), sidecar_sha256)
    result = DecodeResult(
        output=bytes(state.output),
        tokens=list(state.tokens),
        end=end,
        steps=records,
        trace_path=trace_path,
        header=header,
        kind=KIND_GRAMMAR if identity is None else identity.kind,
    )
    if trace_path is not None:
        try:
            write_trace(trace_path, Trace(header=header, steps=records, end=end))
        except BaseException:
            sidecar_path_for(trace_path).unlink(missing_ok=True)
            raise
    return result
