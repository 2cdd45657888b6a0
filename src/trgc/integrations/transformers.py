"""`TrgcLogitsProcessor`: trgc token masks as a Hugging Face `LogitsProcessor` for `generate`.

Each call first advances every row's `Matcher` with the tokens `generate` appended since the
previous call (the token it chose last step), then writes the rows' packed int32 masks into one
`(batch, ceil(V/32))` buffer with `Matcher.fill_bitmask`, unpacks it with vectorised torch bit
operations (word >> bit & 1, no Python loop over the vocabulary) into an additive mask of 0 and
-inf, and returns `scores + mask`. Columns past the table's vocabulary (models pad their output
layer) are -inf too. Greedy search and sampling both see the masked scores, so either can only
pick allowed tokens; EOS is allowed exactly where the constraint accepts.

A row whose matcher terminated (EOS advanced) is left alone: `generate` pads finished rows.
`generate` never calls processors after its last token, so when it returns every matcher has
advanced all tokens but the last; `sync(sequences)` feeds the rest (EOS terminates a matcher).
A row whose constraint allows nothing raises `E_CONSTRAINT_EMPTY_SET` (no repair, no fallback).

    from trgc.integrations.transformers import TrgcLogitsProcessor
    processor = TrgcLogitsProcessor(trgc.Matcher(artifact, table), table)
    model.generate(ids, logits_processor=LogitsProcessorList([processor]), ...)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from trgc.engine.bits import n_words
from trgc.errors import TrgcError
from trgc.integrations.deps import require

_BASE: Any
try:  # subclass transformers' base class when it is importable (generate checks for it)
    from transformers import LogitsProcessor as _BASE
except ImportError:  # pragma: no cover - exercised only without the hf extra
    _BASE = object


def check_identity(matcher: Any, tokenizer: Any) -> None:
    """`E_TOKENIZER_IDENTITY_MISMATCH` unless `tokenizer` (a token table) is the one `matcher`
    is bound to, compared by SHA-256 identity."""
    ours = str(getattr(tokenizer, "sha256", tokenizer))
    bound = matcher.tokenizer_sha256
    if ours != bound:
        raise TrgcError(
            "E_TOKENIZER_IDENTITY_MISMATCH",
            f"the tokenizer {ours} is not the token table the matcher is bound to ({bound})",
            hint="build the Matcher with the model's own token table",
        )


class TrgcLogitsProcessor(_BASE):
    """Constrain `generate` with one `trgc.Matcher` per batch row (see the module docstring).

    `tokenizer` is the model's `TokenTable` (or its `sha256:` identity); it must be the table
    every matcher is bound to. Matchers must be fresh (nothing advanced) when `generate` starts:
    the first call takes the input length as the prompt length.
    """

    def __init__(self, matchers: Any | Sequence[Any], tokenizer: Any) -> None:
        self.matchers = list(matchers) if isinstance(matchers, list | tuple) else [matchers]
        if not self.matchers:
            raise TrgcError("E_USAGE", "TrgcLogitsProcessor needs at least one Matcher")
        for matcher in self.matchers:
            check_identity(matcher, tokenizer)
        self.vocab_size = int(self.matchers[0].vocab_size)
        self._buffer = np.zeros((len(self.matchers), n_words(self.vocab_size)), dtype=np.int32)
        self._prompt_length: int | None = None
        self._shifts = None

    def sync(self, sequences: Any) -> None:
        """Advance every row's matcher through `sequences` (prompt + generated ids, as
        `generate` returns them), e.g. with the final token after `generate` returned."""
        self._advance(sequences)

    def _advance(self, input_ids: Any) -> None:
        if self._prompt_length is None:
            self._prompt_length = int(input_ids.shape[1])
        for row, matcher in enumerate(self.matchers):
            generated = input_ids[row, self._prompt_length :].tolist()
            for token in generated[matcher.n_advanced :]:
                if matcher.is_terminated():
                    break
                matcher.advance(int(token))

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        torch = require("torch", "TrgcLogitsProcessor")
        if input_ids.shape[0] != len(self.matchers):
            raise TrgcError(
                "E_USAGE",
                f"batch of {input_ids.shape[0]} rows for {len(self.matchers)} matchers",
            )
        width = int(scores.shape[-1])
        if width < self.vocab_size:
            raise TrgcError(
                "E_MODEL_VOCAB",
                f"the model scores {width} tokens; the token table has {self.vocab_size}",
            )
        self._advance(input_ids)
        live = [not m.is_terminated() for m in self.matchers]
        for row, matcher in enumerate(self.matchers):
            if live[row]:
                matcher.fill_bitmask(self._buffer, row)
            else:
                self._buffer[row] = -1
        allowed = self.unpack(torch, torch.from_numpy(self._buffer).to(scores.device), width)
        empty = ~allowed.any(dim=-1)
        if bool(empty.any()):
            row = int(torch.nonzero(empty)[0, 0])
            raise TrgcError(
                "E_CONSTRAINT_EMPTY_SET",
                f"the constraint allows no token in row {row}, configuration {self.matchers[row].config_id()}",
            )
        mask = torch.zeros_like(scores).masked_fill_(~allowed, float("-inf"))
        return scores + mask

    def unpack(self, torch: Any, words: Any, width: int) -> Any:
        """bool (batch, width) from int32 words (batch, ceil(V/32)): bit t % 32 of word t // 32;
        columns >= vocab_size are False."""
        if self._shifts is None or self._shifts.device != words.device:
            self._shifts = torch.arange(32, dtype=torch.int32, device=words.device)
        bits = (words.unsqueeze(-1) >> self._shifts) & 1  # arithmetic shift; & 1 keeps bit k
        flat = bits.reshape(words.shape[0], -1)[:, : self.vocab_size].bool()
        if width == self.vocab_size:
            return flat
        pad = torch.zeros(
            (words.shape[0], width - self.vocab_size), dtype=torch.bool, device=words.device
        )
        return torch.cat([flat, pad], dim=1)
