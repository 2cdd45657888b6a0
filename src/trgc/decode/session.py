"""File-level entry points behind `trgc generate` and `trgc replay`: load, bind, run.

They open the artifact and the tokenizer, build a fresh `trgc.Matcher` over them, and call the
protocol-level `decode` / `replay`. Replay finds the artifact and tokenizer at the paths the
trace header records (relative to the trace file) unless others are given; either way their
SHA-256 identities must be the ones recorded. Loading and binding are timed for the trace
header (`timings`: informative, never replayed).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from trgc import __version__
from trgc.artifact.codec import load_artifact
from trgc.artifact.model import Artifact
from trgc.decode.claims import artifact_kind
from trgc.decode.generate import DecodeResult, Identity, decode
from trgc.decode.logits import parse_logits_spec
from trgc.decode.replay import ReplayReport, replay
from trgc.decode.sampler import SamplerSettings
from trgc.decode.trace import Trace, read_trace
from trgc.engine.binding import compiler_version
from trgc.engine.diskcache import DiskCache
from trgc.engine.matcher import Matcher
from trgc.errors import TrgcError
from trgc.tokenizer.load import load_tokenizer
from trgc.tokenizer.table import TokenTable


def elapsed_us(start_ns: int) -> int:
    """Microseconds since `start_ns` (a `time.perf_counter_ns()` reading)."""
    return (time.perf_counter_ns() - start_ns) // 1000


@dataclass
class Inputs:
    artifact: Artifact
    tokenizer: TokenTable
    artifact_path: str
    tokenizer_path: str
    timings: dict[str, int] = field(default_factory=dict)  # TIMING_FIELDS phases, µs

    def identity(self) -> Identity:
        return Identity(
            artifact_sha256=self.artifact.sha256,
            tokenizer_sha256=str(self.tokenizer.sha256),
            compiler=compiler_version(self.artifact),
            trgc_version=__version__,
            artifact_path=self.artifact_path,
            tokenizer_path=self.tokenizer_path,
            timings=dict(self.timings),
            kind=artifact_kind(self.artifact.metadata),
        )

    def matcher(self, disk_cache: DiskCache | None = None) -> Matcher:
        """A fresh matcher over the inputs (reading and filling `disk_cache` when given); its
        construction is the `bind_us` timing."""
        start = time.perf_counter_ns()
        matcher = Matcher(self.artifact, self.tokenizer, disk_cache=disk_cache)
        self.timings["bind_us"] = elapsed_us(start)
        return matcher


def open_inputs(artifact_path: Path | str, tokenizer_path: Path | str) -> Inputs:
    start = time.perf_counter_ns()
    artifact = load_artifact(artifact_path)
    artifact_us = elapsed_us(start)
    start = time.perf_counter_ns()
    tokenizer = load_tokenizer(tokenizer_path)
    return Inputs(
        artifact=artifact,
        tokenizer=tokenizer,
        artifact_path=str(artifact_path),
        tokenizer_path=str(tokenizer_path),
        timings={"artifact_load_us": artifact_us, "tokenizer_load_us": elapsed_us(start)},
    )


def generate_file(
    artifact_path: Path | str,
    tokenizer_path: Path | str,
    *,
    logits: str,
    settings: SamplerSettings,
    seed: int,
    max_tokens: int,
    trace_path: Path | str | None = None,
    on_bytes: Callable[[bytes], None] | None = None,
    on_step: Callable[[int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    disk_cache: DiskCache | None = None,
) -> DecodeResult:
    """`trgc generate`: decode under the artifact with logits from `random:SEED` or `npy:FILE`,
    with frame entries read from and published to `disk_cache` when given."""
    inputs = open_inputs(artifact_path, tokenizer_path)
    source = parse_logits_spec(logits, inputs.tokenizer.vocab_size)
    matcher = inputs.matcher(disk_cache)
    return decode(
        matcher,
        inputs.tokenizer,
        source,
        settings=settings,
        seed=seed,
        max_tokens=max_tokens,
        trace_path=trace_path,
        identity=inputs.identity(),
        logits_description=source.description,
        on_bytes=on_bytes,
        on_step=on_step,
        cancelled=cancelled,
    )


def _recorded_path(trace: Trace, key: str, given: Path | str | None) -> Path:
    if given is not None:
        return Path(given)
    recorded = trace.header[key]["path"]
    if recorded is None:
        raise TrgcError("E_USAGE", f"the trace records no {key} path; give --{key}")
    base = trace.path.parent if trace.path is not None else Path(".")
    return base / recorded


def replay_file(
    trace_path: Path | str,
    *,
    artifact_path: Path | str | None = None,
    tokenizer_path: Path | str | None = None,
) -> ReplayReport:
    """`trgc replay`: read the trace, open its inputs, replay every step."""
    trace = read_trace(trace_path)
    inputs = open_inputs(
        _recorded_path(trace, "artifact", artifact_path),
        _recorded_path(trace, "tokenizer", tokenizer_path),
    )
    return replay(
        trace,
        inputs.matcher(),
        inputs.tokenizer,
        artifact_sha256=inputs.artifact.sha256,
        tokenizer_sha256=str(inputs.tokenizer.sha256),
        compiler=compiler_version(inputs.artifact),
    )
