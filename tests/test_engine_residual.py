"""Frame entries keyed by their residual: equal residuals share one entry whatever the artifact,
different ones never do, and the disk cache behind them refuses and recomputes bad entries."""

from __future__ import annotations

import functools
from collections import defaultdict

import numpy as np
import pytest

import trgc
from engine_fixtures import ROOT
from trgc.artifact.codec import decode
from trgc.engine import framecache, precompute, reference, residual
from trgc.engine.binding import bind
from trgc.engine.cache import MaskCache
from trgc.engine.config import START, frame_key, step_bytes
from trgc.engine.diskcache import DiskCache, encode_entry
from trgc.engine.kernel import Scratch
from trgc.engine.matcher import Matcher
from trgc.engine.precompute import FrameEntry, frame_entry, reachable_keys

# two schemas that differ before their last member and split bytes into different classes
# (digits in one, the letters of true/false in the other), then end alike: a "name" string no
# slice fits (a plain string body is walked by tails, cheaper than describing its residual, so
# it is keyed by its artifact: `framecache.cheap`)
NAME = {"type": "string", "pattern": "^[a-z ,]*$"}
SHARED_TAIL = (
    {"type": "object", "properties": {"id": {"type": "integer"}, "name": NAME},
     "required": ["id", "name"]},
    {"type": "object", "properties": {"flag": {"type": "boolean"}, "name": NAME},
     "required": ["flag", "name"]},
)  # fmt: skip
PREFIXES = (b'{"id":12,"name":"ab', b'{"flag":true,"name":"ab')


@functools.cache
def synthetic():
    return trgc.load_tokenizer(ROOT / "tokenizers/synthetic/json-bytelevel")


@functools.cache
def llama3():
    return trgc.load_tokenizer(ROOT / "tokenizers/llama3/tokenizer.json.zst")


def compiled(schema):
    return trgc.compile_schema(schema, separators="compact")


def entry_bytes(entry: FrameEntry) -> bytes:
    return entry.accept.tobytes() + entry.open_roots.tobytes() + bytes([entry.height])


def tail_keys(tok):
    """(binding, frame key) inside the last string of each SHARED_TAIL schema."""
    out = []
    for schema, prefix in zip(SHARED_TAIL, PREFIXES, strict=True):
        b = bind(compiled(schema), tok)
        config = step_bytes(b.tables, START, prefix)
        assert config is not None and len(config) == 1
        out.append((b, frame_key(config[-1], b.trie_depth)))
    return out


def test_equal_residuals_from_different_artifacts_share_one_entry():
    """On Llama-3 (a string body's walk is far too large to be keyed by its artifact)."""
    tok = llama3()
    (b1, k1), (b2, k2) = tail_keys(tok)
    assert b1.key[0] != b2.key[0]  # different artifacts
    assert not np.array_equal(b1.tables.byte_class, b2.tables.byte_class)
    assert residual.describe(b1, k1) == residual.describe(b2, k2)
    rid = residual.residual_id(b1, k1)
    assert rid is not None and rid == residual.residual_id(b2, k2)
    # computed independently, the two entries are the same bytes
    e1, e2 = frame_entry(b1, k1, Scratch(b1)), frame_entry(b2, k2, Scratch(b2))
    assert entry_bytes(e1) == entry_bytes(e2)
    # through one cache, the second artifact's matcher reuses the first one's entry
    assert framecache.shared_id(b1, k1) == rid  # the matchers key the entry by it
    cache = MaskCache()
    m1 = Matcher(b1_artifact := compiled(SHARED_TAIL[0]), tok, cache=cache)
    m1._history = [step_bytes(m1._binding.tables, START, PREFIXES[0])]
    first = m1.allowed_tokens()
    assert m1.last_source == "walk"
    m2 = Matcher(compiled(SHARED_TAIL[1]), tok, cache=cache)
    m2._history = [step_bytes(m2._binding.tables, START, PREFIXES[1])]
    second = m2.allowed_tokens()
    assert m2.last_source == "frame"  # the entry came from the cache: no walk
    assert (first == second).all() and b1_artifact.sha256 != m2._binding.key[0]
    for m in (m1, m2):
        assert (m.allowed_tokens() == reference.allowed_mask(m._binding, m.config)).all()


def test_residuals_differ_where_the_languages_differ():
    """Inside a `maxLength` string the top frame is the string's repeat frame: its residual is
    the string body with the iterations left (returns are open roots), so the member after the
    string does not change it but the bound does; the frame below, whose residual holds the
    rest of the object, differs with the member after it."""
    tok = synthetic()

    def ids(schema):
        b = bind(compiled(schema), tok)
        config = step_bytes(b.tables, START, b'{"s":"ab')
        assert len(config) == 2 and b.tables.is_repeat[config[-1] & 0xFFFFFFFF]
        return tuple(residual.residual_id(b, frame_key(f, b.trie_depth)) for f in config)

    def obj(max_length, *more):
        props = {"s": {"type": "string", "maxLength": max_length}}
        props.update({name: {"type": "integer"} for name in more})
        return {"type": "object", "properties": props, "required": list(props)}

    base, longer, more = ids(obj(5)), ids(obj(6)), ids(obj(5, "t"))
    assert None not in base + longer + more
    assert base[1] != longer[1]  # 3 iterations left, not 4
    assert base[1] == more[1]  # the same string body, whatever follows it
    assert base[0] != more[0]  # the object's rest differs
    assert ids(obj(5)) == base  # the same frames of a recompiled artifact: the same ids


@pytest.mark.parametrize("vocab", ["synthetic", "llama3"])
def test_equal_residual_ids_mean_equal_entries_across_artifacts(vocab):
    """Over every frame key of the shipped grammars and schemas (and the shared-tail pair),
    frames with one residual id have byte-identical entries; frames whose entries differ
    never share an id."""
    tok = synthetic() if vocab == "synthetic" else llama3()
    artifacts = [trgc.compile_grammar(p.read_text(encoding="utf-8"))
                 for p in sorted((ROOT / "grammars").glob("*.trg"))]  # fmt: skip
    artifacts += [compiled(s) for s in SHARED_TAIL]
    artifacts += [
        trgc.compile_schema(p.read_bytes()) for p in sorted((ROOT / "schemas").glob("*.json"))
    ]
    groups: dict[str, set[bytes]] = defaultdict(set)
    owners: dict[str, set[str]] = defaultdict(set)
    for art in artifacts:
        try:
            b = bind(art, tok)
        except trgc.TrgcError as err:
            assert err.code == "E_SPECIAL_TOKEN_MISSING"
            continue
        scratch = Scratch(b)
        for key in reachable_keys(b.tables, b.trie_depth, near=False)[
            :: 3 if vocab == "llama3" else 1
        ]:
            rid = residual.residual_id(b, key)
            if rid is None:
                continue
            groups[rid].add(entry_bytes(frame_entry(b, key, scratch)))
            owners[rid].add(art.sha256)
    assert all(len(entries) == 1 for entries in groups.values())
    assert sum(len(o) > 1 for o in owners.values()) >= 3  # sharing across artifacts happened


def test_cheap_walks_are_keyed_by_their_artifact():
    """A frame whose walk can visit at most DESCRIBE_ABOVE_NODES nodes, or whose entry is
    walked by tails (a plain string body, however many nodes lie under its first bytes), gets
    no residual id; a string body no slice fits gets one."""
    b = bind(compiled(SHARED_TAIL[0]), llama3())
    after_brace = frame_key(step_bytes(b.tables, START, b"{")[-1], b.trie_depth)
    in_string = frame_key(step_bytes(b.tables, START, PREFIXES[0])[-1], b.trie_depth)
    bound = framecache.walk_bound(b)
    assert bound[after_brace & 0xFFFFFFFF] <= framecache.DESCRIBE_ABOVE_NODES  # only '"'
    assert framecache.shared_id(b, after_brace) is None
    assert bound[in_string & 0xFFFFFFFF] > 100_000 and framecache.shared_id(b, in_string)
    plain = bind(compiled({"type": "object", "properties": {"name": {"type": "string"}}}), llama3())
    body = frame_key(step_bytes(plain.tables, START, b'{"name":"ab')[-1], plain.trie_depth)
    assert framecache.walk_bound(plain)[body & 0xFFFFFFFF] > 100_000
    assert precompute.slice_of(plain, body)[2] is not None  # walked by tails
    assert framecache.shared_id(plain, body) is None


def test_large_residuals_are_keyed_by_their_artifact():
    tok = synthetic()
    b = bind(
        trgc.compile_grammar((ROOT / "grammars" / "json.trg").read_text(encoding="utf-8")), tok
    )
    big = [k for k in reachable_keys(b.tables, b.trie_depth) if residual.residual_id(b, k) is None]
    small = [k for k in reachable_keys(b.tables, b.trie_depth) if residual.residual_id(b, k)]
    assert residual.describe(b, 0, budget=10**9) is not None  # describable, only costly
    if big:
        assert framecache.memory_key(b, big[0], None)[4] == b.key[0]
        assert "artifact " + b.key[0] in framecache.disk_key(b, big[0], None).subject
    assert small and framecache.disk_key(b, small[0], "sha256:x").subject.startswith("residual ")


# -- the disk cache behind the frame entries ------------------------------------------------


def decode_fresh(art):
    """The artifact read back from its bytes: a new object, as in another process."""
    return decode(art.to_bytes())


def run_masks(art, tok, disk, prefixes) -> list[tuple[np.ndarray, str]]:
    m = Matcher(art, tok, cache=MaskCache(), disk_cache=disk, store_masks=False)
    out = []
    for prefix in prefixes:
        m._history = [step_bytes(m._binding.tables, START, prefix)]
        out.append((m.allowed_tokens(), m.last_source))
    return out


# one expensive frame (inside the string) and one cheap one (after the brace: only '"' fits)
TAIL_STEPS = (b'{"id":12,"name":"ab', b"{")


def test_disk_entries_are_read_by_another_matcher_and_refused_when_corrupted_llama3(tmp_path):
    """On Llama-3: the expensive frame goes to disk and comes back in another "process"; a
    corrupted entry is refused, recomputed and published again; the cheap frame never goes to
    disk (`framecache.cheap`)."""
    tok = llama3()
    art = compiled(SHARED_TAIL[0])
    disk = DiskCache(tmp_path / "cache")
    first = run_masks(art, tok, disk, TAIL_STEPS)
    assert [s for _, s in first] == ["walk", "walk"]
    assert disk.flush(30) and disk.stats.writes == 1  # the string body only
    files = sorted(disk.layout.rglob("*.entry"))
    assert len(files) == 1
    # another "process": a fresh artifact object, a fresh in-memory cache, the same directory
    again = run_masks(decode_fresh(art), tok, DiskCache(tmp_path / "cache"), TAIL_STEPS)
    assert [s for _, s in again] == ["disk", "walk"]
    assert all((a == b).all() for (a, _), (b, _) in zip(first, again, strict=True))
    data = bytearray(files[0].read_bytes())
    data[len(data) // 2] ^= 0x40
    files[0].write_bytes(bytes(data))
    reader = DiskCache(tmp_path / "cache")
    third = run_masks(decode_fresh(art), tok, reader, TAIL_STEPS)
    assert [s for _, s in third] == ["walk", "walk"]
    assert reader.stats.refused == {"E_CACHE_ENTRY_CORRUPT": 1}
    assert all((a == b).all() for (a, _), (b, _) in zip(first, third, strict=True))
    assert reader.flush(30) and reader.stats.writes == 1
    assert all(reader.verify_file(p) is None for p in reader.layout.rglob("*.entry"))
    b = bind(art, tok)
    for (mask, _), prefix in zip(first, TAIL_STEPS, strict=True):
        assert (mask == reference.allowed_mask(b, step_bytes(b.tables, START, prefix))).all()


def test_a_valid_container_with_a_bad_payload_is_refused_llama3(tmp_path):
    tok = llama3()
    art = compiled(SHARED_TAIL[0])
    b = bind(art, tok)
    config = step_bytes(b.tables, START, PREFIXES[0])
    key = frame_key(config[-1], b.trie_depth)
    rid = framecache.shared_id(b, key)  # what the matcher keys the entry by
    good = frame_entry(b, key, Scratch(b))
    eos = int(b.eos_ids[0])
    bad_words = good.accept.copy()
    bad_words[eos >> 5] |= np.uint32(1 << (eos & 31))  # EOS is never matched by bytes
    bad = {
        "a token not matched by bytes": framecache.encode(
            FrameEntry(bad_words, good.open_roots, good.height)
        ),
        "another vocabulary size": framecache.encode(
            FrameEntry(good.accept[:-1], good.open_roots, good.height)
        ),
        "not zstd": b"plain bytes",
        "height above max_depth": framecache.encode(
            FrameEntry(good.accept, good.open_roots, b.tables.max_depth + 1)
        ),
    }
    for name, payload in bad.items():
        disk = DiskCache(tmp_path / name.replace(" ", "-"))
        dkey = framecache.disk_key(b, key, rid)
        path = disk.path_of(dkey)
        path.parent.mkdir(parents=True)
        path.write_bytes(encode_entry(dkey, payload))
        m = Matcher(art, tok, cache=MaskCache(), disk_cache=disk)
        m._history = [config]
        assert (m.allowed_tokens() == reference.allowed_mask(b, config)).all(), name
        assert m.last_source == "walk", name
        assert disk.stats.refused == {"E_CACHE_ENTRY_PAYLOAD": 1}, name
        assert disk.stats.last_refusal.code == "E_CACHE_ENTRY_PAYLOAD", name
        assert disk.flush(30)
        assert framecache.decode(disk.get(dkey), b).accept.tobytes() == good.accept.tobytes()


def test_matcher_refuses_a_disk_cache_of_the_wrong_type(tmp_path):
    with pytest.raises(trgc.TrgcError) as err:
        Matcher(compiled(SHARED_TAIL[0]), synthetic(), disk_cache=str(tmp_path))
    assert err.value.code == "E_ARGUMENT_TYPE"
