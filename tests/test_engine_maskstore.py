"""The mask store (`trgc.engine.maskstore`): masks one process computed are read back by the
next as lookups, equal to the reference masker's at every step of a seeded walk on the Llama-3
vocabulary, and a corrupted, foreign or unsound store is refused with its code and the masks
computed again."""

from __future__ import annotations

import functools
import json
import subprocess
import sys

import numpy as np
import pytest

import trgc
from engine_fixtures import ROOT, matches_reference
from trgc.engine import kernel, maskstore
from trgc.engine.binding import bind
from trgc.engine.cache import MaskCache
from trgc.engine.config import START, mask_key
from trgc.engine.diskcache import DiskCache, encode_entry
from trgc.engine.maskstore import MaskStore, decode_store, encode_store, store_key
from trgc.engine.matcher import Matcher

# the bundled tables (tokenizers/PROVENANCE.md: built from the bundled sources): nothing skips
LLAMA3 = ROOT / "tokenizers" / "llama3.trt"
GPT2 = ROOT / "tokenizers" / "gpt2.trt"
SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string", "maxLength": 12},
        "kind": {"enum": ["alpha", "beta", "gamma"]},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        "ok": {"type": "boolean"},
    },
    "required": ["id", "name", "kind", "tags", "ok"],
}
STEPS = 48


@functools.cache
def llama3():
    return trgc.load_tokenizer(LLAMA3)


def fresh_matcher(disk: DiskCache | None) -> Matcher:
    """A matcher as a new process makes it: a new artifact object (no memoised binding) and
    a new in-memory cache."""
    return Matcher(trgc.compile_schema(SCHEMA), llama3(), cache=MaskCache(), disk_cache=disk)


def seeded_walk(m: Matcher, seed: int) -> list[int]:
    """Advance `m` by up to STEPS tokens, each drawn from the allowed byte tokens."""
    rng = np.random.default_rng(seed)
    b = m._binding
    tokens = []
    for _ in range(STEPS):
        allowed = np.flatnonzero(m.allowed_tokens() & b.byte_token)
        if not allowed.size:
            break
        token = int(rng.choice(allowed))
        m.advance(token)
        tokens.append(token)
    return tokens


def check_against_reference(m: Matcher, mask: np.ndarray, rng, whole: bool) -> None:
    b, config = m._binding, m.config
    assert (kernel.allowed_mask(b, config) == mask).all(), config
    matches_reference(b, config, mask, rng, whole)


def loaded(store: MaskStore) -> dict:
    """Every mask of a store, the part still compressed decoded first."""
    if store.pending:
        store.load_rest()
    return store.masks


def populate(root) -> list[int]:
    disk = DiskCache(root)
    tokens = seeded_walk(fresh_matcher(disk), seed=7)
    assert disk.flush(60) and disk.stats.writes >= 1
    return tokens


def replay(disk: DiskCache, tokens: list[int], rng=None) -> list[str]:
    """Every source of a fresh matcher's masks along `tokens`; with `rng`, each mask is also
    checked against the kernel and the reference masker."""
    m = fresh_matcher(disk)
    sources = []
    for i in range(len(tokens) + 1):
        mask = m.allowed_tokens()
        sources.append(m.last_source)
        if rng is not None:
            check_against_reference(m, mask, rng, whole=i == 0)
        if i < len(tokens):
            m.advance(tokens[i])
    return sources


def test_a_new_process_reads_every_mask_from_the_store(tmp_path):
    tokens = populate(tmp_path)
    assert len(tokens) >= 20  # the walk ends early once the document is complete
    disk = DiskCache(tmp_path)
    sources = replay(disk, tokens, np.random.default_rng(11))
    assert set(sources) == {"store"}, sources
    assert disk.stats.refused == {}


def test_the_store_grows_with_new_configurations(tmp_path):
    tokens = populate(tmp_path)
    disk = DiskCache(tmp_path)
    m = fresh_matcher(disk)
    before = len(loaded(m._store))
    other = seeded_walk(m, seed=8)  # another walk: configurations the store has not seen
    assert disk.flush(60)
    after = len(loaded(fresh_matcher(DiskCache(tmp_path))._store))
    assert after > before
    assert set(replay(DiskCache(tmp_path), other)) == {"store"}
    assert set(replay(DiskCache(tmp_path), tokens)) == {"store"}
    assert DiskCache(tmp_path).info().kinds["masks"]["entries"] == 1


def store_path(root) -> tuple[DiskCache, object]:
    disk = DiskCache(root)
    key = store_key(bind(trgc.compile_schema(SCHEMA), llama3()))
    assert disk.path_of(key).is_file()
    return disk, key


def test_a_corrupted_store_is_refused_and_masks_computed_again(tmp_path):
    tokens = populate(tmp_path)
    disk, key = store_path(tmp_path)
    path = disk.path_of(key)
    data = bytearray(path.read_bytes())
    data[len(data) - 100] ^= 0x01
    path.write_bytes(bytes(data))
    sources = replay(disk, tokens, np.random.default_rng(12))
    assert "store" not in sources
    assert disk.stats.refused == {"E_CACHE_ENTRY_CORRUPT": 1}


def sound_masks(root) -> dict:
    disk, key = store_path(root)
    b = bind(trgc.compile_schema(SCHEMA), llama3())
    return decode_store(b, disk.get(key))


def tampered(masks: dict, how: str, b) -> bytes:
    import zstandard

    masks = {k: v.words().copy() for k, v in masks.items()}
    first = min(masks)
    assert first == START
    if how == "garbage":
        return b"\x28\xb5\x2f\xfd garbage"
    if how == "a token never allowed":
        possible = b.byte_token.copy()
        possible[b.eos_ids] = True
        never = int(np.flatnonzero(~possible)[0])
        masks[first][never // 32] |= np.uint32(1 << (never % 32))
    elif how == "a token never allowed, after the start":
        possible = b.byte_token.copy()
        possible[b.eos_ids] = True
        never = int(np.flatnonzero(~possible)[0])
        later = sorted(masks)[1]
        masks[later][never // 32] |= np.uint32(1 << (never % 32))
    elif how == "state of no artifact":
        masks[(first[0] + 10**6,)] = masks[first]
    elif how == "unclipped counter":
        masks[(first[0] | (0x7FFF << 32),)] = masks[first]
    elif how == "another width":
        masks = {k: np.concatenate([v, v[:1]]) for k, v in masks.items()}
    payload = encode_store(len(next(iter(masks.values()))), masks)
    if how == "unsorted":
        head = maskstore._HEAD.size + maskstore._HEAD.unpack_from(payload)[4]
        body = bytearray(zstandard.ZstdDecompressor().decompress(payload[head:]))
        n_rest = maskstore._HEAD.unpack_from(payload)[2] - 1
        at = maskstore._BODY.size
        lengths = np.frombuffer(bytes(body[at : at + 4 * n_rest]), dtype="<u4")
        assert (lengths[:2] == 1).all()  # swap the first two one-frame configurations
        frames = at + 4 * n_rest
        body[frames : frames + 8], body[frames + 8 : frames + 16] = (
            body[frames + 8 : frames + 16], body[frames : frames + 8],
        )  # fmt: skip
        payload = payload[:head] + zstandard.ZstdCompressor().compress(bytes(body))
    if how == "sparse words out of order":
        head = maskstore._HEAD.size + maskstore._HEAD.unpack_from(payload)[4]
        body = bytearray(zstandard.ZstdDecompressor().decompress(payload[head:]))
        n_rest = maskstore._HEAD.unpack_from(payload)[2] - 1
        n_masks, n_frames = maskstore._BODY.unpack_from(body)[:2]
        counts_at = maskstore._BODY.size + 8 * n_rest + 8 * n_frames
        counts = np.frombuffer(bytes(body[counts_at : counts_at + 4 * n_masks]), dtype="<u4")
        sparse = np.where(counts == b.n_words, 0, counts)
        m = int(np.flatnonzero(sparse >= 2)[0])  # a sparse mask of two words or more
        at = counts_at + 4 * n_masks + 4 * int(sparse[:m].sum())
        body[at : at + 4], body[at + 4 : at + 8] = body[at + 4 : at + 8], body[at : at + 4]
        payload = payload[:head] + zstandard.ZstdCompressor().compress(bytes(body))
    return payload


# refused when the store is loaded, and when its compressed part is first needed
HEAD_PROBLEMS = ["garbage", "a token never allowed", "another width"]
REST_PROBLEMS = ["a token never allowed, after the start", "state of no artifact",
                 "unclipped counter", "unsorted", "sparse words out of order"]  # fmt: skip


@pytest.mark.parametrize("how", HEAD_PROBLEMS + REST_PROBLEMS)
def test_an_unsound_store_payload_is_refused_and_masks_computed_again(tmp_path, how):
    tokens = populate(tmp_path)
    masks = sound_masks(tmp_path)
    disk, key = store_path(tmp_path)
    b = bind(trgc.compile_schema(SCHEMA), llama3())
    disk.path_of(key).write_bytes(encode_entry(key, tampered(masks, how, b)))
    with pytest.raises(trgc.TrgcError) as info:
        decode_store(b, disk.get(key))
    assert info.value.code == "E_CACHE_ENTRY_PAYLOAD"
    disk = DiskCache(tmp_path)
    sources = replay(disk, tokens[:12], np.random.default_rng(13))
    # the start configuration's mask is checked on its own: a store whose other part is
    # unsound still answers it, and nothing after it
    assert "store" not in sources[how in REST_PROBLEMS :], sources
    assert (sources[0] == "store") == (how in REST_PROBLEMS)
    assert disk.stats.refused == {"E_CACHE_ENTRY_PAYLOAD": 1}
    assert disk.stats.last_refusal.source == str(disk.path_of(key))
    assert disk.flush(60)  # a sound store was published again
    assert set(replay(DiskCache(tmp_path), tokens[:12])) == {"store"}


def test_a_store_of_another_artifact_is_foreign(tmp_path):
    populate(tmp_path)
    disk, key = store_path(tmp_path)
    other = store_key(bind(trgc.compile_schema({"type": "array"}), llama3()))
    assert other != key
    disk.path_of(other).parent.mkdir(parents=True, exist_ok=True)
    disk.path_of(other).write_bytes(disk.path_of(key).read_bytes())
    m = Matcher(trgc.compile_schema({"type": "array"}), llama3(), disk_cache=disk)
    assert m._store.masks == {}
    assert disk.stats.refused == {"E_CACHE_ENTRY_FOREIGN": 1}


def test_same_masks_same_bytes(tmp_path):
    populate(tmp_path)
    masks = sound_masks(tmp_path)
    n_words = next(iter(masks.values())).words().size
    reversed_order = dict(reversed(list(masks.items())))
    assert encode_store(n_words, masks) == encode_store(n_words, reversed_order)
    b = bind(trgc.compile_schema(SCHEMA), llama3())
    again = decode_store(b, encode_store(n_words, masks))
    assert again.keys() == masks.keys()
    assert all((again[k].words() == masks[k].words()).all() for k in masks)
    as_words = {k: v.words() for k, v in masks.items()}
    assert encode_store(n_words, as_words) == encode_store(n_words, masks)


def test_matchers_sharing_a_memory_cache_share_one_store(tmp_path):
    """A server's matchers (one `MaskCache`) load the store once and extend it together: the
    masks the second computed are in the first's store and in the one published."""
    tokens = populate(tmp_path)
    disk, shared = DiskCache(tmp_path), MaskCache()
    art = trgc.compile_schema(SCHEMA)
    first = Matcher(art, llama3(), cache=shared, disk_cache=disk)
    second = Matcher(trgc.compile_schema(SCHEMA), llama3(), cache=shared, disk_cache=disk)
    assert first._store is second._store and disk.stats.hits == 1
    before = len(loaded(first._store))
    other = seeded_walk(second, seed=9)
    assert first._store.size > before
    assert disk.flush(60)
    assert set(replay(DiskCache(tmp_path), other)) == {"store"}
    assert set(replay(DiskCache(tmp_path), tokens)) == {"store"}
    alone = Matcher(art, llama3(), cache=MaskCache(), disk_cache=disk)
    assert alone._store is not first._store


def test_walked_masks_are_walked_again_by_the_publisher(tmp_path):
    """A one-frame mask the matcher walked into its scratch is not copied there: the store
    holds its configuration, its publisher walks it again (`kernel.one_frame_masks`) when it
    writes the store, and what it writes is the mask the matcher gave."""
    disk = DiskCache(tmp_path)
    m = fresh_matcher(disk)
    rng = np.random.default_rng(7)
    given = {}
    for _ in range(STEPS):
        given[m.config] = m.allowed_tokens_packed().view(np.uint32)
        allowed = np.flatnonzero(m.allowed_tokens() & m._binding.byte_token)
        if not allowed.size:
            break
        m.advance(int(rng.choice(allowed)))
    store = m._store
    walked = set(store._walked)
    assert len(walked) >= 5 and walked.isdisjoint(store.masks)
    assert all(key in store and key in given for key in walked)
    assert disk.flush(60)
    published = decode_store(m._binding, disk.get(store_key(m._binding)))
    assert walked <= published.keys()
    longest = m._binding.trie_depth
    for config, words in given.items():
        assert (published[mask_key(config, longest)].words() == words).all(), config


def test_the_store_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(maskstore, "MAX_CONFIGS", 5)
    disk = DiskCache(tmp_path)
    m = fresh_matcher(disk)
    seeded_walk(m, seed=7)
    assert m._store.size == 5
    assert disk.flush(60)
    assert len(loaded(MaskStore(m._binding, DiskCache(tmp_path)))) == 5


def test_store_keys_are_mask_keys(tmp_path):
    """A configuration is stored under its `mask_key` (counters clipped), the identity the
    masks depend on, so configurations that differ only past the clip share one mask."""
    disk = DiskCache(tmp_path)
    m = fresh_matcher(disk)
    seeded_walk(m, seed=7)
    longest = m._binding.trie_depth
    for config in m._history:
        if config is not None:
            assert mask_key(config, longest) in m._store


CHILD = """
import json, sys
import numpy as np
import trgc
from trgc.engine.diskcache import DiskCache
disk = DiskCache(sys.argv[1])
art = trgc.compile_schema(json.loads(sys.argv[3]), cache=disk)
m = trgc.Matcher(art, trgc.load_tokenizer(sys.argv[2]), disk_cache=disk)
out = []
for token in json.loads(sys.argv[4]):
    mask = m.allowed_tokens()
    out.append([m.last_source, np.flatnonzero(mask).tolist()])
    m.advance(token)
disk.flush(60)
print(json.dumps({"masks": out, "hits": disk.stats.hits}))
"""


def test_two_real_processes_share_artifact_and_masks(tmp_path):
    """The first process compiles and computes; the second reads the artifact and every
    mask from the cache directory, and they are the same masks."""
    m = Matcher(trgc.compile_schema(SCHEMA), trgc.load_tokenizer(GPT2))
    tokens = seeded_walk(m, seed=3)[:20]
    runs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(tmp_path), str(GPT2), json.dumps(SCHEMA),
             json.dumps(tokens)],
            capture_output=True, text=True, check=True, timeout=300,
        )  # fmt: skip
        runs.append(json.loads(done.stdout))
    first, second = runs
    assert "store" not in {s for s, _ in first["masks"]}
    assert {s for s, _ in second["masks"]} == {"store"}
    assert [mask for _, mask in first["masks"]] == [mask for _, mask in second["masks"]]
    assert second["hits"] >= 2  # the artifact and the store
