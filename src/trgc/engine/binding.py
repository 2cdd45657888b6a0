"""The binding of one artifact to one token table: everything a mask needs, as flat arrays.

Special-token policy (`SPECIAL_POLICY`, part of every cache key):
  * a name in the grammar's `special("...")` is looked up in the tokenizer's special tokens,
    then in its added tokens (Qwen's `<tool_call>` is an added token with special=false); the
    id found is matched *only* as that grammar symbol, never by its bytes. A name the tokenizer
    lacks is `E_SPECIAL_TOKEN_MISSING` when the binding is made;
  * EOS ids are allowed in every accepting configuration, where they end the sequence, and are
    never matched by bytes. An EOS id that the grammar also names with `special()` is first
    that grammar symbol: where the grammar admits it, advancing it steps the grammar; where it
    does not but the configuration is accepting, it ends the sequence;
  * every other token with kind normal or byte-fallback and at least one byte is matched by
    its exact bytes; special tokens the grammar does not name and unused ids are never allowed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from trgc.artifact.model import Artifact
from trgc.engine.config import Tables, check_longest, flatten
from trgc.engine.vocab import VocabTables, vocab_tables
from trgc.errors import TrgcError

T = TypeVar("T")

SPECIAL_POLICY = "trgc-specials-1"
_NONE = np.zeros(0, dtype=np.int64)
_NONE.flags.writeable = False


def compiler_version(artifact: Artifact) -> str:
    """The compiler version recorded in the artifact's metadata ('' when absent)."""
    meta = artifact.metadata or {}
    for key in ("compiler_version", "compiler"):
        value = meta.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, dict) and isinstance(value.get("version"), str):
            return value["version"]
    return ""


@dataclass(frozen=True, eq=False)
class Binding:
    """An artifact bound to a token table (immutable; shared by every matcher over the pair).

    The token-table arrays are the tokenizer's `VocabTables` (shared by every binding over the
    table); only `byte_token` and `node_tok` are the binding's own, and only when its grammar
    names a special token that the table spells with bytes. The artifact's global-state
    `tables` are flattened when first read, not when the binding is made: a mask read from a
    store keyed by `key` needs none of them (nor the artifact's machines), so a warm matcher's
    first mask costs nothing proportional to the artifact."""

    artifact: Artifact
    vocab: VocabTables
    vocab_size: int
    offsets: np.ndarray  # int64[V + 1]: token bytes in `data`
    data: np.ndarray  # uint8
    byte_token: np.ndarray  # bool[V]: matched by bytes
    special_ids: np.ndarray  # int64[k]: token id of `artifact.specials[k]`
    special_syms: np.ndarray  # int64[k]: grammar symbol of `artifact.specials[k]`
    eos_ids: np.ndarray  # int64: ids allowed exactly in accepting configurations
    node_byte: np.ndarray
    node_depth: np.ndarray
    subtree_end: np.ndarray
    parent: np.ndarray
    token_start: np.ndarray
    token_ids: np.ndarray
    node_tok: np.ndarray  # int32[n_nodes]: the one byte token at a node, -1 none, -2 several
    trie_depth: int  # deepest trie node (longest token in bytes)
    key: tuple[str, str, str, str]  # (artifact, tokenizer, compiler version, special policy)
    _lazy: dict = field(default_factory=dict, repr=False)  # derived tables built on first use

    def derived(self, name: str, build: Callable[[Binding], T]) -> T:
        """The table `name` derived from this binding, built by `build(self)` on first use and
        kept (the kernel's packed tables and the like: nothing is built before it is needed)."""
        found = self._lazy.get(name)
        if found is None:
            found = self._lazy[name] = build(self)
        return found

    @property
    def tables(self) -> Tables:
        """The artifact's tables over global states (`flatten`, memoised on the artifact)."""
        found = self._lazy.get("tables")
        if found is None:
            found = self._lazy["tables"] = flatten(self.artifact)
        return found

    @property
    def n_words(self) -> int:
        return (self.vocab_size + 31) // 32

    def trie_id(self) -> str:
        """`sha256:` of the trie arrays (computed once per tokenizer). Precomputed open roots
        name trie nodes, so a cache file is valid only over the exact trie layout it was built
        on; in memory the tokenizer identity suffices (one process, one trie builder)."""
        return self.vocab.trie_id()

    @property
    def file_key(self) -> tuple[str, str, str, str, str]:
        """`key` plus the trie identity: what a `.trm` cache file must match."""
        return (*self.key, self.trie_id())

    def slices(self):
        """The `trgc.engine.slices.SliceTables` of this binding (built on first use).

        Which tokens spell a slice depends on the tokenizer alone (`RawSlices`, kept in its
        `VocabTables`), and so do the specialised tables of every binding whose grammar names
        no special token spelled with bytes: those share one `SliceTables` per tokenizer."""
        tables = self._lazy.get("slices")
        if tables is None:
            from trgc.engine.slices import build_raw, specialise

            shared = self.vocab._lazy
            raw = shared.get("slices.raw")
            if raw is None:
                raw = shared.setdefault("slices.raw", build_raw(self.vocab))
            if self.byte_token is self.vocab.byte_base:
                tables = shared.get("slices.base")
                if tables is None:
                    tables = shared.setdefault("slices.base", specialise(raw, self.byte_token))
            else:
                tables = specialise(raw, self.byte_token)
            self._lazy["slices"] = tables
        return tables

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes of token `token_id`, read through memoryviews (made on first use): a
        numpy slice between two numpy items cost three times as much, on every `advance`."""
        spans = self._lazy.get("spans")
        if spans is None:
            spans = self._lazy["spans"] = (memoryview(self.data), memoryview(self.offsets))
        data, offsets = spans
        return data[offsets[token_id] : offsets[token_id + 1]].tobytes()


def _special_id(tokenizer, name: str) -> int:
    for table in (tokenizer.special_tokens, tokenizer.added_tokens):
        if name in table:
            return int(table[name])
    raise TrgcError(
        "E_SPECIAL_TOKEN_MISSING",
        f"the grammar names special token {name!r}, which the tokenizer does not have",
        hint="use a tokenizer that defines it, or change the grammar's special(...)",
    )


def bind(artifact: Artifact, tokenizer) -> Binding:
    """Bind `artifact` to `tokenizer` (a `TokenTable`); memoised on the artifact per tokenizer.
    The token-table part is the tokenizer's `VocabTables`, built once per table: a binding
    costs no pass over the vocabulary unless its grammar names special tokens."""
    memo_key = ("engine.binding", tokenizer.sha256)
    cached = artifact._cache.get(memo_key)
    if cached is not None:
        return cached
    vocab = vocab_tables(tokenizer)
    byte_token, node_tok = vocab.byte_base, vocab.node_tok
    if artifact.specials:
        special_ids = np.array([_special_id(tokenizer, n) for n in artifact.specials],
                               dtype=np.int64)  # fmt: skip
        special_syms = np.arange(len(artifact.specials), dtype=np.int64) + artifact.n_classes
        spelled = special_ids[vocab.byte_base[special_ids]]
        if spelled.size:
            byte_token = vocab.byte_base.copy()
            byte_token[special_ids] = False
            byte_token.flags.writeable = False
            node_tok = vocab.node_tokens(spelled)
    else:  # most schemas: nothing of the binding's own, the token table's arrays as they are
        special_ids = special_syms = _NONE
    check_longest(vocab.longest)
    binding = Binding(
        artifact=artifact,
        vocab=vocab,
        vocab_size=vocab.vocab_size,
        offsets=vocab.offsets,
        data=vocab.data,
        byte_token=byte_token,
        special_ids=special_ids,
        special_syms=special_syms,
        eos_ids=vocab.eos_ids,
        node_byte=vocab.node_byte,
        node_depth=vocab.node_depth,
        subtree_end=vocab.subtree_end,
        parent=vocab.parent,
        token_start=vocab.token_start,
        token_ids=vocab.token_ids,
        node_tok=node_tok,
        trie_depth=vocab.longest,
        key=(
            artifact.sha256,
            str(tokenizer.sha256),
            compiler_version(artifact),
            SPECIAL_POLICY,
        ),
    )
    artifact._cache[memo_key] = binding
    return binding
