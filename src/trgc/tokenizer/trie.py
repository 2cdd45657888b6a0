"""The byte trie of a token table as flat arrays in depth-first preorder.

Nodes are the distinct non-empty prefixes of token bytes plus the root (node 0). Preorder with
children in ascending byte order is exactly the lexicographic order of those prefixes, so the
trie is built from the sorted distinct token byte strings: string `s_i` contributes the nodes for
its prefixes longer than its longest common prefix with `s_{i-1}`. A node's subtree is the
contiguous range `[n, subtree_end[n])`, which lets a walker skip a rejected child in O(1) (the
flat-array toktrie layout described in llguidance's docs/toktrie.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import compress

import numpy as np

from trgc.tokenizer.table import KIND_BYTE, KIND_NORMAL, TokenTable

_LCP_CHUNK = 16_384
_LCP_MATRIX_CELLS = 1 << 25


@dataclass(frozen=True, eq=False)
class Trie:
    """Flat preorder trie; see the module docstring for the layout."""

    node_byte: np.ndarray  # uint8[n_nodes]: byte on the edge into the node (root: 0)
    node_depth: np.ndarray  # int32[n_nodes]
    subtree_end: np.ndarray  # int32[n_nodes]: exclusive end of the subtree in preorder
    parent: np.ndarray  # int32[n_nodes]: parent node (root: -1)
    token_start: np.ndarray  # int32[n_nodes + 1]: CSR into token_ids
    token_ids: np.ndarray  # int32[n_tokens]: tokens ending exactly at each node, sorted
    child_start: np.ndarray  # int32[n_nodes + 1]: CSR into child_byte / child_node
    child_byte: np.ndarray  # uint8[n_nodes - 1]: children's bytes, ascending per node
    child_node: np.ndarray  # int32[n_nodes - 1]

    @property
    def n_nodes(self) -> int:
        return int(self.node_byte.shape[0])

    def tokens_at(self, node: int) -> np.ndarray:
        """Token ids whose bytes end exactly at `node`."""
        return self.token_ids[self.token_start[node] : self.token_start[node + 1]]

    def child(self, node: int, byte: int) -> int:
        """The child of `node` along `byte`, or -1."""
        lo, hi = int(self.child_start[node]), int(self.child_start[node + 1])
        k = lo + int(np.searchsorted(self.child_byte[lo:hi], byte))
        return int(self.child_node[k]) if k < hi and self.child_byte[k] == byte else -1

    def find(self, data: bytes) -> int:
        """The node reached by walking `data` from the root, or -1."""
        node = 0
        for byte in data:
            node = self.child(node, byte)
            if node < 0:
                return -1
        return node

    def stats(self) -> dict:
        """Node, leaf and token counts, depth and branching figures."""
        n_children = np.diff(self.child_start)
        internal = n_children[n_children > 0]
        return {
            "nodes": self.n_nodes,
            "leaves": int(np.count_nonzero(n_children == 0)),
            "tokens": int(self.token_ids.shape[0]),
            "max_depth": int(self.node_depth.max()) if self.n_nodes else 0,
            "root_children": int(n_children[0]) if self.n_nodes else 0,
            "max_children": int(n_children.max()) if self.n_nodes else 0,
            "mean_children_internal": round(float(internal.mean()), 3) if internal.size else 0.0,
            "nodes_with_one_child": int(np.count_nonzero(n_children == 1)),
        }


def build_trie(table: TokenTable) -> Trie:
    """The trie of every token that has bytes (normal, byte-fallback, non-special added)."""
    lengths = np.diff(table.offsets)
    with_bytes = np.flatnonzero(
        ((table.kinds == KIND_NORMAL) | (table.kinds == KIND_BYTE)) & (lengths > 0)
    )
    raw = table.data.tobytes()
    offsets = table.offsets.tolist()
    pieces = [raw[offsets[i] : offsets[i + 1]] for i in with_bytes.tolist()]
    order = sorted(range(len(pieces)), key=pieces.__getitem__)  # stable: equal bytes keep id order
    sorted_ids = with_bytes[np.asarray(order, dtype=np.int64)].astype(np.int32)
    sorted_pieces = [pieces[k] for k in order]
    all_len = np.fromiter(map(len, sorted_pieces), dtype=np.int64, count=len(sorted_pieces))
    all_lcp = _consecutive_lcp(sorted_pieces, all_len)
    is_new = np.ones(len(sorted_pieces), dtype=bool)  # first of each run of equal byte strings
    is_new[1:] = (all_lcp[1:] != all_len[1:]) | (all_len[1:] != all_len[:-1])
    distinct = list(compress(sorted_pieces, is_new.tolist()))
    n_str = len(distinct)
    str_len = all_len[is_new]
    lcp = all_lcp[is_new]  # a run's first string has the same lcp with the previous run
    new_nodes = str_len - lcp  # >= 1: sorted distinct strings never end inside the previous one
    first_node = np.empty(n_str, dtype=np.int64)
    if n_str:
        first_node[0] = 1
        np.cumsum(new_nodes[:-1], out=first_node[1:])
        first_node[1:] += 1
    n_nodes = 1 + int(new_nodes.sum())

    # node bytes and depths: string i contributes its bytes lcp_i .. len_i - 1
    owner = np.repeat(np.arange(n_str, dtype=np.int64), new_nodes)
    depth_minus_1 = np.arange(n_nodes - 1, dtype=np.int64) - np.repeat(
        first_node - 1 - lcp, new_nodes
    )
    flat = np.frombuffer(b"".join(distinct), dtype=np.uint8)
    str_off = np.zeros(n_str + 1, dtype=np.int64)
    np.cumsum(str_len, out=str_off[1:])
    node_byte = np.zeros(n_nodes, dtype=np.uint8)
    node_byte[1:] = flat[str_off[:-1][owner] + depth_minus_1]
    node_depth = np.zeros(n_nodes, dtype=np.int32)
    node_depth[1:] = depth_minus_1 + 1

    # subtree ends and parents. A node of string i at depth d stays open until the first later
    # string j whose common prefix with its predecessor is shorter than d: its subtree ends at
    # j's first node. The parent of string i's first node is the depth-lcp_i node of the
    # previous path, made by the last string k < i with lcp_k < lcp_i.
    jumps = _MinJumps(lcp.astype(np.int32))
    nxt = jumps.next_below(owner + 1, depth_minus_1 + 1)
    subtree_end = np.full(n_nodes, n_nodes, dtype=np.int32)
    closes = nxt < n_str
    subtree_end[1:][closes] = first_node[nxt[closes]]
    parent = np.arange(-1, n_nodes - 1, dtype=np.int32)  # a string's later nodes: n - 1
    inner = np.flatnonzero(lcp > 0)
    parent[first_node[lcp == 0]] = 0
    maker = jumps.prev_below(inner - 1, lcp[inner])
    parent[first_node[inner]] = first_node[maker] + lcp[inner] - lcp[maker] - 1

    # tokens per node: each distinct string ends at its last new node
    terminal = (
        (first_node + new_nodes - 1)[np.cumsum(is_new) - 1]
        if n_str
        else np.zeros(0, dtype=np.int64)
    )
    token_start = np.zeros(n_nodes + 1, dtype=np.int32)
    np.cumsum(np.bincount(terminal, minlength=n_nodes), out=token_start[1:])

    # children CSR: children of a node appear in preorder, i.e. ascending byte
    child_node = (np.argsort(parent[1:], kind="stable") + 1).astype(np.int32)
    child_start = np.zeros(n_nodes + 1, dtype=np.int32)
    np.cumsum(np.bincount(parent[1:], minlength=n_nodes), out=child_start[1:])
    return Trie(
        node_byte=node_byte,
        node_depth=node_depth,
        subtree_end=subtree_end,
        parent=parent,
        token_start=token_start,
        token_ids=sorted_ids,
        child_start=child_start,
        child_byte=node_byte[child_node],
        child_node=child_node,
    )


def _consecutive_lcp(strings: list[bytes], lengths: np.ndarray) -> np.ndarray:
    """lcp[i] = length of the longest common prefix of strings[i-1] and strings[i]; lcp[0] = 0."""
    n = len(strings)
    lcp = np.zeros(n, dtype=np.int64)
    for lo in range(1, n, _LCP_CHUNK):
        hi = min(n, lo + _LCP_CHUNK)
        rows = strings[lo - 1 : hi]
        width = int(lengths[lo - 1 : hi].max())
        if len(rows) * width > _LCP_MATRIX_CELLS:  # a few very long tokens: compare pairwise
            lcp[lo:hi] = [_lcp_pair(a, b) for a, b in zip(rows[:-1], rows[1:], strict=True)]
            continue
        matrix = np.zeros((len(rows), width), dtype=np.uint8)
        row_len = lengths[lo - 1 : hi]
        flat = np.frombuffer(b"".join(rows), dtype=np.uint8)
        row_idx = np.repeat(np.arange(len(rows)), row_len)
        col_idx = np.arange(flat.shape[0]) - np.repeat(np.cumsum(row_len) - row_len, row_len)
        matrix[row_idx, col_idx] = flat
        differ = matrix[1:] != matrix[:-1]
        first_diff = np.where(differ.any(axis=1), differ.argmax(axis=1), width)
        lcp[lo:hi] = np.minimum(first_diff, np.minimum(row_len[1:], row_len[:-1]))
    return lcp


def _lcp_pair(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    k = 0
    while k < n and a[k] == b[k]:
        k += 1
    return k


class _MinJumps:
    """Binary lifting over range minima of `values`: for many (start, d) queries at once, the
    nearest index at or after / at or before `start` whose value is below `d`.

    `levels[k][i] = min(values[i : i + 2**k])`; a query skips whole blocks whose minimum is
    >= d, largest block first, so each query takes log2(n) vectorised steps whatever d is.
    """

    def __init__(self, values: np.ndarray) -> None:
        self.n = int(values.shape[0])
        self.levels = [values]
        span = 1
        while 2 * span <= self.n:
            prev = self.levels[-1]
            self.levels.append(np.minimum(prev[:-span], prev[span:]))
            span *= 2

    def next_below(self, start: np.ndarray, d: np.ndarray) -> np.ndarray:
        """Smallest j >= start with values[j] < d, or n."""
        pos = start.astype(np.int64)
        for k in range(len(self.levels) - 1, -1, -1):
            level, span = self.levels[k], 1 << k
            fits = pos < level.shape[0]
            jump = fits & (level[np.where(fits, pos, 0)] >= d)
            pos += jump * span
        return pos

    def prev_below(self, start: np.ndarray, d: np.ndarray) -> np.ndarray:
        """Largest j <= start with values[j] < d (the caller guarantees one exists)."""
        pos = start.astype(np.int64)
        for k in range(len(self.levels) - 1, -1, -1):
            level, span = self.levels[k], 1 << k
            first = pos - span + 1
            fits = first >= 0
            jump = fits & (level[np.where(fits, first, 0)] >= d)
            pos -= jump * span
        return pos
