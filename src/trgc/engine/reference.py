"""The reference masker: simulate every token's bytes from the configuration. It is the oracle.

Plain Python over `trgc.engine.config.step`, with no trie and no shortcut beyond memoising
`step` on (configuration, symbol) inside one call. The kernel must produce the same masks.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from trgc.engine.binding import Binding
from trgc.engine.config import Config, is_accepting, step


def allowed_mask(
    binding: Binding, config: Config | None, token_ids: Iterable[int] | None = None
) -> np.ndarray:
    """bool[V]: the tokens allowed at `config` (None = terminated: nothing is allowed).

    With `token_ids`, only those byte tokens are simulated (the others stay False); special
    tokens and EOS are always decided.
    """
    tables = binding.tables
    allowed = np.zeros(binding.vocab_size, dtype=bool)
    if config is None:
        return allowed
    memo: dict[tuple[Config, int], Config | None] = {}
    byte_class = tables.byte_class.tolist()
    ids = range(binding.vocab_size) if token_ids is None else token_ids
    for token in ids:
        if not binding.byte_token[token]:
            continue
        current: Config | None = config
        for byte in binding.token_bytes(token):
            key = (current, byte_class[byte])
            if key not in memo:
                memo[key] = step(tables, current, byte_class[byte])
            current = memo[key]
            if current is None:
                break
        allowed[token] = current is not None
    for token, sym in zip(binding.special_ids.tolist(), binding.special_syms.tolist(), strict=True):
        allowed[token] = step(tables, config, sym) is not None
    if is_accepting(tables, config):
        allowed[binding.eos_ids] = True
    return allowed
