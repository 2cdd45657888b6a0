"""What the mask engine derives from a token table alone, built once per tokenizer.

Binding an artifact to a tokenizer must not cost a pass over the vocabulary per artifact (time
to first mask, docs/mask-engine.md section 5): everything here depends on the token table only,
so it is built on the first binding and reused by every later one over the table, or over
another table object with the same identity (`vocab_tables`: kept while the table lives,
thread-safe; equal identities mean equal contents, hence equal tables and trie). A binding then
only patches in the few ids its grammar names as special symbols.

* `has_bytes`: normal or byte-fallback tokens with at least one byte (the trie's tokens);
* `byte_base`: `has_bytes` minus the EOS ids, the tokens matched by bytes when the grammar
  names no special token;
* the trie arrays in the dtypes the kernel reads, and `node_tok`: the one `byte_base` token
  ending at each trie node (-1 none, -2 several: read the CSR lists), so that the common node
  costs the kernel one load instead of a loop;
* the trie identity (`trie_id`, a SHA-256 of the trie arrays, computed on first use), which
  cache files and disk-cache entries name because their open roots are trie nodes;
* `root_weight`: how many trie nodes lie under each first byte, an upper bound on what a walk
  from a state visits (`engine/framecache.py` decides with it whether a frame's residual is
  worth describing).
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

T = TypeVar("T")

KIND_NORMAL, KIND_BYTE = 0, 1

# A table's VocabTables lives as long as the table object (`_by_table`); other table objects
# with the same identity find it while it lives (`_by_sha`), so loading a tokenizer twice does
# not build it twice, and it is never kept beyond the tables that use it.
_by_table: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # TokenTable -> VocabTables
_by_sha: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # sha256 -> VocabTables
_lock = threading.Lock()


@dataclass(frozen=True, eq=False)
class VocabTables:
    """A token table's engine-side tables (read-only arrays; see the module docstring)."""

    sha256: str
    vocab_size: int
    offsets: np.ndarray  # int64[V + 1]
    data: np.ndarray  # uint8
    has_bytes: np.ndarray  # bool[V]
    byte_base: np.ndarray  # bool[V]: has_bytes and not EOS
    eos_ids: np.ndarray  # int64, sorted
    node_byte: np.ndarray  # uint8[n_nodes]
    node_depth: np.ndarray  # int32[n_nodes]
    subtree_end: np.ndarray  # int32[n_nodes]
    parent: np.ndarray  # int32[n_nodes]
    token_start: np.ndarray  # int32[n_nodes + 1]
    token_ids: np.ndarray  # int32
    node_tok: np.ndarray  # int32[n_nodes]: the one byte_base token at the node, -1, or -2
    node_of: np.ndarray  # int32[V]: the trie node a token ends at (-1: not in the trie)
    longest: int  # the deepest trie node: the longest token in bytes
    root_weight: np.ndarray  # int64[256]: trie nodes under the first byte b (0: no token)
    _lazy: dict = field(default_factory=dict, repr=False)

    def derived(self, name: Hashable, build: Callable[[VocabTables], T]) -> T:
        """The table `name` derived from this token table, built by `build(self)` on first use
        and kept (as `Binding.derived` does per binding): shared by every artifact bound to it."""
        found = self._lazy.get(name)
        if found is None:
            found = self._lazy[name] = build(self)
        return found

    def trie_id(self) -> str:
        """`sha256:` of the trie arrays (computed on first use)."""
        found = self._lazy.get("trie_id")
        if found is None:
            digest = hashlib.sha256()
            for array in (self.node_byte, self.node_depth, self.subtree_end, self.token_start,
                          self.token_ids):  # fmt: skip
                digest.update(np.ascontiguousarray(array).tobytes())
            found = self._lazy["trie_id"] = "sha256:" + digest.hexdigest()
        return found

    def node_tokens(self, excluded: np.ndarray) -> np.ndarray:
        """`node_tok` for a binding whose byte tokens are `byte_base` minus `excluded` (the ids
        its grammar names as special symbols): the shared array when none is in the trie."""
        nodes = self.node_of[excluded] if excluded.size else excluded
        nodes = nodes[nodes >= 0] if nodes.size else nodes
        if not nodes.size:
            return self.node_tok
        out = self.node_tok.copy()
        hit = out[nodes] >= 0  # a single token at the node: it is the excluded one
        out[nodes[hit]] = -1
        out.flags.writeable = False  # nodes with several tokens (-2) check byte_token
        return out


def _read_only(array: np.ndarray, dtype) -> np.ndarray:
    out = np.ascontiguousarray(array, dtype=dtype)
    if out is array:
        out = out.view()
    out.flags.writeable = False
    return out


def _build(tokenizer) -> VocabTables:
    offsets = _read_only(tokenizer.offsets, np.int64)
    kinds = np.asarray(tokenizer.kinds)
    has_bytes = ((kinds == KIND_NORMAL) | (kinds == KIND_BYTE)) & (np.diff(offsets) > 0)
    eos = np.array(sorted({int(i) for i in tokenizer.eos_ids}), dtype=np.int64)
    byte_base = has_bytes.copy()
    byte_base[eos] = False
    trie = tokenizer.trie
    token_start = _read_only(trie.token_start, np.int32)
    token_ids = _read_only(trie.token_ids, np.int32)
    node_depth = _read_only(trie.node_depth, np.int32)
    n_nodes = int(node_depth.shape[0])
    counts = np.diff(token_start)
    node_tok = np.full(n_nodes, -1, dtype=np.int32)
    one = np.flatnonzero(counts == 1)
    first = token_ids[token_start[one]]
    node_tok[one] = np.where(byte_base[first], first, -1)
    node_tok[counts > 1] = -2
    node_of = np.full(int(tokenizer.vocab_size), -1, dtype=np.int32)
    node_of[token_ids] = np.repeat(np.arange(n_nodes, dtype=np.int32), counts)
    root_weight = np.zeros(256, dtype=np.int64)
    first = np.flatnonzero(node_depth == 1)
    subtree_end = _read_only(trie.subtree_end, np.int32)
    root_weight[np.asarray(trie.node_byte)[first]] = subtree_end[first] - first
    for array in (has_bytes, byte_base, eos, node_tok, node_of, root_weight):
        array.flags.writeable = False
    return VocabTables(
        sha256=str(tokenizer.sha256),
        vocab_size=int(tokenizer.vocab_size),
        offsets=offsets,
        data=_read_only(tokenizer.data, np.uint8),
        has_bytes=has_bytes,
        byte_base=byte_base,
        eos_ids=eos,
        node_byte=_read_only(trie.node_byte, np.uint8),
        node_depth=node_depth,
        subtree_end=subtree_end,
        parent=_read_only(trie.parent, np.int32),
        token_start=token_start,
        token_ids=token_ids,
        node_tok=node_tok,
        node_of=node_of,
        longest=int(node_depth.max()) if n_nodes else 0,
        root_weight=root_weight,
    )


def vocab_tables(tokenizer) -> VocabTables:
    """The `VocabTables` of a `TokenTable` (built on first use; kept while the table lives and
    shared with every table of the same identity)."""
    identity = str(tokenizer.sha256)
    with _lock:
        found = _by_table.get(tokenizer)
        if found is not None:  # the usual case, once per binding: nothing to record again
            return found
        found = _by_sha.get(identity)
    if found is None:
        found = _build(tokenizer)
    with _lock:
        found = _by_sha.setdefault(identity, found)
        _by_table[tokenizer] = found
    return found
