"""`trgc generate --model`: decode with a real model's logits through trgc's normative sampler.

The model only supplies logits (`ModelLogits`); masking, sampling, stopping and the trace are
the decode layer's, exactly as for the stand-in sources. The trace header records the model's
verified token table (its cached `.trt` path and identity), in its `logits` field the model's
name and the prompt's SHA-256 (never the prompt text), and in `composition` the weights hash
and the prompt-policy hash (chat template and system prompt); `timings` has the model load.
The sidecar holds every allowed logit, so `trgc replay` reproduces the run without torch or
the model.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from trgc import __version__
from trgc.artifact.codec import load_artifact
from trgc.decode.claims import artifact_kind
from trgc.decode.generate import DecodeResult, Identity, decode
from trgc.decode.sampler import SamplerSettings
from trgc.decode.session import elapsed_us
from trgc.engine.binding import compiler_version
from trgc.engine.diskcache import DiskCache
from trgc.engine.matcher import Matcher
from trgc.errors import TrgcError
from trgc.integrations.model_logits import ModelLogits, encode_prompt, prompt_policy_sha256
from trgc.integrations.smollm2 import LoadedModel, load_model
from trgc.tokenizer.load import load_tokenizer


def check_table(loaded: LoadedModel, tokenizer_path: Path | str | None) -> None:
    """A `--tokenizer` given beside `--model` must be the model's own verified table."""
    if tokenizer_path is None:
        return
    given = load_tokenizer(tokenizer_path)
    if given.sha256 != loaded.table.sha256:
        raise TrgcError(
            "E_TOKENIZER_IDENTITY_MISMATCH",
            f"--tokenizer is {given.sha256}, but the model's token table is {loaded.table.sha256}",
            source=str(tokenizer_path),
            hint="omit --tokenizer: the model's verified table is used",
        )


def generate_with_model(
    artifact_path: Path | str,
    model: str | LoadedModel,
    prompt: str,
    *,
    settings: SamplerSettings,
    seed: int,
    max_tokens: int,
    system: str | None = None,
    tokenizer_path: Path | str | None = None,
    trace_path: Path | str | None = None,
    on_bytes: Callable[[bytes], None] | None = None,
    on_step: Callable[[int], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    disk_cache: DiskCache | None = None,
) -> DecodeResult:
    """Generate under the artifact at `artifact_path` with `model` (a spec or a loaded model),
    with frame entries read from and published to `disk_cache` when given.

    `on_phase` is told what is happening before the first step ("loading the model",
    "binding the constraint", "generating"), for progress display."""

    def phase(text: str) -> None:
        if on_phase is not None:
            on_phase(text)

    start = time.perf_counter_ns()
    artifact = load_artifact(artifact_path)
    timings = {"artifact_load_us": elapsed_us(start)}
    if isinstance(model, str):
        phase("loading the model")
        loaded = load_model(model)
        timings["model_load_us"] = int(loaded.load_seconds * 1_000_000)
    else:
        loaded = model
    check_table(loaded, tokenizer_path)
    table = loaded.table
    phase("binding the constraint")
    start = time.perf_counter_ns()
    matcher = Matcher(artifact, table, disk_cache=disk_cache)
    timings["bind_us"] = elapsed_us(start)
    source = ModelLogits(
        loaded.model,
        encode_prompt(loaded.hf_tokenizer, prompt, system=system),
        table.vocab_size,
        loaded.name,
    )
    identity = Identity(
        artifact_sha256=artifact.sha256,
        tokenizer_sha256=str(table.sha256),
        compiler=compiler_version(artifact),
        trgc_version=__version__,
        artifact_path=str(artifact_path),
        tokenizer_path=str(loaded.table_path),
        model={"name": loaded.name, "weights_sha256": loaded.weights_sha256},
        prompt_policy_sha256=prompt_policy_sha256(loaded.hf_tokenizer, system=system),
        timings=timings,
        kind=artifact_kind(artifact.metadata),
    )
    phase("generating")
    return decode(
        matcher,
        table,
        source,
        settings=settings,
        seed=seed,
        max_tokens=max_tokens,
        trace_path=trace_path,
        identity=identity,
        logits_description=source.description,
        on_bytes=on_bytes,
        on_step=on_step,
        cancelled=cancelled,
    )
