"""The artifact cache (`trgc.compiler.cache`): a compiled schema or grammar is read back from a
`DiskCache` instead of compiled, under a key that changes with every option and limit, and a
corrupted or foreign entry is refused with its code and compiled again."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

import pytest

import trgc
from trgc.artifact.codec import encode
from trgc.compiler import schema as schema_module
from trgc.compiler.cache import VALUE_KIND, artifact_key
from trgc.engine.diskcache import DiskCache, EntryKey, decode_entry, encode_entry
from trgc.errors import TrgcError
from trgc.grammar.schema import DEFAULT_MAX_DEPTH
from trgc.grammar.schema.whitespace import DEFAULT_MAX_WHITESPACE
from trgc.limits import DEFAULT_LIMITS

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}
OTHER_LIMITS = DEFAULT_LIMITS.with_overrides({"states": 100_000})
GRAMMAR = '%trg 1\n%start s\ns ::= "x" ("y" | "z")* ;\n'


def compiles(monkeypatch) -> list[int]:
    """Count the compiles `compile_schema` really runs."""
    counted: list[int] = []
    real = schema_module.compile_ast

    def counting(*args, **kwargs):
        counted.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(schema_module, "compile_ast", counting)
    return counted


def warm(cache: DiskCache, **options) -> trgc.Artifact:
    artifact = trgc.compile_schema(SCHEMA, cache=cache, **options)
    assert cache.flush(30)
    return artifact


def test_a_cached_schema_is_read_not_compiled(tmp_path, monkeypatch):
    cache = DiskCache(tmp_path)
    counted = compiles(monkeypatch)
    first = warm(cache)
    second = trgc.compile_schema(SCHEMA, cache=cache)
    # another process (a new DiskCache object over the directory) reads it too
    other = DiskCache(tmp_path)
    third = trgc.compile_schema(SCHEMA, cache=other)
    assert len(counted) == 1
    assert cache.stats.hits == 1 and other.stats.hits == 1
    assert second.sha256 == third.sha256 == first.sha256 == trgc.compile_schema(SCHEMA).sha256
    assert encode(second) == encode(first)


@pytest.mark.parametrize(
    "options",
    [{"open_objects": True}, {"separators": "compact"}, {"max_depth": 8},
     {"member_order": "any"}, {"limits": OTHER_LIMITS}],
)  # fmt: skip
def test_every_option_and_limit_is_part_of_the_key(tmp_path, monkeypatch, options):
    cache = DiskCache(tmp_path)
    plain = warm(cache)
    counted = compiles(monkeypatch)
    other = trgc.compile_schema(SCHEMA, cache=cache, **options)
    assert len(counted) == 1  # compiled, not taken from the cache
    assert other.sha256 == trgc.compile_schema(SCHEMA, **options).sha256
    if "limits" not in options:
        assert other.sha256 != plain.sha256


def test_schema_text_and_value_are_keyed_by_their_own_hash(tmp_path):
    cache = DiskCache(tmp_path)
    warm(cache)
    spaced = trgc.compile_schema(json.dumps(SCHEMA, indent=1), cache=cache)
    assert cache.stats.hits == 0
    assert spaced.sha256 == trgc.compile_schema(json.dumps(SCHEMA, indent=1)).sha256
    assert cache.flush(30)
    assert trgc.compile_schema(json.dumps(SCHEMA, indent=1).encode(), cache=cache).sha256 == (
        spaced.sha256
    )
    assert cache.stats.hits == 1  # text and bytes: one key, the artifact's own source hash
    # a value whose JSON text reads back as another value is compiled, never looked up
    tupled = {"type": "object", "required": ("a",), "properties": {"a": {"type": "integer"}}}
    with pytest.raises(TrgcError):
        trgc.compile_schema(tupled, cache=cache)
    assert cache.stats.hits == 1 and cache.stats.misses == 2


def test_a_grammar_is_cached_with_its_strictness(tmp_path):
    cache = DiskCache(tmp_path)
    first = trgc.compile_grammar(GRAMMAR, cache=cache)
    assert cache.flush(30)
    assert trgc.compile_grammar(GRAMMAR, cache=cache).sha256 == first.sha256
    assert cache.stats.hits == 1
    trgc.compile_grammar(GRAMMAR, cache=cache, strict=True)
    assert cache.stats.hits == 1


def key_of(cache: DiskCache):
    text = json.dumps(SCHEMA, separators=(",", ":"))
    options = {"whitespace": None, "separators": None, "max_whitespace": DEFAULT_MAX_WHITESPACE,
               "open_objects": False, "max_depth": DEFAULT_MAX_DEPTH, "ignore_keywords": [],
               "unknown_keywords": "error", "member_order": "declared"}  # fmt: skip
    digest = hashlib.sha256(text.encode()).hexdigest()
    return artifact_key(cache, VALUE_KIND, digest, options, DEFAULT_LIMITS)


def test_a_value_ordered_otherwise_is_another_schema(tmp_path):
    """Two parsed values equal as dicts whose `properties` come in another order compile to
    different artifacts (the declared member order), so neither is read for the other."""
    reordered = {"type": "object", "properties": dict(reversed(SCHEMA["properties"].items()))}
    assert reordered == SCHEMA
    cache = DiskCache(tmp_path)
    first = warm(cache)
    other = trgc.compile_schema(reordered, cache=cache)
    assert cache.stats.hits == 0 and other.sha256 != first.sha256
    assert other.sha256 == trgc.compile_schema(reordered).sha256
    assert cache.flush(30)
    assert trgc.compile_schema(reordered, cache=DiskCache(tmp_path)).sha256 == other.sha256
    assert trgc.compile_schema(SCHEMA, cache=DiskCache(tmp_path)).sha256 == first.sha256


def test_the_key_is_what_compile_schema_uses(tmp_path):
    cache = DiskCache(tmp_path)
    warm(cache)
    assert cache.path_of(key_of(cache)).is_file()


def test_a_corrupted_entry_is_refused_and_compiled_again(tmp_path, monkeypatch):
    cache = DiskCache(tmp_path)
    first = warm(cache)
    path = cache.path_of(key_of(cache))
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40
    path.write_bytes(bytes(data))
    counted = compiles(monkeypatch)
    again = trgc.compile_schema(SCHEMA, cache=cache)
    assert again.sha256 == first.sha256 and len(counted) == 1
    assert cache.stats.refused == {"E_CACHE_ENTRY_CORRUPT": 1}


@pytest.mark.parametrize("payload", ["garbage", "other limits", "other schema"])
def test_a_foreign_payload_is_refused_and_compiled_again(tmp_path, monkeypatch, payload):
    """An entry whose container is sound but whose payload is not this key's artifact: bytes
    that do not decode, an artifact compiled with other limits, or (for schema text, whose
    hash the artifact records) the artifact of another schema: a writer's bug."""
    cache = DiskCache(tmp_path)
    source = json.dumps(SCHEMA)
    first = trgc.compile_schema(source, cache=cache)
    assert cache.flush(30)
    (path,) = cache.layout.rglob("*.entry")
    key = EntryKey(**json.loads(decode_entry(path.read_bytes(), None, path)[0]))
    if payload == "garbage":
        body = b"TRGA not an artifact"
    elif payload == "other limits":
        body = encode(trgc.compile_schema(source, limits=OTHER_LIMITS))
    else:
        body = encode(trgc.compile_schema({"type": "array"}))
    path.write_bytes(encode_entry(key, body))
    counted = compiles(monkeypatch)
    again = trgc.compile_schema(source, cache=cache)
    assert again.sha256 == first.sha256 and len(counted) == 1
    assert cache.stats.refused == {"E_CACHE_ENTRY_PAYLOAD": 1}
    assert cache.stats.last_refusal.code == "E_CACHE_ENTRY_PAYLOAD"
    assert cache.flush(30) and cache.stats.writes == 2  # the good artifact, published again
    hits = cache.stats.hits
    assert trgc.compile_schema(source, cache=cache).sha256 == first.sha256
    assert cache.stats.hits == hits + 1 and len(counted) == 1


def test_an_entry_of_another_compiler_version_is_never_read(tmp_path):
    cache = DiskCache(tmp_path)
    warm(cache)
    key = key_of(cache)
    assert key.compiler == trgc.__version__
    assert cache.get(replace(key, compiler="0.0.0-other")) is None


def test_a_cache_of_another_type_is_refused():
    with pytest.raises(TrgcError) as info:
        trgc.compile_schema(SCHEMA, cache="/tmp/somewhere")
    assert info.value.code == "E_ARGUMENT_TYPE"


def test_compile_errors_are_not_cached(tmp_path):
    cache = DiskCache(tmp_path)
    for _ in range(2):
        with pytest.raises(TrgcError) as info:
            trgc.compile_schema({"type": "string", "minLength": 3, "maxLength": 1}, cache=cache)
        assert info.value.code == "E_UNSATISFIABLE"
    assert cache.flush(30) and cache.stats.writes == 0
