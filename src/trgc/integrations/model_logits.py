"""A real model as a trgc logits source: prompt encoding and incremental forward passes.

`ModelLogits` satisfies the decode layer's `LogitsSource` protocol (`source(step, tokens)` ->
float64 logits over the token table's ids): on the first call it runs the prompt plus any
generated tokens through the model, afterwards only the tokens generated since the previous
call, reusing the model's key/value cache. Sampling is never done here: the decode layer's
normative sampler picks the token, and the sidecar stores the logits it saw, so replay needs
neither torch nor the model.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from trgc.errors import TrgcError
from trgc.integrations.deps import require


def encode_prompt(hf_tokenizer: Any, prompt: str, *, system: str | None = None) -> list[int]:
    """Prompt token ids: through the tokenizer's chat template when it has one (a user turn,
    an optional system turn, and the assistant header), else the plain text encoding."""
    if getattr(hf_tokenizer, "chat_template", None):
        messages = [{"role": "user", "content": prompt}]
        if system is not None:
            messages.insert(0, {"role": "system", "content": system})
        text = hf_tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True
        )
        return list(hf_tokenizer(text, add_special_tokens=False)["input_ids"])
    return list(hf_tokenizer(prompt)["input_ids"])


def prompt_policy_sha256(hf_tokenizer: Any, *, system: str | None = None) -> str:
    """Identity of the prompt policy (what turns a user prompt into prompt ids, apart from the
    prompt itself): `sha256:` + SHA-256 of the canonical JSON of `{"chat_template": the
    tokenizer's template or null, "system": the system message or null,
    "add_generation_prompt": true}` — the inputs `encode_prompt` uses besides the prompt."""
    template = getattr(hf_tokenizer, "chat_template", None) or None
    document = {
        "chat_template": template if isinstance(template, str | dict) else None,
        "system": system,
        "add_generation_prompt": template is not None,
    }
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def prompt_sha256(ids: Sequence[int]) -> str:
    """Identity of a prompt for traces (which never hold prompt text): SHA-256 of the ids as
    little-endian int64."""
    return hashlib.sha256(np.asarray(ids, dtype="<i8").tobytes()).hexdigest()


class ModelLogits:
    """Logits of `model` after `prompt_ids` + the generated tokens (see the module docstring).

    `vocab_size` is the token table's; a model scoring fewer ids is `E_MODEL_VOCAB`, extra
    output columns (padding of the output layer) are dropped. `calls` and `forward_seconds`
    count the work done, for latency reports.
    """

    def __init__(self, model: Any, prompt_ids: Sequence[int], vocab_size: int, name: str) -> None:
        self.torch = require("torch", "running a model")
        self.model = model
        self.prompt_ids = [int(i) for i in prompt_ids]
        if not self.prompt_ids:
            raise TrgcError("E_USAGE", "the prompt encodes to no tokens")
        self.vocab_size = int(vocab_size)
        self.description = f"model:{name};prompt:sha256:{prompt_sha256(self.prompt_ids)}"
        params = inspect.signature(model.forward).parameters
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        self._keep_last = "logits_to_keep" in params
        self._cache = None
        self._fed = 0  # generated tokens already in the key/value cache

    def __call__(self, step: int, tokens: Sequence[int]) -> np.ndarray:
        torch = self.torch
        if self._cache is None:
            new = self.prompt_ids + [int(t) for t in tokens]
        else:
            new = [int(t) for t in tokens[self._fed :]]
        if not new:
            raise TrgcError("E_INTERNAL", f"step {step}: no new token to feed the model")
        kwargs = {
            "input_ids": torch.tensor([new], dtype=torch.long),
            "use_cache": True,
        }
        if self._keep_last:
            kwargs["logits_to_keep"] = 1
        if self._cache is not None:
            kwargs[self._cache_arg] = self._cache
        with torch.inference_mode():
            out = self.model(**kwargs)
        cache = getattr(out, "cache", None)
        self._cache = cache if cache is not None else out.past_key_values
        self._fed = len(tokens)
        row = out.logits[0, -1]
        if row.shape[0] < self.vocab_size:
            raise TrgcError(
                "E_MODEL_VOCAB",
                f"the model scores {row.shape[0]} tokens; the token table has {self.vocab_size}",
            )
        return row[: self.vocab_size].to(torch.float64).numpy()
