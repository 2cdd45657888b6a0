"""tokenizer layer: vocabulary loaders, the token-byte table, its trie, probes.

table = load_tokenizer("tokenizers/qwen3.trt")     # or a tokenizer folder / file
table.token_bytes(i), table.kinds, table.trie, table.sha256
"""

from trgc.tokenizer.load import build_table, load_tokenizer
from trgc.tokenizer.table import KIND_BYTE, KIND_NORMAL, KIND_SPECIAL, KIND_UNUSED, TokenTable
from trgc.tokenizer.trie import Trie, build_trie

__all__ = [
    "KIND_BYTE",
    "KIND_NORMAL",
    "KIND_SPECIAL",
    "KIND_UNUSED",
    "TokenTable",
    "Trie",
    "build_table",
    "build_trie",
    "load_tokenizer",
]
