"""The artifact cache: compiled artifacts kept in a `DiskCache`, keyed by what defines them.

An artifact is a function of its source bytes, every compile option, the limits and the
compiler version, so a source compiled again (a runtime that sees the same schema in another
process) is a read instead of a compile. The entry's key (`EntryKey` of kind `artifact`)
names the artifact format version and the compiler version; its subject is the SHA-256 of
the canonical JSON of the source kind, the source's SHA-256, the options and the limits. The
payload is the artifact's canonical bytes.

Nothing read is trusted blindly: the `DiskCache` checks the entry's digest and the key stored
inside it, then the payload is decoded (`trgc.artifact.codec.decode_deferred`: framing,
digest, metadata, specials, byte classes, source hash now) and its metadata must name the
same source hash, limits and compiler version. A payload that fails is refused
(`E_CACHE_ENTRY_PAYLOAD`, counted and removed) and the source is compiled again. The machine
tables, with every other check of `trgc.artifact.codec.decode`, are decoded when the engine
first needs them (a warm matcher's first mask, read from its mask store, needs none): a
failure then raises `E_CACHE_ENTRY_PAYLOAD` from that call and removes the entry, so the next
compile of the source compiles it. New artifacts are published in the background (`DiskCache.put_later`): a compile does
not wait for the cache's file system.

A *start entry* (kind `artifact-start`) holds an artifact with the start configuration's mask
for one binding (tokenizer, compiler, policy), so that a warm matcher's first mask is one read:
it is read first, for the binding the cache last served (`DiskCache.last_binding`), and
published by the engine's mask store (through the `StartLink` attached to every artifact a
cached compile returns); its artifact is checked as an artifact entry's, its start mask by the
engine.
"""

from __future__ import annotations

import functools
import hashlib
import json
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from trgc.artifact.codec import FORMAT_VERSION, decode_deferred, encode
from trgc.artifact.model import Artifact
from trgc.errors import TrgcError
from trgc.limits import Limits

KIND = "artifact"
START_KIND = "artifact-start"  # an artifact with its start mask for one binding: one read
START_FORMAT = 1
START_MAGIC = b"TRGCAST1"
_START_HEAD = struct.Struct("<8sI")  # magic, bytes of the start mask
START_LINK = "cache.start"  # the artifact's memo key of its `StartLink`
LATE_HINT = "the entry was removed; compile the source again (it is compiled, not read, next time)"


@runtime_checkable
class EntryStore(Protocol):
    """What this module needs of a cache: `trgc.engine.diskcache.DiskCache` (the compiler layer
    sits below the engine, so it names the cache by its methods, not by its class)."""

    def entry_key(self, kind: str, format: int, tokenizer: str, compiler: str, policy: str,
                  subject: str) -> Any: ...  # fmt: skip
    def get(self, key: Any) -> bytes | None: ...
    def put_later(self, key: Any, make_payload: Callable[[], bytes]) -> None: ...
    def discard(self, key: Any, error: TrgcError) -> None: ...
    def path_of(self, key: Any) -> Any: ...


@functools.lru_cache(maxsize=16)
def _is_entry_store(kind: type) -> bool:
    """`isinstance(x, EntryStore)` by the type (a runtime protocol check walks the protocol's
    members every time: 30 us, a tenth of a warm compile)."""
    return all(callable(getattr(kind, name, None)) for name in _STORE_METHODS)


_STORE_METHODS = ("entry_key", "get", "put_later", "discard", "path_of")


@functools.lru_cache(maxsize=64)
def _limits_dict(limits: Limits) -> dict[str, int]:
    """`limits.to_dict()`, memoised (a cache hit costs about a millisecond, and `asdict` deep-
    copies; the dict is only read)."""
    return limits.to_dict()


def artifact_subject(source_kind: str, source_sha256: str, options: dict, limits: Limits) -> str:
    """The subject of the key of the artifact compiled from a source (`source_sha256`: hex
    SHA-256 of its bytes) with `options` (JSON values only) and `limits`: the hex SHA-256 of
    the canonical JSON of {limits, options, source_kind, source_sha256} (sorted keys), with
    the limits' part written once per `Limits`."""
    canonical = "".join((_limits_json(limits), ',"options":', _json(options), ',"source_kind":',
                         _quote(source_kind), ',"source_sha256":', _quote(source_sha256), "}"))  # fmt: skip
    return hashlib.sha256(canonical.encode()).hexdigest()


def artifact_key(
    cache: EntryStore, source_kind: str, source_sha256: str, options: dict, limits: Limits
) -> Any:
    """The key in `cache` of the artifact entry (`artifact_subject`)."""
    return _artifact_key(cache, artifact_subject(source_kind, source_sha256, options, limits))


def _artifact_key(cache: EntryStore, subject: str) -> Any:
    return cache.entry_key(KIND, FORMAT_VERSION, "", _compiler_version(), "", subject)


def _compiler_version() -> str:
    """`trgc.__version__` (a plain `import` of the loaded package: `from trgc import ...` in a
    function runs importlib's Python-level fromlist handling at every call)."""
    import trgc

    return trgc.__version__


# made once: `json.dumps` with options makes an encoder per call, which a warm compile (a
# cache read of a few hundred microseconds) would pay three times; encoding is stateless
_json = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode
_quote = json.encoder.encode_basestring  # a str as `_json` writes it (ensure_ascii=False)
# the same text as `json.dumps(value, separators=(",", ":"), allow_nan=False)`; a value that
# holds itself recurses until RecursionError instead of the circular-reference check (whose
# bookkeeping costs an insert and a delete per container): refused the same way
_value_json = json.JSONEncoder(separators=(",", ":"), allow_nan=False, check_circular=False).encode
_scan = json.JSONDecoder().scan_once  # (value, end) of the JSON value at an offset


@functools.lru_cache(maxsize=64)
def _limits_json(limits: Limits) -> str:
    """The start of the key's canonical JSON: `{"limits":{...}`."""
    return '{"limits":' + _json(_limits_dict(limits))


def text_identity(source_kind: str, text: object) -> tuple[str, str, str] | None:
    """(source kind, SHA-256 of the text's bytes, the same as the artifact's source hash) of
    source text or bytes; None for anything else (the compiler reports its type)."""
    if isinstance(text, str):
        data = text.encode("utf-8", "surrogatepass")
    elif isinstance(text, bytes | bytearray | memoryview):
        data = bytes(text)
    else:
        return None
    digest = hashlib.sha256(data).hexdigest()
    return source_kind, digest, digest


VALUE_KIND = "trj-value-ordered"  # a parsed schema value, keyed by its JSON text in its own order


def schema_identity(schema: object) -> tuple[str, str, str | None] | None:
    """(source kind, key digest, the artifact's source_sha256 or None when unknown) of a
    schema as `compile_schema` takes it, computed without parsing it the compiler's way: text
    and bytes by the SHA-256 of their bytes (the artifact's own source hash); a parsed value
    by the SHA-256 of its JSON text with its members in the value's own order, when that text
    reads back as an equal value (else None: such a value is compiled without the cache).
    The order takes part because the compiler reads it (`member_order="declared"` keeps the
    order of `properties`): two values equal as dicts but ordered differently compile to
    different artifacts, and their artifacts' source hash (of sorted-key JSON) is the same, so
    a sorted-key identity would return one for the other. The canonical JSON the artifact's
    source hash is taken over costs 0.1-2 ms in Python, more than the whole cache hit."""
    if not isinstance(schema, dict | bool):
        return text_identity("trj", schema)
    try:
        text = _value_json(schema)
        value, end = _scan(text, 0)  # `json.loads` without its whitespace steps: none here
        if end != len(text) or value != schema:
            return None  # lossy: keys that are not strings, tuples, ...
    except (TypeError, ValueError, RecursionError, StopIteration):
        return None
    return VALUE_KIND, hashlib.sha256(text.encode()).hexdigest(), None


def _verified(
    payload: bytes, source_sha256: str | None, limits: Limits, on_error: Callable
) -> Artifact:
    """The artifact in `payload`, checked against what its key promises. Its machine tables
    are decoded, with every check of `trgc.artifact.codec.decode`, when first used
    (`decode_deferred`): a warm matcher's first mask needs none of them. A failure then goes
    through `on_error`."""
    artifact = decode_deferred(payload, limits=limits, on_error=on_error)
    metadata = artifact.metadata
    if source_sha256 is not None and metadata.get("source_sha256") not in (
        None,
        "sha256:" + source_sha256,
    ):
        raise TrgcError("E_CACHE_ENTRY_PAYLOAD", "the cached artifact names another source")
    if metadata.get("limits") != _limits_dict(limits):
        raise TrgcError(
            "E_CACHE_ENTRY_PAYLOAD", "the cached artifact was compiled with other limits"
        )
    if (metadata.get("compiler") or {}).get("version") != _compiler_version():
        raise TrgcError("E_CACHE_ENTRY_PAYLOAD", "the cached artifact names another compiler")
    return artifact


def _refused(cache: EntryStore, key: Any, error: TrgcError, hint: str) -> TrgcError:
    """Remove the entry under `key` as refused (`E_CACHE_ENTRY_PAYLOAD`); the error reported."""
    refusal = TrgcError(
        "E_CACHE_ENTRY_PAYLOAD",
        f"cache entry refused: {error.message}",
        source=str(cache.path_of(key)),
        hint=hint,
    )
    cache.discard(key, refusal)
    return refusal


@dataclass(frozen=True)
class StartLink:
    """What a cached compile attaches to its artifact (`artifact._cache[START_LINK]`) for the
    engine, which sits above this layer: the subject of the artifact's key, and the start
    entry's start mask when the artifact was read from one (`head`: tokenizer, compiler,
    policy, and the mask's bytes, opaque here and checked by the engine before use). The
    engine publishes a start entry for its binding with `payload` when the artifact lacks
    one."""

    subject: str
    head: tuple[str, str, str, bytes] | None = None
    kind: str = START_KIND
    format: int = START_FORMAT

    @staticmethod
    def payload(artifact_bytes: bytes, start: bytes) -> bytes:
        """A start entry's payload: magic, the start mask's size, the mask, the artifact."""
        return _START_HEAD.pack(START_MAGIC, len(start)) + start + artifact_bytes


def _split_start(payload: bytes) -> tuple[bytes, bytes]:
    """(start mask bytes, artifact bytes) of a start entry's payload; the mask is checked
    by the engine, the artifact by `_verified`."""
    if len(payload) < _START_HEAD.size:
        raise TrgcError("E_CACHE_ENTRY_PAYLOAD", "the start entry's header is cut short")
    magic, size = _START_HEAD.unpack_from(payload)
    end = _START_HEAD.size + size
    if magic != START_MAGIC or end > len(payload):
        raise TrgcError("E_CACHE_ENTRY_PAYLOAD", "another magic, or a start mask cut short")
    view = memoryview(payload)
    return bytes(view[_START_HEAD.size : end]), bytes(view[end:])


def _read(
    cache: EntryStore, key: Any, source_sha256: str | None, limits: Limits, split: bool
) -> tuple[Artifact, bytes | None] | None:
    """(the artifact under `key`, the start mask's bytes of a start entry) when the entry is
    there and passes every check now; None when absent or refused (then removed)."""
    payload = cache.get(key)
    if payload is None:
        return None
    late = functools.partial(_refused, cache, key, hint=LATE_HINT)
    try:
        start, data = _split_start(payload) if split else (None, payload)
        return _verified(data, source_sha256, limits, late), start
    except TrgcError as error:
        _refused(cache, key, error, "the entry was removed; the source is compiled again")
    return None


def cached_compile(
    cache: EntryStore | None,
    identity: tuple[str, str, str | None] | None,
    options: dict,
    limits: Limits,
    compile_now: Callable[[], Artifact],
) -> Artifact:
    """The artifact of `identity` (source kind, key digest, expected source hash or None),
    `options` and `limits` from `cache` when it is there and passes every check, else
    `compile_now()`, then published in the background. Without a cache or an identity:
    `compile_now()`."""
    if cache is None or identity is None:
        return compile_now()
    if not _is_entry_store(type(cache)):
        raise TrgcError(
            "E_ARGUMENT_TYPE",
            f"cache: expected a DiskCache or None, got {type(cache).__name__}",
            hint="trgc.engine.diskcache.open_cache() opens the default cache directory",
        )
    subject = artifact_subject(*identity[:2], options, limits)
    source_sha256 = identity[2]
    # the start entry of the binding the cache last served (`DiskCache.last_binding`): the
    # artifact and its start mask in one read; else the artifact entry
    binding = getattr(cache, "last_binding", None)
    if binding is not None:
        tokenizer, compiler, policy = binding
        start_key = cache.entry_key(START_KIND, START_FORMAT, tokenizer, compiler, policy, subject)
        found = _read(cache, start_key, source_sha256, limits, split=True)
        if found is not None:
            artifact, start = found
            artifact._cache[START_LINK] = StartLink(subject, (*binding, start))  # type: ignore[arg-type]
            return artifact
    key = _artifact_key(cache, subject)
    found = _read(cache, key, source_sha256, limits, split=False)
    if found is not None:
        artifact = found[0]
        artifact._cache[START_LINK] = StartLink(subject)
        return artifact
    artifact = compile_now()
    artifact._cache[START_LINK] = StartLink(subject)
    cache.put_later(key, lambda: encode(artifact))
    return artifact
