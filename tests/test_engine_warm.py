"""The warm path (docs/mask-cache.md): a schema met before is read back from the cache as a
deferred artifact, bound lazily, and its first mask is the store's start mask; every mask the
store answers (sparse or dense) equals the reference masker's, at every step of a seeded walk
and of a teacher-forced valid instance on the bundled Llama-3 table; the lazy binding equals
the eager one; and a corrupted part whose check was deferred is refused with its code when
it is first needed."""

from __future__ import annotations

import functools
import hashlib
import json
import pickle
from dataclasses import replace

import numpy as np
import pytest

import trgc
from engine_fixtures import ROOT
from test_engine_maskstore import LLAMA3, SCHEMA  # the same schema and bundled table
from trgc.artifact import codec
from trgc.compiler import cache as cache_module
from trgc.compiler import schema as schema_module
from trgc.engine import kernel, maskform, reference
from trgc.engine.binding import bind
from trgc.engine.cache import MaskCache
from trgc.engine.config import mask_key
from trgc.engine.diskcache import DiskCache, EntryKey, decode_entry, encode_entry
from trgc.engine.maskstore import START_LINK, store_key
from trgc.engine.matcher import Matcher
from trgc.grammar.schema.canonical import canonical_instance

INSTANCE = {"id": 40213, "name": 'Zoë "q"', "kind": "gamma", "tags": ["a b", "ü"], "ok": False}
SHIPPED_SCHEMAS = sorted((ROOT / "schemas").glob("*.json"))
SAMPLE = 400
WARMUP_SCHEMA = {"type": "array", "items": {"type": "integer"}, "maxItems": 2}


@functools.cache
def llama3():
    return trgc.load_tokenizer(LLAMA3)


def compile_warm(disk: DiskCache, schema=SCHEMA):
    return trgc.compile_schema(schema, separators="compact", cache=disk)


def fresh(disk: DiskCache, schema=SCHEMA) -> Matcher:
    """A matcher as a new process makes it over `disk`: the artifact from the cache (a new
    object), a new in-memory cache."""
    return Matcher(compile_warm(disk, schema), llama3(), cache=MaskCache(), disk_cache=disk)


def forced_tokens(m: Matcher, text: bytes) -> list[int]:
    """Teacher-force `text`: at each step the longest allowed token that spells the next
    bytes (the mask decides; the instance is valid, so one always exists)."""
    b = m._binding
    tokens, at = [], 0
    while at < len(text):
        allowed = np.flatnonzero(m.allowed_tokens() & b.byte_token)
        best = max((t for t in allowed.tolist() if text.startswith(b.token_bytes(t), at)),
                   key=lambda t: len(b.token_bytes(t)))  # fmt: skip
        m.advance(best)
        tokens.append(best)
        at += len(b.token_bytes(best))
    return tokens


def seeded_tokens(m: Matcher, seed: int, steps: int = 40) -> list[int]:
    rng = np.random.default_rng(seed)
    b = m._binding
    tokens = []
    for _ in range(steps):
        allowed = np.flatnonzero(m.allowed_tokens() & b.byte_token)
        if not allowed.size:
            break
        tokens.append(int(rng.choice(allowed)))
        m.advance(tokens[-1])
    return tokens


def expected_mask(b, config, rng) -> tuple[np.ndarray, np.ndarray]:
    """(tokens checked, the reference masker's answer on them): every token at the start
    configuration, else the allowed ones, a sample of the others, EOS and specials."""
    mask = kernel.allowed_mask(b, config)
    allowed = np.flatnonzero(mask)
    others = np.flatnonzero(~mask)
    sample = np.unique(np.concatenate([
        rng.choice(allowed, min(SAMPLE, allowed.size), replace=False),
        rng.choice(others, min(SAMPLE, others.size), replace=False),
        b.eos_ids.astype(np.int64),
    ]))  # fmt: skip
    return sample, reference.allowed_mask(b, config, sample.tolist())[sample]


def served(disk: DiskCache) -> DiskCache:
    """`disk` after it served a matcher of the bundled table (a server's earlier schema): its
    `last_binding` names that binding, so compiles read start entries."""
    fresh(disk, WARMUP_SCHEMA).allowed_tokens()
    assert disk.last_binding is not None
    return disk


def replay_from_store(
    disk: DiskCache, tokens: list[int], seed: int, schema=SCHEMA
) -> dict[str, int]:
    """A fresh matcher along `tokens`: each mask is written by `fill_bitmask` into a row
    full of garbage and must equal the kernel's mask and the reference masker's (on a
    sample); returns how many masks each store form answered (and, under "unclipped", at
    how many configurations that are not their own mask key). After the first `advance`
    nothing of the store is pending: every later mask is a lookup."""
    m = fresh(disk, schema)
    b = m._binding
    rng = np.random.default_rng(seed)
    buffer = np.full((2, b.n_words + 3), -1, dtype=np.int32)
    forms = {"Sparse": 0, "Dense": 0, "unclipped": 0}
    for i in range(len(tokens) + 1):
        buffer[:] = rng.integers(-(2**31), 2**31, size=buffer.shape, dtype=np.int64)
        m.fill_bitmask(buffer, 1)
        assert m.last_source == "store", i
        config = m.config
        forms[type(m._store.masks[mask_key(config, b.trie_depth)]).__name__] += 1
        forms["unclipped"] += mask_key(config, b.trie_depth) != config
        got = np.unpackbits(buffer[1, : b.n_words].view(np.uint8), bitorder="little")
        got = got[: b.vocab_size].astype(bool)
        assert (buffer[1, b.n_words :] == 0).all()  # past the vocabulary: never allowed
        assert (got == kernel.allowed_mask(b, config)).all(), i
        sample, want = expected_mask(b, config, rng)
        assert (got[sample] == want).all(), i
        if i < len(tokens):
            m.advance(tokens[i])
            assert not m._store.pending
    return forms


def populate(tmp_path, walk) -> list[int]:
    """Run `walk` over a fresh matcher on an empty cache (and the mask after its last token),
    so that the store holds every configuration along it."""
    disk = DiskCache(tmp_path)
    m = fresh(disk)
    tokens = walk(m)
    m.allowed_tokens()
    assert disk.flush(60)
    return tokens


@pytest.mark.parametrize(
    "walk",
    [pytest.param(lambda m: seeded_tokens(m, 5), id="seeded walk"),
     pytest.param(lambda m: forced_tokens(m, canonical_instance(SCHEMA, INSTANCE, "compact")),
                  id="teacher-forced instance")],
)  # fmt: skip
@pytest.mark.parametrize("start_entry", [False, True], ids=["store entry", "start entry"])
def test_store_masks_equal_the_reference_at_every_step(tmp_path, walk, start_entry, request):
    tokens = populate(tmp_path, walk)
    assert len(tokens) >= 15
    disk = served(DiskCache(tmp_path)) if start_entry else DiskCache(tmp_path)
    forms = replay_from_store(disk, tokens, seed=3)
    assert forms["Sparse"], forms
    if "teacher" in request.node.name:  # the strings' bodies: dense masks
        assert forms["Dense"], forms
    assert disk.stats.refused == {}


LONG_STRING = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 3000}},
               "required": ["text"]}  # fmt: skip


def test_store_masks_at_unclipped_counters_equal_the_reference(tmp_path):
    """A string counter far above the longest token: along a seeded walk into it the
    configurations are not their own mask keys, and each mask the store answers (looked up
    by the key) still equals the kernel's and the reference masker's."""
    disk = DiskCache(tmp_path)
    m = fresh(disk, LONG_STRING)
    tokens = seeded_tokens(m, 11, steps=30)
    m.allowed_tokens()
    assert disk.flush(60)
    forms = replay_from_store(DiskCache(tmp_path), tokens, seed=4, schema=LONG_STRING)
    assert forms["unclipped"] >= 10, forms


def test_the_first_warm_mask_needs_no_table(tmp_path):
    """With the artifact and the store in the cache, the first mask decodes no machine,
    flattens no table and makes no kernel buffer; the first advance does."""
    populate(tmp_path, lambda m: seeded_tokens(m, 5, steps=4))
    disk = DiskCache(tmp_path)
    artifact = compile_warm(disk)
    m = Matcher(artifact, llama3(), cache=MaskCache(), disk_cache=disk)
    m.fill_bitmask(np.zeros((1, m._binding.n_words), dtype=np.int32))
    assert m.last_source == "store"
    assert "_machines" not in vars(artifact) and "engine.tables" not in artifact._cache
    assert "tables" not in m._binding._lazy and "_scratch" not in vars(m)
    assert m._store.pending  # the rest of the store is still compressed
    m.advance(int(np.flatnonzero(m.allowed_tokens() & m._binding.byte_token)[0]))
    assert "_machines" in vars(artifact) and "tables" in m._binding._lazy


@pytest.mark.parametrize("path", SHIPPED_SCHEMAS, ids=lambda p: p.name)
def test_the_lazy_binding_equals_the_eager_one(tmp_path, path):
    """A deferred artifact read from the cache binds to the same key, tables and masks as the
    artifact compiled now."""
    schema = json.loads(path.read_text(encoding="utf-8"))
    disk = DiskCache(tmp_path)
    eager = trgc.compile_schema(schema, separators="compact")
    compile_warm(disk, schema)
    assert disk.flush(30)
    lazy = compile_warm(DiskCache(tmp_path), schema)
    assert isinstance(lazy, codec._DeferredArtifact) and lazy.sha256 == eager.sha256
    a, b = bind(eager, llama3()), bind(lazy, llama3())
    assert a.key == b.key and (a.special_ids == b.special_ids).all()
    for name in ("next", "calls", "call_entry", "accepting", "need", "need_more", "cost"):
        assert (getattr(a.tables, name) == getattr(b.tables, name)).all(), name
    assert a.tables.max_frames == b.tables.max_frames
    ma, mb = Matcher(eager, llama3()), Matcher(lazy, llama3())
    rng = np.random.default_rng(1)
    for _ in range(25):
        words = ma.allowed_tokens_packed()
        assert (words == mb.allowed_tokens_packed()).all()
        allowed = np.flatnonzero(ma.allowed_tokens() & a.byte_token)
        if not allowed.size:
            break
        token = int(rng.choice(allowed))
        ma.advance(token)
        mb.advance(token)


def test_a_deferred_artifact_decodes_as_the_eager_one():
    art = trgc.compile_schema(SCHEMA)
    data = codec.encode(art)
    lazy = codec.decode_deferred(data)
    assert lazy.sha256 == art.sha256 == codec.identity_of_bytes(data)
    assert (lazy.metadata, lazy.specials, lazy.n_classes, lazy.max_depth) == (
        art.metadata, art.specials, art.n_classes, art.max_depth)  # fmt: skip
    assert (lazy.byte_class == art.byte_class).all()
    for x, y in zip(lazy.machines, art.machines, strict=True):
        assert x.name == y.name and x.kind == y.kind
        assert (x.next == y.next).all() and (x.calls == y.calls).all()
        assert (x.accepting == y.accepting).all() and (x.call_bounds == y.call_bounds).all()
    plain = pickle.loads(pickle.dumps(lazy))
    assert type(plain) is trgc.Artifact and plain.sha256 == art.sha256


def _resealed(data: bytes, at: int, value: bytes) -> bytes:
    """Canonical artifact bytes with `value` written at `at` and the digest section made
    right again: a payload every container and digest check accepts."""
    out = bytearray(data)
    out[at : at + len(value)] = value
    sections = codec._frame_sections(bytes(out), digest=False)
    start, end = sections[b"DGST"]
    out[start:end] = hashlib.sha256(bytes(out[: start - codec.SECTION_HEADER_SIZE])).digest()
    return bytes(out)


def _machine_table_offset(data: bytes) -> int:
    """Byte offset of machine 0's first transition in section MACH."""
    start, _ = codec._frame_sections(data)[b"MACH"]
    reader = codec._Reader(data, start, len(data), "MACH")
    for _ in range(3):
        reader.u32("header")
    reader.string("name")
    reader.u32("kind")
    n_states = reader.u32("states")
    reader.u32("calls")
    reader.take(n_states, "accepting")
    reader.align(codec.FIELD_ALIGN)
    return reader.pos


def _limits_value_offset(data: bytes) -> int:
    start, _ = codec._frame_sections(data)[b"LIMT"]
    reader = codec._Reader(data, start, len(data), "LIMT")
    reader.u32("count")
    reader.string("name")
    return reader.pos


def _metadata_reordered(data: bytes) -> tuple[int, bytes]:
    """(offset, bytes) that rewrite the metadata's `compiler` object with its keys out of
    order: the same JSON value, the same length, but not canonical JSON."""
    version = trgc.__version__.encode()
    old = b'{"name":"trgc","version":"%b"}' % version
    new = b'{"version":"%b","name":"trgc"}' % version
    assert len(old) == len(new) and data.count(old) == 1
    return data.index(old), new


@pytest.mark.parametrize("part", ["transition table", "limits section", "metadata form"])
def test_a_corrupted_deferred_part_is_refused_with_its_code(tmp_path, monkeypatch, part):
    """An entry whose container, digest, metadata values and source hash are sound but whose
    machine tables (or limits section, or the canonical form of its metadata) are not: the
    compile returns (those parts are checked when first used), the first use raises
    E_CACHE_ENTRY_PAYLOAD and removes the entry, and the next compile compiles the schema
    again and works."""
    source = json.dumps(SCHEMA)
    disk = DiskCache(tmp_path)
    good = trgc.compile_schema(source, cache=disk)
    assert disk.flush(30)
    (path,) = disk.layout.rglob("*.entry")
    key = EntryKey(**json.loads(decode_entry(path.read_bytes(), None, path)[0]))
    data = decode_entry(path.read_bytes(), key, path)[1]
    if part == "transition table":  # a shift to a state machine 0 does not have
        bad = _resealed(data, _machine_table_offset(data), (10**6).to_bytes(4, "little"))
    elif part == "limits section":  # a limit the metadata does not name
        bad = _resealed(data, _limits_value_offset(data), (7).to_bytes(8, "little"))
    else:
        bad = _resealed(data, *_metadata_reordered(data))
    with pytest.raises(trgc.TrgcError):
        codec.decode(bad)
    path.write_bytes(encode_entry(key, bad))
    compiled = []
    monkeypatch.setattr(
        schema_module, "compile_ast", _counting(compiled, schema_module.compile_ast)
    )
    disk = DiskCache(tmp_path)
    art = trgc.compile_schema(source, cache=disk)  # accepted so far: checked when used
    assert disk.stats.hits == 1 and path.exists() and not compiled
    with pytest.raises(trgc.TrgcError) as info:
        Matcher(art, llama3()).allowed_tokens()
    assert info.value.code == "E_CACHE_ENTRY_PAYLOAD"
    assert disk.stats.refused == {"E_CACHE_ENTRY_PAYLOAD": 1} and not path.exists()
    with pytest.raises(trgc.TrgcError) as again:  # never half-used: the same error again
        _ = art.machines
    assert again.value is info.value
    fresh_art = trgc.compile_schema(source, cache=disk)
    assert fresh_art.sha256 == good.sha256 and len(compiled) == 1  # compiled, not read
    assert Matcher(fresh_art, llama3()).allowed_tokens().any()


def start_entry_path(disk: DiskCache, artifact) -> object:
    link = artifact._cache[START_LINK]
    _, tokenizer, compiler, policy = bind(artifact, llama3()).key
    return disk.path_of(EntryKey(link.kind, link.format, tokenizer, compiler, policy, link.subject))


def test_a_served_cache_answers_the_first_mask_in_one_read(tmp_path):
    """The start entry holds the artifact and its start mask: compile, matcher and first mask
    read one entry (no artifact entry, no store entry); the first advance reads the store
    and decodes all of it, so the second mask is a lookup."""
    tokens = populate(tmp_path, lambda m: seeded_tokens(m, 5, steps=6))
    disk = served(DiskCache(tmp_path))
    hits = disk.stats.hits
    artifact = compile_warm(disk)
    assert start_entry_path(disk, artifact).is_file()
    m = Matcher(artifact, llama3(), cache=MaskCache(), disk_cache=disk)
    buffer = np.zeros((1, m._binding.n_words), dtype=np.int32)
    m.fill_bitmask(buffer)
    assert m.last_source == "store" and disk.stats.hits == hits + 1
    assert "_machines" not in vars(artifact) and "tables" not in m._binding._lazy
    assert m._store.pending and m._store._rest is None  # the store entry is not read yet
    m.advance(tokens[0])
    assert disk.stats.hits == hits + 2 and not m._store.pending
    m.fill_bitmask(buffer)
    assert m.last_source == "store" and disk.stats.refused == {}


def test_a_start_entry_of_another_binding_is_never_used(tmp_path):
    """A start mask is the start entry's binding's only: a head naming another tokenizer is
    ignored (the store entry answers), whatever its bytes."""
    populate(tmp_path, lambda m: seeded_tokens(m, 5, steps=4))
    disk = served(DiskCache(tmp_path))
    artifact = compile_warm(disk)
    link = artifact._cache[START_LINK]
    tokenizer, compiler, policy, head = link.head
    artifact._cache[START_LINK] = replace(link, head=("sha256:" + "0" * 64, compiler, policy, head))
    m = Matcher(artifact, llama3(), cache=MaskCache(), disk_cache=disk)
    assert not m._store._unread and m._store._rest is not None  # read the store entry
    assert m.allowed_tokens().any() and m.last_source == "store"


def test_a_corrupted_start_mask_is_refused_with_its_code(tmp_path):
    """A start entry whose container and artifact are sound but whose start mask allows a
    token the binding never allows: refused (E_CACHE_ENTRY_PAYLOAD) and removed when the
    matcher is made, the store's start mask answers, every mask is still right, and a sound
    start entry is published again."""
    tokens = populate(tmp_path, lambda m: seeded_tokens(m, 5, steps=8))
    disk = served(DiskCache(tmp_path))
    artifact = compile_warm(disk)
    path = start_entry_path(disk, artifact)
    key = EntryKey(**json.loads(decode_entry(path.read_bytes(), None, path)[0]))
    b = bind(artifact, llama3())
    possible = b.byte_token.copy()
    possible[b.eos_ids] = True
    never = int(np.flatnonzero(~possible)[0])
    words = Matcher(artifact, llama3()).allowed_tokens_packed().view(np.uint32).copy()
    words[never // 32] |= np.uint32(1 << (never % 32))
    bad = artifact._cache[START_LINK].payload(artifact.to_bytes(), maskform.encode(words))
    path.write_bytes(encode_entry(key, bad))
    disk = served(DiskCache(tmp_path))
    replay_from_store(disk, tokens, seed=4)
    assert disk.stats.refused == {"E_CACHE_ENTRY_PAYLOAD": 1}
    assert "never allows" in disk.stats.last_refusal.message
    assert disk.stats.last_refusal.source == str(path)
    assert disk.flush(60) and path.is_file()  # published again, sound
    again = served(DiskCache(tmp_path))
    replay_from_store(again, tokens, seed=5)
    assert again.stats.refused == {}


def test_a_corrupted_store_behind_a_start_entry_is_refused_at_the_first_advance(tmp_path):
    """The store entry is read at the first advance when the start entry answered the first
    mask: a corrupted one is refused then with its code, and the masks are computed again."""
    tokens = populate(tmp_path, lambda m: seeded_tokens(m, 5, steps=8))
    disk = served(DiskCache(tmp_path))
    artifact = compile_warm(disk)
    path = disk.path_of(store_key(bind(artifact, llama3())))
    data = bytearray(path.read_bytes())
    data[len(data) - 100] ^= 0x01
    path.write_bytes(bytes(data))
    m = Matcher(artifact, llama3(), cache=MaskCache(), disk_cache=disk)
    first = m.allowed_tokens_packed()
    assert m.last_source == "store" and disk.stats.refused == {}
    m.advance(tokens[0])
    assert disk.stats.refused == {"E_CACHE_ENTRY_CORRUPT": 1} and not path.exists()
    plain = Matcher(trgc.compile_schema(SCHEMA, separators="compact"), llama3())
    assert (first == plain.allowed_tokens_packed()).all()
    plain.advance(tokens[0])
    assert (m.allowed_tokens_packed() == plain.allowed_tokens_packed()).all()
    assert m.last_source != "store"


def test_the_start_link_key_is_the_compilers():
    assert START_LINK == cache_module.START_LINK


def _counting(calls: list, function):
    def counted(*args, **kwargs):
        calls.append(args)
        return function(*args, **kwargs)

    return counted


@pytest.mark.parametrize("k", [0, 1, 5, 16, 17, 300, 2003, 2004, 4008])
def test_mask_forms_round_trip_and_fill_a_dirty_row(k):
    """A mask with `k` nonzero words: sparse exactly when that form is smaller, the same bytes
    for the same mask, decoded back to the same words, and written over a row of garbage
    (the tail past the mask zeroed by the caller's code path) exactly."""
    n_words = 4008
    rng = np.random.default_rng(k)
    words = np.zeros(n_words, dtype=np.uint32)
    where = rng.choice(n_words, k, replace=False)
    words[where] = rng.integers(1, 2**32, size=k, dtype=np.uint64).astype(np.uint32)
    data = maskform.encode(words)
    assert data == maskform.encode(words.copy())
    form, end = maskform.decode(data, 0, n_words)
    assert end == len(data)
    assert isinstance(form, maskform.Sparse) == (2 * k < n_words)
    assert (form.words() == words).all()
    buffer = rng.integers(-(2**31), 2**31, size=(3, n_words), dtype=np.int64).astype(np.int32)
    before = buffer.copy()
    form.fill(maskform.Row.within(buffer, 1, n_words))
    assert (buffer[1].view(np.uint32) == words).all()
    assert (buffer[[0, 2]] == before[[0, 2]]).all()  # other rows untouched


@pytest.mark.parametrize(
    "bad",
    [b"\x02\x00\x00\x00\x00\x00\x00\x00", b"\x01\x00\x00\x00\x02\x00\x00\x00\x05\x00\x00\x00"
     b"\x03\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00", b"\x01\x00\x00\x00\x01\x00\x00\x00"
     b"\x05\x00\x00\x00\x00\x00\x00\x00", b"\x00\x00\x00\x00\x08\x00\x00\x00" + bytes(32)],
    ids=["unknown tag", "positions out of order", "a zero word", "dense but sparse-sized"],
)  # fmt: skip
def test_non_canonical_mask_bytes_are_refused(bad):
    with pytest.raises(maskform.FormError):
        maskform.decode(bad, 0, 8)
