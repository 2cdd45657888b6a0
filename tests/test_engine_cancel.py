"""Cancellation inside mask computations: the kernel's chunks resume exactly, a checkpoint stops
a walk, a precompute or a generation promptly, and nothing half-computed is ever cached."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

import trgc
from engine_fixtures import ROOT, json_like, structural_table, tool_call
from trgc.decode.generate import decode
from trgc.decode.logits import parse_logits_spec
from trgc.decode.sampler import STOP_CANCELLED, SamplerSettings
from trgc.engine import framecache, kernel, reference
from trgc.engine.binding import bind
from trgc.engine.cache import MaskCache
from trgc.engine.cancel import Cancelled, cancellable, cancellation_checkpoint
from trgc.engine.config import START, frame_key, mask_key, step_bytes
from trgc.engine.diskcache import DiskCache
from trgc.engine.matcher import Matcher
from trgc.engine.precompute import precompute


@functools.cache
def synthetic():
    return trgc.load_tokenizer(ROOT / "tokenizers/synthetic/json-bytelevel")


@functools.cache
def llama3():
    """A real vocabulary: on the small synthetic one every frame is cheap enough to stay off
    the disk (`framecache.cheap`)."""
    return trgc.load_tokenizer(ROOT / "tokenizers/llama3.trt")


@functools.cache
def json_trg():
    return trgc.compile_grammar((ROOT / "grammars" / "json.trg").read_text(encoding="utf-8"))


def after(n: int):
    """A check that asks to stop from its `n`-th call on."""
    calls = itertools.count(1)
    return lambda: next(calls) >= n


@pytest.fixture
def tiny_chunks(monkeypatch):
    """Kernel chunks of 5 trie nodes, so that every walk suspends and resumes many times."""
    monkeypatch.setattr(kernel, "CHUNK_NODES", 5)


def test_cancellable_scopes_nest_and_end():
    cancellation_checkpoint()  # no scope: nothing to do
    with cancellable(lambda: False), cancellable(None):
        cancellation_checkpoint()
    with pytest.raises(Cancelled), cancellable(lambda: False), cancellable(lambda: True):
        cancellation_checkpoint()
    cancellation_checkpoint()  # the scopes are gone
    assert issubclass(Cancelled, KeyboardInterrupt)  # code handling Ctrl-C handles it too


@pytest.mark.parametrize("make", [json_like, tool_call])
def test_walks_in_tiny_chunks_are_exact(make, tiny_chunks):
    """Suspending every 5 nodes and resuming gives the reference masks, for full walks, frame
    walks (open roots) and the open-root ranges the matcher walks against a live stack."""
    art, tok = make(), structural_table()
    b = bind(art, tok)
    rng = np.random.default_rng(7)
    m = Matcher(art, tok)
    assert m._scratch.params[kernel.P_BUDGET] == 5
    for _ in range(60):
        expected = reference.allowed_mask(b, m.config)
        assert (kernel.allowed_mask(b, m.config) == expected).all(), m.config
        assert (m.allowed_tokens() == expected).all(), m.config
        choices = np.flatnonzero(expected & b.byte_token)
        if not choices.size:
            m.reset()
            continue
        m.advance(int(rng.choice(choices)))


def test_a_cancelled_walk_raises_and_leaves_no_entry(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel, "CHUNK_NODES", 50)  # a string state walks a few hundred nodes
    art, tok = json_trg(), llama3()
    b = bind(art, tok)
    config = step_bytes(b.tables, START, b'{"key": "a string')
    key = frame_key(config[-1], b.trie_depth)
    cache, disk = MaskCache(), DiskCache(tmp_path / "cache")
    m = Matcher(art, tok, cache=cache, disk_cache=disk)
    m._history = [config]
    with pytest.raises(Cancelled), cancellable(after(3)):
        m.allowed_tokens()
    rid = framecache.shared_id(b, key)
    assert cache.get(framecache.memory_key(b, key, rid)) is None  # no frame entry
    longest = b.trie_depth
    assert cache.get((*b.key, mask_key(config, longest))) is None  # no whole-configuration mask
    assert mask_key(config, longest) not in m._store  # nor one in the mask store
    assert len(cache) == 1  # the (empty) mask store is all the memory cache holds
    assert disk.flush(30) and not list(disk.layout.rglob("*.entry"))
    # the same matcher (and its scratch) computes the exact mask afterwards
    assert (m.allowed_tokens() == reference.allowed_mask(b, config)).all()
    assert disk.flush(30) and list(disk.layout.rglob("*.entry"))


def test_a_cancelled_precompute_returns_nothing_and_publishes_only_whole_entries(tmp_path):
    """Cancelled halfway, the precompute raises; the entries it finished before are published
    whole, and a later precompute reads them back and builds the very file an uncached one
    builds."""
    art, tok = json_trg(), llama3()
    disk = DiskCache(tmp_path / "cache")
    with pytest.raises(Cancelled), cancellable(after(checkpoints(art, tok) // 2)):
        precompute(art, tok, disk_cache=disk)
    assert disk.flush(30)
    published = list(disk.layout.rglob("*.entry"))
    assert published and disk.stats.writes == len(published)
    assert all(disk.verify_file(path) is None for path in published)
    masks = precompute(art, tok, disk_cache=disk)
    assert disk.stats.hits == len(published)
    assert trgc_masks_bytes(masks) == trgc_masks_bytes(precompute(art, tok))


def checkpoints(art, tok) -> int:
    """How many checkpoints a whole precompute of `art` over `tok` passes."""
    calls = itertools.count()
    with cancellable(lambda: next(calls) < 0):
        precompute(art, tok)
    return next(calls)


def trgc_masks_bytes(masks) -> bytes:
    from trgc.engine.trm import to_bytes

    return to_bytes(masks)


def test_generation_cancelled_inside_a_mask_stops_as_cancelled(tmp_path, tiny_chunks):
    """The run's `cancelled` poll is checked inside the mask computation: a request that comes
    while a mask is computed ends the run at once, as cancelled, with a trace."""
    art, tok = json_trg(), synthetic()
    m = Matcher(art, tok)
    polls = itertools.count(1)
    # poll 1 is the step boundary before step 0; from the second poll on (inside step 0's
    # mask, which needs many chunks of 5 nodes) the run is asked to stop
    result = decode(
        m,
        tok,
        parse_logits_spec("random:1", tok.vocab_size),
        settings=SamplerSettings(),
        seed=0,
        max_tokens=50,
        cancelled=lambda: next(polls) >= 2,
    )
    assert result.end["stop"] == STOP_CANCELLED and result.end["completed"] is False
    # stopped inside step 0's mask, at its first chunk boundary: the boundary poll, then one
    assert result.steps == [] and next(polls) == 3
