"""File-level entry points behind `trgc generate` and `trgc replay`: load, bind, run.

They open the artifact and the tokenizer, build a fresh `trgc.Matcher` over them, and call the
protocol-level `decode` / `replay`. Replay finds the artifact and tokenizer at the paths the
trace header records (relative to the trace file) unless others are given; either way their
SHA-256 identities must be the ones recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from trgc import __version__
from trgc.artifact.codec import load_artifact
from trgc.artifact.model import Artifact
from trgc.decode.generate import DecodeResult, Identity, decode
from trgc.decode.logits import parse_logits_spec
from trgc.decode.replay import ReplayReport, replay
from trgc.decode.sampler import SamplerSettings
from trgc.decode.trace import Trace, read_trace
from trgc.engine.binding import compiler_version
from trgc.engine.matcher import Matcher
from trgc.errors import TrgcError
from trgc.tokenizer.load import load_tokenizer
from trgc.tokenizer.table import TokenTable


@dataclass(frozen=True)
class Inputs:
    artifact: Artifact
    tokenizer: TokenTable
    artifact_path: str
    tokenizer_path: str

    def identity(self) -> Identity:
        return Identity(
            artifact_sha256=self.artifact.sha256,
            tokenizer_sha256=str(self.tokenizer.sha256),
            compiler=compiler_version(self.artifact),
            trgc_version=__version__,
            artifact_path=self.artifact_path,
            tokenizer_path=self.tokenizer_path,
        )

    def matcher(self) -> Matcher:
        return Matcher(self.artifact, self.tokenizer)


def open_inputs(artifact_path: Path | str, tokenizer_path: Path | str) -> Inputs:
    return Inputs(
        artifact=load_artifact(artifact_path),
        tokenizer=load_tokenizer(tokenizer_path),
        artifact_path=str(artifact_path),
        tokenizer_path=str(tokenizer_path),
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
    cancelled: Callable[[], bool] | None = None,
) -> DecodeResult:
    """`trgc generate`: decode under the artifact with logits from `random:SEED` or `npy:FILE`."""
    inputs = open_inputs(artifact_path, tokenizer_path)
    source = parse_logits_spec(logits, inputs.tokenizer.vocab_size)
    return decode(
        inputs.matcher(),
        inputs.tokenizer,
        source,
        settings=settings,
        seed=seed,
        max_tokens=max_tokens,
        trace_path=trace_path,
        identity=inputs.identity(),
        logits_description=source.description,
        on_bytes=on_bytes,
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
