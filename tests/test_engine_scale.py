"""Every mask path against the reference at scale (issue 14 item 5).

On the GPT-2, Llama-3, Qwen3 and Mistral tables, for every shipped grammar and schema and a
seeded sample of JSONSchemaBench schemas, at every step of seeded random walks and of the
corpus's LLM-written valid instances (teacher-forced, tokenised by longest match in the trie),
five paths must give one mask:

* the bare kernel (`kernel.allowed_mask`, a full trie walk);
* the adaptive path (`Matcher`: per-frame entries plus the live stack's open roots);
* the shared path: one `MaskCache` and one `DiskCache` for every artifact of a vocabulary, so
  a frame entry computed for one artifact (or read back from disk) serves the others, which is
  counted: some steps must use an entry another artifact computed;
* the disk path: a matcher with its own `MaskCache` over the shared `DiskCache`, whose frame
  entries come from disk wherever the shared path (flushed at every step) or an earlier
  artifact published one;
* precomputed masks (`precompute`, the `.trm` path, with direct rows).

Every step is also checked against the reference masker (`engine/reference.py`, the oracle)
on a sample of tokens (up to 400 allowed byte tokens, 400 other byte tokens, every special
token and EOS), and one step of every walk on the whole vocabulary. Teacher-forced tokens must
be allowed: a valid instance is never refused.
"""

from __future__ import annotations

import functools
import gzip
import json
import random

import numpy as np
import pytest

import trgc
from engine_fixtures import ROOT
from trgc.engine import framecache, kernel, reference
from trgc.engine.cache import MaskCache
from trgc.engine.config import frame_key
from trgc.engine.diskcache import DiskCache
from trgc.engine.matcher import Matcher
from trgc.engine.precompute import precompute
from trgc.grammar.schema.canonical import canonical_instance

VOCABS = {
    "gpt2": "tokenizers/gpt2/encoder.json.zst",
    "llama3": "tokenizers/llama3/tokenizer.json.zst",
    "qwen3": "tokenizers/qwen3",
    "mistral": "tokenizers/mistral/tokenizer.model.v1",
}
CORPORA = ROOT.parent / "shared" / "corpora"
BENCH, INSTANCES = CORPORA / "jsonschemabench", CORPORA / "jsonschemabench-instances"
N_BENCH = 6  # JSONSchemaBench schemas per run (seeded sample of those trgc compiles)
# two schemas that end alike: the second's string body reuses the first's entry (by residual);
# a string no slice fits, as a plain string body is keyed by its artifact (`framecache.cheap`)
NAME = {"type": "string", "pattern": "^[a-z ,]*$"}
SHARED_TAIL = tuple(
    (f"shared-tail-{first}", {"type": "object", "properties": {first: kind, "name": NAME},
                              "required": [first, "name"]}, doc)
    for first, kind, doc in (
        ("id", {"type": "integer"}, b'{"id":12,"name":"a name, with words in it"}'),
        ("flag", {"type": "boolean"}, b'{"flag":true,"name":"another name, other words"}'),
    )
)  # fmt: skip
WALK_STEPS = 16
SAMPLE = 400


@functools.cache
def tokenizer(name: str):
    return trgc.load_tokenizer(ROOT / VOCABS[name])


def bench_cases() -> list[tuple[str, dict, bytes]]:
    """(name, schema, instance bytes) for a seeded sample of JSONSchemaBench schemas with an
    LLM-written valid instance that trgc compiles (compact separators)."""
    if not INSTANCES.is_dir() or not BENCH.is_dir():
        pytest.skip(f"the JSONSchemaBench corpus is missing: {BENCH} and {INSTANCES}")
    pool = []
    for path in sorted(INSTANCES.glob("*.jsonl.gz")):
        subset = path.name.removesuffix(".jsonl.gz")
        seen = set()
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                if record["valid"] and record["file"] not in seen:
                    seen.add(record["file"])
                    pool.append((subset, record["file"], record["data"]))
    random.Random(14).shuffle(pool)
    out = []
    for subset, name, data in pool:
        schema = json.loads((BENCH / subset / name).read_text(encoding="utf-8"))
        try:
            trgc.compile_schema(schema, separators="compact")
            doc = canonical_instance(schema, data, "compact")
        except (trgc.TrgcError, RecursionError, ValueError, TypeError):
            continue
        if len(doc) <= 600:  # keep the forced walks short enough for the suite
            out.append((f"{subset}/{name}", schema, doc))
        if len(out) == N_BENCH:
            break
    return out


@functools.cache
def artifacts() -> tuple[tuple[str, object, bytes | None], ...]:
    """(name, artifact, instance to force or None) for every case."""
    out = [(p.stem, trgc.compile_grammar(p.read_text(encoding="utf-8")), None)
           for p in sorted((ROOT / "grammars").glob("*.trg"))]  # fmt: skip
    for path in sorted((ROOT / "schemas").glob("*.json")):
        out.append((path.name, trgc.compile_schema(path.read_bytes(), separators="compact"), None))
    for name, schema, doc in SHARED_TAIL + tuple(bench_cases()):
        out.append((name, trgc.compile_schema(schema, separators="compact"), doc))
    return tuple(out)


def longest_match(tok, byte_token: np.ndarray, data: bytes) -> list[int] | None:
    """Token ids spelling `data`, taking at each position the longest token matched by bytes
    (None when some position has none)."""
    trie = tok.trie
    ids, at = [], 0
    while at < len(data):
        node, best, end = 0, None, at
        while end < len(data):
            node = trie.child(node, data[end])
            if node < 0:
                break
            end += 1
            tokens = [int(t) for t in trie.tokens_at(node) if byte_token[t]]
            if tokens:
                best = (tokens[0], end)
        if best is None:
            return None
        ids.append(best[0])
        at = best[1]
    return ids


class Paths:
    """The mask paths over one artifact (the bare kernel is called directly)."""

    def __init__(self, art, tok, shared: MaskCache, disk: DiskCache) -> None:
        self.walker = Matcher(art, tok)
        self.adaptive = Matcher(art, tok)
        self.shared = Matcher(art, tok, cache=shared, disk_cache=disk, store_masks=False)
        self.from_disk = Matcher(art, tok, cache=MaskCache(), disk_cache=disk, store_masks=False)
        self.precomputed = Matcher(art, tok, precomputed=precompute(art, tok))
        self.binding = self.walker._binding
        self.disk = disk
        self.disk_reads = 0

    def masks_at(self, config) -> np.ndarray:
        b = self.binding
        bare = kernel.allowed_mask(b, config)
        for m in (self.adaptive, self.shared, self.from_disk, self.precomputed):
            m._history = [config]
            m.last_source = ""
            got = m.allowed_tokens()
            if m is self.shared:  # publish now, so that the disk path reads what it computed
                assert self.disk.flush(60)
            self.disk_reads += m is self.from_disk and m.last_source == "disk"
            diff = np.flatnonzero(got != bare)
            assert diff.size == 0, (type(m), config, [b.token_bytes(int(t)) for t in diff[:5]])
        return bare


def check_reference(b, config, mask, rng, whole: bool) -> None:
    if whole:
        assert (reference.allowed_mask(b, config) == mask).all(), config
        return
    byte_tokens = np.flatnonzero(b.byte_token)
    allowed = np.flatnonzero(mask & b.byte_token)
    sample = np.unique(np.concatenate([
        rng.choice(allowed, min(SAMPLE, allowed.size), replace=False) if allowed.size else allowed,
        rng.choice(byte_tokens, SAMPLE, replace=False),
    ]))  # fmt: skip
    expected = reference.allowed_mask(b, config, sample.tolist())
    symbols = np.concatenate([b.special_ids, b.eos_ids]).astype(np.int64)
    checked = np.concatenate([sample, symbols])
    assert (expected[checked] == mask[checked]).all(), config


@pytest.mark.slow
@pytest.mark.parametrize("vocab", sorted(VOCABS))
def test_every_path_equals_the_reference_on_walks_and_forced_instances(vocab, tmp_path):
    tok = tokenizer(vocab)
    shared, disk = MaskCache(), DiskCache(tmp_path / "cache")
    owner: dict[tuple, str] = {}  # memory key of a frame entry -> the artifact that made it
    borrowed = forced_steps = disk_reads = expensive = 0
    rng = np.random.default_rng(sum(map(ord, vocab)))
    for name, art, doc in artifacts():
        try:
            paths = Paths(art, tok, shared, disk)
        except trgc.TrgcError as err:
            assert err.code == "E_SPECIAL_TOKEN_MISSING", (name, err.code)
            continue
        b = paths.binding
        if doc is None:
            steps = None
        else:
            steps = longest_match(tok, b.byte_token, doc)
            assert steps is not None, name
        m = paths.walker
        eos = b.eos_ids
        for i in range(len(steps) if steps is not None else WALK_STEPS):
            config = m.config
            key = frame_key(config[-1], b.trie_depth)
            mkey = framecache.memory_key(b, key, framecache.shared_id(b, key))
            before = shared.get(mkey) is not None
            mask = paths.masks_at(config)
            expensive += not framecache.cheap(b, key)
            if before and owner.get(mkey) not in (None, art.sha256):
                borrowed += 1  # this artifact's mask used an entry another artifact computed
            owner.setdefault(mkey, art.sha256)
            check_reference(b, config, mask, rng, whole=(i == 3))
            if steps is not None:
                assert mask[steps[i]], (name, i, tok.token_bytes(steps[i]))
                m.advance(steps[i])
                forced_steps += 1
                continue
            choices = np.flatnonzero(mask & b.byte_token)
            choices = choices[~np.isin(choices, eos)]
            if not choices.size:
                break
            lengths = np.diff(b.offsets)[choices]
            if rng.random() < 0.5 and (lengths <= 2).any():  # short tokens reach deeper states
                choices = choices[lengths <= 2]
            m.advance(int(rng.choice(choices)))
        disk_reads += paths.disk_reads
        assert disk.flush(60)  # between two artifacts, as between two requests of a server
    assert forced_steps > 100
    assert disk.flush(60)
    if expensive:  # frames whose walk pays a disk lookup were met: they went to disk and back
        assert disk_reads > 0 and disk.stats.writes > 0 and borrowed > 0
    else:  # a small vocabulary (Mistral's 56k trie nodes): every walk is cheaper than the disk
        assert disk.stats.writes == 0 and not list(disk.layout.rglob("*.entry"))
