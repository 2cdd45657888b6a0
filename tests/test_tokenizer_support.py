"""Shared helpers for the tokenizer tests: paths, per-session table cache, trie invariants.

Building a real table takes 0.1-1 s, so every test file asks `table()` for it and the table is
built once per session. Real vocabularies that may not be committed are read from `../shared`.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from trgc.tokenizer import KIND_BYTE, KIND_NORMAL, TokenTable, build_table

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "tokenizers"
FIXTURES = REPO / "tokenizers"
SYNTH = FIXTURES / "synthetic"
PROBE = REPO / "src" / "trgc" / "tokenizer" / "probe.txt"

# name -> path of the source (committed fixture where allowed, else ../shared)
REAL = {
    "qwen3": FIXTURES / "qwen3",
    "qwen2": SHARED / "qwen2",
    "llama3-tiktoken": FIXTURES / "llama3" / "tokenizer.model.zst",
    "llama3-hf": FIXTURES / "llama3" / "tokenizer.json.zst",
    "gpt2-encoder": FIXTURES / "gpt2" / "encoder.json.zst",
    "gpt2-hf": SHARED / "gpt2" / "tokenizer.json.zst",
    "gpt2-tiktoken": FIXTURES / "gpt2" / "r50k_base.tiktoken",
    "deepseek-v3": FIXTURES / "deepseek-v3",
    "llama2": SHARED / "llama2" / "tokenizer.model",
    "mistral-v1": FIXTURES / "mistral" / "tokenizer.model.v1",
    "mistral-v3": FIXTURES / "mistral" / "mistral_instruct_tokenizer_240323.model.v3",
    "o200k": FIXTURES / "openai-tiktoken" / "o200k_base.tiktoken.zst",
    "cl100k": SHARED / "openai-tiktoken" / "cl100k_base.tiktoken.zst",
}
# the sidecar for rank files whose folder has none
SIDECARS = {"gpt2-tiktoken": FIXTURES / "openai-tiktoken" / "special_tokens.json"}


def real_path(name: str) -> Path:
    path = REAL[name]
    if not path.exists():
        pytest.skip(f"the real vocabulary is missing: {path}")
    return path


@cache
def table(name: str) -> TokenTable:
    """The table of a real vocabulary (by `REAL` name) or a synthetic folder name, built once."""
    if name in REAL:
        return build_table(real_path(name), specials=SIDECARS.get(name))
    return build_table(SYNTH / name)


def check_trie(tab: TokenTable) -> None:
    """Preorder layout, sorted children, CSR consistency, every token found by its bytes."""
    trie = tab.trie
    n = trie.n_nodes
    depth = trie.node_depth.astype(np.int64)
    end = trie.subtree_end.astype(np.int64)
    idx = np.arange(n)
    assert depth[0] == 0 and trie.parent[0] == -1
    # preorder: a child directly follows its parent or a sibling's subtree
    assert np.all(trie.parent[1:] < idx[1:])
    assert np.all(depth[1:] == depth[trie.parent[1:]] + 1)
    assert np.all((end > idx) & (end <= n))
    # subtree_end[n] is the first later node at depth <= depth[n]
    nxt = end[:-1]
    inside = nxt < n
    assert np.all(depth[nxt[inside]] <= depth[:-1][inside])
    assert np.all(
        depth[idx[:-1] + 1][end[:-1] > idx[:-1] + 1] == depth[:-1][end[:-1] > idx[:-1] + 1] + 1
    )
    # children sorted by byte, strictly (a byte leads to one child)
    for node in range(0, n, max(1, n // 2000)):
        lo, hi = trie.child_start[node], trie.child_start[node + 1]
        kids = trie.child_node[lo:hi]
        assert np.all(np.diff(trie.child_byte[lo:hi].astype(np.int64)) > 0)
        assert np.all(trie.parent[kids] == node)
        if hi > lo:
            assert kids[0] == node + 1
            assert np.all(end[kids[:-1]] == kids[1:])
            assert end[kids[-1]] == end[node]
    # every token with bytes ends at the node its bytes lead to; nothing else is in the trie
    with_bytes = np.flatnonzero(
        ((tab.kinds == KIND_NORMAL) | (tab.kinds == KIND_BYTE)) & (np.diff(tab.offsets) > 0)
    )
    assert sorted(trie.token_ids.tolist()) == with_bytes.tolist()
    for tok in with_bytes[:: max(1, with_bytes.size // 3000)].tolist():
        node = trie.find(tab.token_bytes(tok))
        assert node > 0 and tok in trie.tokens_at(node).tolist()
        assert int(trie.node_depth[node]) == len(tab.token_bytes(tok))
    for node in range(0, n, max(1, n // 500)):
        toks = trie.tokens_at(node)
        assert np.all(np.diff(toks) > 0)
        # the path bytes to the node are the tokens' bytes
        path = []
        cur = node
        while cur > 0:
            path.append(int(trie.node_byte[cur]))
            cur = int(trie.parent[cur])
        for tok in toks.tolist():
            assert tab.token_bytes(tok) == bytes(reversed(path))
