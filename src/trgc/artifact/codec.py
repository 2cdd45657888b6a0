"""The canonical binary layout of an artifact, its identity, and its zstd file container.

`encode` turns an `Artifact` into canonical bytes (specified byte for byte in
docs/artifact-format.md); the identity is the SHA-256 of those bytes. `decode` is the exact
inverse and validates everything a consumer relies on (framing, digest, table shapes, action
ranges, call targets), so a loaded artifact can be stepped without further checks. Files on disk
are one zstd frame of the canonical bytes; compression never affects the identity.
"""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import numpy as np

from trgc.artifact.model import MAX_BOUND, REPEAT, RULE, Artifact, Machine
from trgc.atomic import atomic_write
from trgc.errors import TrgcError
from trgc.limits import DEFAULT_LIMITS, LIMIT_NAMES, Limits, check_limit, read_file

MAGIC = b"TRGA"
FORMAT_VERSION = 2
N_KINDS = 3
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
ZSTD_LEVEL = 12
SECTIONS: tuple[bytes, ...] = (b"META", b"SPEC", b"BCLS", b"MACH", b"LIMT", b"SRCH", b"DGST")
HEADER_SIZE = 8  # magic + version
SECTION_HEADER_SIZE = 16  # tag, reserved u32, length u64
SECTION_ALIGN = 8
FIELD_ALIGN = 4
DIGEST_SIZE = 32
NO_SOURCE_HASH = bytes(DIGEST_SIZE)


_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)  # made once (`json.dumps` with options makes an encoder per call); encoding is stateless


def canonical_json(value: object) -> bytes:
    """Sorted keys, no whitespace, UTF-8, no NaN/Infinity (ValueError for those, and
    UnicodeEncodeError for a string holding a lone surrogate)."""
    return _CANONICAL.encode(value).encode("utf-8")


def _pad(n: int, align: int) -> int:
    return -n % align


# ---------------------------------------------------------------------------- encoding


class _Writer:
    """Appends little-endian fields; offsets are absolute in the canonical byte string."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def u32(self, value: int) -> None:
        self.buf += struct.pack("<I", value)

    def u64(self, value: int) -> None:
        self.buf += struct.pack("<Q", value)

    def raw(self, data: bytes) -> None:
        self.buf += data

    def align(self, align: int) -> None:
        self.buf += bytes(_pad(len(self.buf), align))

    def string(self, text: str) -> None:
        data = text.encode("utf-8")
        self.u32(len(data))
        self.raw(data)
        self.align(FIELD_ALIGN)

    def section(self, tag: bytes, payload: bytes) -> None:
        self.raw(tag)
        self.u32(0)
        self.u64(len(payload))
        self.raw(payload)
        self.align(SECTION_ALIGN)


def _source_digest(metadata: dict) -> bytes:
    value = metadata.get("source_sha256")
    if value is None:
        return NO_SOURCE_HASH
    if not isinstance(value, str) or not value.startswith("sha256:") or len(value) != 71:
        raise TrgcError(
            "E_INTERNAL", f"metadata source_sha256 must be 'sha256:<64 hex>', got {value!r}"
        )
    try:
        return bytes.fromhex(value[7:])
    except ValueError:
        raise TrgcError("E_INTERNAL", f"metadata source_sha256 is not hex: {value!r}") from None


def _encode_unchecked(artifact: Artifact) -> bytes:
    """The canonical bytes of `artifact`, not self-checked."""
    return _sealed(_encode_body(artifact))


def _sealed(body: bytearray) -> bytes:
    """`body` (every section before DGST) followed by section DGST, its SHA-256."""
    out = _Writer()
    out.buf = bytearray(body)  # a copy: the self-check compares `body` itself
    out.section(b"DGST", hashlib.sha256(body).digest())
    return bytes(out.buf)


def _encode_body(artifact: Artifact) -> bytearray:
    """Every section of the canonical bytes but the last (DGST, the digest of these)."""
    metadata = artifact.metadata
    n_symbols = artifact.n_symbols
    out = _Writer()
    out.raw(MAGIC)
    out.u32(FORMAT_VERSION)

    out.section(b"META", canonical_json(metadata))

    spec = _Writer()
    spec.u32(len(artifact.specials))
    for name in artifact.specials:
        spec.string(name)
    out.section(b"SPEC", bytes(spec.buf))

    byte_class = np.asarray(artifact.byte_class)
    if byte_class.shape != (256,) or byte_class.min() < 0 or byte_class.max() > 255:
        raise TrgcError(
            "E_INTERNAL", f"byte_class must be 256 values in 0..255, got shape {byte_class.shape}"
        )
    out.section(
        b"BCLS", struct.pack("<I", artifact.n_classes) + byte_class.astype(np.uint8).tobytes()
    )

    # MACH offsets are relative to the payload start, which is 8-aligned, so 4-alignment
    # inside the payload is 4-alignment in the whole byte string.
    mach = _Writer()
    mach.u32(artifact.max_depth)
    mach.u32(len(artifact.machines))
    mach.u32(n_symbols)
    for machine in artifact.machines:
        mach.string(machine.name)
        mach.u32(machine.kind)
        accepting = np.asarray(machine.accepting)
        table = np.asarray(machine.next)
        calls = np.concatenate(
            [
                np.asarray(machine.calls, dtype=np.int64).reshape(-1, 2),
                np.asarray(machine.call_bounds, dtype=np.int64).reshape(-1, 2),
            ],
            axis=1,
        )
        n_states = int(accepting.shape[0])
        if table.shape != (n_states, n_symbols):
            raise TrgcError(
                "E_INTERNAL",
                f"machine {machine.name!r}: next has shape {table.shape}, expected {(n_states, n_symbols)}",
            )
        mach.u32(n_states)
        mach.u32(int(calls.shape[0]))
        mach.raw(accepting.astype(np.uint8).tobytes())
        mach.align(FIELD_ALIGN)
        mach.raw(_int32_bytes(table, machine.name, "next"))
        mach.raw(_int32_bytes(calls, machine.name, "calls"))
    out.section(b"MACH", bytes(mach.buf))

    limits = metadata.get("limits", {})
    if not isinstance(limits, dict):
        raise TrgcError("E_INTERNAL", "metadata limits must be an object")
    limt = _Writer()
    limt.u32(len(limits))
    for name in sorted(limits):
        value = limits[name]
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**64:
            raise TrgcError(
                "E_INTERNAL", f"limit {name!r} must be an unsigned 64-bit integer, got {value!r}"
            )
        limt.string(name)
        limt.u64(value)
    out.section(b"LIMT", bytes(limt.buf))

    out.section(b"SRCH", _source_digest(metadata))
    return out.buf


def _int32_bytes(array: np.ndarray, machine: str, what: str) -> bytes:
    if array.size and (array.min() < -(2**31) or array.max() >= 2**31):
        raise TrgcError("E_INTERNAL", f"machine {machine!r}: {what} values do not fit int32")
    return np.ascontiguousarray(array, dtype="<i4").tobytes()


def encode(artifact: Artifact) -> bytes:
    """The canonical bytes of `artifact`, self-checked: decoding them and re-encoding gives the
    same bytes, or `E_INTERNAL` (a compiler bug) is raised. The digest is hashed once: the
    self-check compares the sections it covers, so a second hash would add nothing."""
    cached = artifact._cache.get("canonical")
    if cached is not None:
        return cached
    body = _encode_body(artifact)
    data = _sealed(body)
    try:
        # the digest was computed from `body` just now: comparing the bodies checks it too
        again = _encode_body(_decode(data, DEFAULT_LIMITS, digest=False))
    except TrgcError as error:
        raise TrgcError(
            "E_INTERNAL", f"encoded artifact fails its own validation: {error}"
        ) from None
    if again != body:
        raise TrgcError(
            "E_INTERNAL", "artifact self-check failed: decode and re-encode changed the bytes"
        )
    artifact._cache["canonical"] = data
    return data


def encoded_size(artifact: Artifact) -> int:
    """An upper bound on the canonical size, computable before serialising (for the
    compiled_bytes limit). Metadata, names and padding are bounded generously."""
    size = HEADER_SIZE + len(SECTIONS) * (SECTION_HEADER_SIZE + SECTION_ALIGN)
    size += len(canonical_json(artifact.metadata)) + 4 + 260 + 12 + DIGEST_SIZE * 2
    size += sum(8 + len(name.encode("utf-8")) for name in artifact.specials)
    size += sum(
        16 + len(str(name).encode("utf-8")) for name in artifact.metadata.get("limits") or {}
    )
    for machine in artifact.machines:
        n_states = machine.n_states
        size += 20 + len(machine.name.encode("utf-8")) + n_states + 4
        size += 4 * n_states * artifact.n_symbols + 16 * int(np.asarray(machine.calls).size // 2)
    return size


def identity_of_bytes(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def identity(artifact: Artifact) -> str:
    """`sha256:<hex>` of the canonical bytes."""
    cached = artifact._cache.get("sha256")
    if cached is None:
        cached = identity_of_bytes(encode(artifact))
        artifact._cache["sha256"] = cached
    return cached


# ---------------------------------------------------------------------------- decoding


def _corrupt(message: str) -> TrgcError:
    return TrgcError(
        "E_ARTIFACT_CORRUPT", message, hint="the file is damaged; recompile it from its source"
    )


def _truncated(message: str) -> TrgcError:
    return TrgcError(
        "E_ARTIFACT_TRUNCATED", message, hint="the file was cut short; recompile or copy it again"
    )


class _Reader:
    """Reads little-endian fields of one section payload; overrunning it is corruption
    (the section framing has already been checked against the byte string's length)."""

    def __init__(self, data: bytes, start: int, end: int, tag: str) -> None:
        self.data = data
        self.pos = start
        self.end = end
        self.tag = tag

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > self.end:
            raise _corrupt(f"section {self.tag}: {what} runs past the end of the section")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def u32(self, what: str) -> int:
        return struct.unpack("<I", self.take(4, what))[0]

    def u64(self, what: str) -> int:
        return struct.unpack("<Q", self.take(8, what))[0]

    def align(self, align: int) -> None:
        padding = self.take(_pad(self.pos, align), "padding")
        if any(padding):
            raise _corrupt(f"section {self.tag}: non-zero padding")

    def string(self, what: str) -> str:
        data = self.take(self.u32(f"{what} length"), what)
        self.align(FIELD_ALIGN)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise _corrupt(f"section {self.tag}: {what} is not valid UTF-8") from None

    def finish(self) -> None:
        if self.pos != self.end:
            raise _corrupt(f"section {self.tag}: {self.end - self.pos} unexpected trailing bytes")


_SECTION_HEAD = struct.Struct("<4sIQ")  # tag, reserved, length


def _frame_sections(data: bytes, digest: bool = True) -> dict[bytes, tuple[int, int]]:
    """Check magic, version, section framing and (unless `digest` is False: the caller
    checks it with `_check_digest`) the digest; return tag -> (payload start, end)."""
    if len(data) < 4:
        raise _truncated(f"artifact content is {len(data)} bytes, shorter than its header")
    if data[:4] != MAGIC:
        raise TrgcError(
            "E_ARTIFACT_MAGIC",
            f"content starts with {data[:4]!r}, not the artifact magic {MAGIC!r}",
        )
    if len(data) < HEADER_SIZE:
        raise _truncated("artifact content ends inside its header")
    version = struct.unpack_from("<I", data, 4)[0]
    if version != FORMAT_VERSION:
        old = (
            " (version 1 copied bounded repetitions; version 2 counts them)" if version == 1 else ""
        )
        raise TrgcError(
            "E_ARTIFACT_VERSION",
            f"artifact format version {version}; this trgc reads version {FORMAT_VERSION}{old}",
            hint="recompile the source with this trgc (`trgc compile SRC -o OUT.trga`)",
        )
    pos = HEADER_SIZE
    size = len(data)
    sections: dict[bytes, tuple[int, int]] = {}
    for tag in SECTIONS:
        if pos + SECTION_HEADER_SIZE > size:
            raise _truncated(f"artifact content ends before section {tag.decode()}")
        found, reserved, length = _SECTION_HEAD.unpack_from(data, pos)
        if found != tag:
            raise _corrupt(f"expected section {tag.decode()} at byte {pos}, found {found!r}")
        if reserved != 0:
            raise _corrupt(f"section {tag.decode()}: reserved field is {reserved}, expected 0")
        if tag == b"DGST" and length != DIGEST_SIZE:
            raise _corrupt("section DGST must hold a 32-byte SHA-256")
        start = pos + SECTION_HEADER_SIZE
        end = start + length
        padded = end + (-end % SECTION_ALIGN)  # `_pad(end, SECTION_ALIGN)`, inline
        if padded > size:
            raise _truncated(
                f"section {tag.decode()} declares {length} bytes but the content ends first"
            )
        if any(data[end:padded]):
            raise _corrupt(f"section {tag.decode()}: non-zero padding")
        sections[tag] = (start, end)
        pos = padded
    if pos != size:
        raise _corrupt(f"{size - pos} unexpected bytes after the last section")
    if digest:
        _check_digest(data, sections)
    return sections


def _check_digest(data: bytes, sections: dict[bytes, tuple[int, int]]):
    """Compare section DGST with the SHA-256 of everything before it; return that hash's
    state (the identity hash continues from it)."""
    digest_start, digest_end = sections[b"DGST"]
    state = hashlib.sha256(memoryview(data)[: digest_start - SECTION_HEADER_SIZE])
    if state.digest() != data[digest_start:digest_end]:
        raise _corrupt("content digest mismatch: the artifact's bytes were altered")
    return state


def _decode_metadata(data: bytes, start: int, end: int, canonical: bool = True) -> dict:
    """The metadata object of section META; unless `canonical` is False (`decode_deferred`,
    whose eager decode makes this check when the machines are first read), also checked to
    be written in canonical JSON."""
    raw = data[start:end]
    try:
        metadata = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _corrupt("section META is not UTF-8 JSON") from None
    if not isinstance(metadata, dict):
        raise _corrupt("section META must hold a JSON object")
    if not canonical:
        return metadata
    try:
        canonical = canonical_json(metadata)
    except (ValueError, UnicodeEncodeError, RecursionError):
        raise _corrupt(
            "section META holds NaN, Infinity or a lone surrogate, which canonical JSON excludes"
        ) from None
    if canonical != raw:
        raise _corrupt("section META is not canonical JSON (sorted keys, no whitespace)")
    return metadata


_NO_SPECIALS = struct.pack("<I", 0)


def _decode_specials(data: bytes, start: int, end: int) -> tuple[str, ...]:
    if data[start:end] == _NO_SPECIALS:  # most grammars: a count of 0 and nothing else
        return ()
    reader = _Reader(data, start, end, "SPEC")
    names = tuple(reader.string("special name") for _ in range(reader.u32("special count")))
    reader.finish()
    for name in names:
        if not name:
            raise _corrupt("section SPEC: empty special-token name")
    encoded = [name.encode("utf-8") for name in names]
    if any(a >= b for a, b in zip(encoded, encoded[1:], strict=False)):
        raise _corrupt("section SPEC: names are not strictly ascending")
    return names


def _decode_byte_classes(data: bytes, start: int, end: int) -> tuple[np.ndarray, int]:
    raw, n_classes = _check_byte_classes(data, start, end)
    return _byte_class_array(raw), n_classes


def _byte_class_array(raw: bytes) -> np.ndarray:
    return np.frombuffer(bytearray(raw), dtype=np.uint8)


def _check_byte_classes(data: bytes, start: int, end: int) -> tuple[bytes, int]:
    """(the 256 class bytes, the class count) of section BCLS, checked."""
    reader = _Reader(data, start, end, "BCLS")
    n_classes = reader.u32("class count")
    raw = reader.take(256, "byte classes")
    reader.finish()
    if not 1 <= n_classes <= 256:
        raise _corrupt(f"section BCLS: class count {n_classes} outside 1..256")
    # the classes present, checked on the bytes (a warm cache hit decodes this section before
    # its first mask, where each numpy call costs several microseconds)
    used = set(raw)
    if max(used) >= n_classes or len(used) != n_classes:
        raise _corrupt(f"section BCLS: classes used are not exactly 0..{n_classes - 1}")
    return raw, n_classes


def _decode_machines(
    data: bytes, start: int, end: int, n_symbols_expected: int
) -> tuple[int, tuple[Machine, ...]]:
    reader = _Reader(data, start, end, "MACH")
    max_depth = reader.u32("max_depth")
    n_machines = reader.u32("machine count")
    n_symbols = reader.u32("symbol count")
    if max_depth < 1:
        raise _corrupt("section MACH: max_depth must be at least 1")
    if n_machines < 1:
        raise _corrupt("section MACH: an artifact has at least one machine")
    if n_symbols != n_symbols_expected:
        raise _corrupt(
            f"section MACH: {n_symbols} symbols, but classes + specials = {n_symbols_expected}"
        )
    raw: list[tuple] = []
    for _ in range(n_machines):
        name = reader.string("machine name")
        kind = reader.u32("machine kind")
        n_states = reader.u32("state count")
        n_calls = reader.u32("call count")
        if n_states < 1:
            raise _corrupt(f"section MACH: machine {name!r} has no states")
        accepting = np.frombuffer(reader.take(n_states, "accepting flags"), dtype=np.uint8)
        reader.align(FIELD_ALIGN)
        table = np.frombuffer(
            reader.take(4 * n_states * n_symbols, "transition table"), dtype="<i4"
        )
        calls = np.frombuffer(reader.take(16 * n_calls, "call table"), dtype="<i4")
        raw.append(
            (name, kind, accepting, table.reshape(n_states, n_symbols), calls.reshape(n_calls, 4))
        )
    reader.finish()
    names = [item[0] for item in raw]
    if len(set(names)) != len(names) or not all(names):
        raise _corrupt("section MACH: machine names must be non-empty and unique")
    machines = []
    kinds = [item[1] for item in raw]
    for name, kind, accepting, table, calls in raw:
        if not 0 <= kind < N_KINDS:
            raise _corrupt(
                f"machine {name!r}: kind {kind} is not rule (0), shared (1) or repeat (2)"
            )
        if accepting.size and int(accepting.max()) > 1:
            raise _corrupt(f"machine {name!r}: accepting flags must be 0 or 1")
        n_states, n_calls = accepting.shape[0], calls.shape[0]
        if table.size and (int(table.max()) >= n_states or int(table.min()) < -1 - n_calls):
            raise _corrupt(
                f"machine {name!r}: a transition targets a state or call edge that does not exist"
            )
        for callee, ret, rep_min, rep_max in calls.tolist():
            if not 0 <= callee < n_machines:
                raise _corrupt(f"machine {name!r}: call to machine {callee}, which does not exist")
            if not 0 <= ret < n_states:
                raise _corrupt(
                    f"machine {name!r}: call returns to state {ret}, which does not exist"
                )
            _check_bounds(name, kinds[callee] == REPEAT, rep_min, rep_max)
        machines.append(
            Machine(
                name=name,
                accepting=accepting.astype(bool),
                next=table.astype(np.int32),
                calls=np.ascontiguousarray(calls[:, :2]).astype(np.int32),
                kind=kind,
                call_bounds=np.ascontiguousarray(calls[:, 2:]).astype(np.int32),
            )
        )
    if machines[0].kind != RULE:
        raise _corrupt("section MACH: machine 0 (the start rule) must be a rule machine")
    _check_call_graph(machines)
    return max_depth, tuple(machines)


def _check_bounds(name: str, repeat: bool, rep_min: int, rep_max: int) -> None:
    """A call to a repeat machine carries `1 <= rep_min <= rep_max < MAX_BOUND` (`rep_max` 0:
    unbounded); any other call carries (0, 0)."""
    if repeat:
        if not 1 <= rep_min < MAX_BOUND or not (rep_max == 0 or rep_min <= rep_max < MAX_BOUND):
            raise _corrupt(
                f"machine {name!r}: a call carries repetition bounds {rep_min}..{rep_max}; "
                f"they need 1 <= min <= max < {MAX_BOUND} (max 0 = unbounded)"
            )
    elif rep_min or rep_max:
        raise _corrupt(f"machine {name!r}: only calls of repeat machines carry bounds")


def _check_call_graph(machines: list[Machine]) -> None:
    """Every machine is reachable from machine 0, and calls between machines that do not
    count toward `max_depth` form no cycle (else a stack could grow without bound)."""
    callees = [sorted({int(c) for c in m.calls[:, 0].tolist()}) for m in machines]
    seen = [False] * len(machines)
    seen[0] = True
    todo = [0]
    while todo:
        for c in callees[todo.pop()]:
            if not seen[c]:
                seen[c] = True
                todo.append(c)
    if not all(seen):
        missing = machines[seen.index(False)].name
        raise _corrupt(f"section MACH: machine {missing!r} is never called")
    free = [m.depth_cost == 0 for m in machines]
    state = [0] * len(machines)  # 0 unvisited, 1 on the path, 2 done
    for root in range(len(machines)):
        if not free[root] or state[root]:
            continue
        path = [(root, iter(callees[root]))]
        state[root] = 1
        while path:
            node, it = path[-1]
            nxt = next((c for c in it if free[c]), None)
            if nxt is None:
                state[node] = 2
                path.pop()
            elif state[nxt] == 1:
                raise _corrupt(
                    f"section MACH: machines {machines[node].name!r} and {machines[nxt].name!r} "
                    "call each other without a rule machine between them"
                )
            elif state[nxt] == 0:
                state[nxt] = 1
                path.append((nxt, iter(callees[nxt])))


def _decode_limits(data: bytes, start: int, end: int) -> dict[str, int]:
    reader = _Reader(data, start, end, "LIMT")
    limits: dict[str, int] = {}
    previous = b""
    for _ in range(reader.u32("limit count")):
        name = reader.string("limit name")
        value = reader.u64("limit value")
        key = name.encode("utf-8")
        if not name or (limits and key <= previous):
            raise _corrupt("section LIMT: names must be non-empty and strictly ascending")
        if name not in LIMIT_NAMES:
            raise _corrupt(f"section LIMT: unknown limit {name!r}")
        if value >= 2**63:
            raise _corrupt(f"section LIMT: limit {name} = {value} is out of range")
        previous = key
        limits[name] = value
    reader.finish()
    return limits


def _check_within_limits(
    max_depth: int, machines: tuple[Machine, ...], limits: dict[str, int], size: int
) -> None:
    """The tables respect the limits the artifact says it was compiled with (the compiler
    checks each before building)."""
    states = sum(m.n_states for m in machines)
    transitions = sum(int(np.count_nonzero(m.next != -1)) for m in machines)
    bound = max((int(m.call_bounds.max(initial=0)) for m in machines), default=0)
    for name, value in (
        ("max_depth", max_depth),
        ("states", states),
        ("transitions", transitions),
        ("repetition", bound),
        ("compiled_bytes", size),
    ):
        if name in limits and value > limits[name]:
            raise _corrupt(
                f"the tables need {name} = {value:,}, above the {limits[name]:,} the artifact's "
                "limits section says it was compiled with"
            )


def decode(data: bytes, *, limits: Limits = DEFAULT_LIMITS) -> Artifact:
    """Parse and validate canonical bytes: framing, digest, every section, and every invariant
    the compiler guarantees (table ranges, machine kinds and bounds, a call graph that bounds
    the stack, tables within the artifact's own limits). `limits` are the reader's: `max_depth`
    must not exceed its max_depth (stacks are allocated from it). Errors: `E_ARTIFACT_MAGIC`,
    `E_ARTIFACT_VERSION`, `E_ARTIFACT_TRUNCATED`, `E_ARTIFACT_CORRUPT`, `E_LIMIT_MAX_DEPTH`."""
    return _decode(bytes(data), limits, digest=True)


def _decode(data: bytes, limits: Limits, *, digest: bool) -> Artifact:
    """`decode`; without `digest` the DGST section is framed but not compared (`encode`'s
    self-check, which has just computed it)."""
    sections = _frame_sections(data, digest=digest)
    metadata = _decode_metadata(data, *sections[b"META"])
    specials = _decode_specials(data, *sections[b"SPEC"])
    byte_class, n_classes = _decode_byte_classes(data, *sections[b"BCLS"])
    max_depth, machines = _decode_machines(data, *sections[b"MACH"], n_classes + len(specials))
    own_limits = _decode_limits(data, *sections[b"LIMT"])
    if own_limits != metadata.get("limits", {}):
        raise _corrupt("section LIMT disagrees with the metadata's limits")
    _check_within_limits(max_depth, machines, own_limits, len(data))
    check_limit("max_depth", max_depth, limits.max_depth, "the artifact's max_depth")
    source_start, source_end = sections[b"SRCH"]
    source_hash = data[source_start:source_end]
    if len(source_hash) != DIGEST_SIZE:
        raise _corrupt("section SRCH must hold a 32-byte SHA-256")
    expected_source = metadata.get("source_sha256")
    if source_hash == NO_SOURCE_HASH:
        if expected_source is not None:
            raise _corrupt("section SRCH is empty but the metadata names a source hash")
    elif expected_source != "sha256:" + source_hash.hex():
        raise _corrupt("section SRCH disagrees with the metadata's source_sha256")
    if "max_depth" in metadata and metadata["max_depth"] != max_depth:
        raise _corrupt("section MACH max_depth disagrees with the metadata")
    if "machines" in metadata and metadata["machines"] != [m.name for m in machines]:
        raise _corrupt("section MACH machine names disagree with the metadata")
    return Artifact(
        metadata=metadata,
        byte_class=byte_class,
        n_classes=n_classes,
        specials=specials,
        machines=machines,
        max_depth=max_depth,
    )


def from_canonical(data: bytes, *, limits: Limits = DEFAULT_LIMITS) -> Artifact:
    """Decode canonical bytes and remember them as the artifact's identity source."""
    artifact = decode(data, limits=limits)
    artifact._cache["canonical"] = bytes(data)
    return artifact


# ---------------------------------------------------------------------------- container


def compress(canonical: bytes) -> bytes:
    """One zstd frame (fixed level, content size and checksum recorded)."""
    import zstandard

    return zstandard.ZstdCompressor(
        level=ZSTD_LEVEL, write_checksum=True, write_content_size=True
    ).compress(canonical)


def decompress(blob: bytes, *, limits: Limits = DEFAULT_LIMITS) -> bytes:
    """The canonical bytes inside a zstd file; checks the declared size against the
    compiled_bytes limit before decompressing."""
    import zstandard

    if len(blob) < 4 or blob[:4] != ZSTD_MAGIC:
        raise TrgcError(
            "E_NOT_AN_ARTIFACT",
            "not a trgc artifact: the file is not a zstd frame",
            hint="artifacts are written by `trgc compile -o`",
        )
    try:
        params = zstandard.get_frame_parameters(blob)
    except zstandard.ZstdError:
        raise _truncated("the zstd frame header is incomplete") from None
    size = params.content_size
    if (
        size in (zstandard.CONTENTSIZE_UNKNOWN, zstandard.CONTENTSIZE_ERROR)
        or not params.has_checksum
    ):
        raise _corrupt("the zstd frame lacks the content size or checksum every artifact records")
    check_limit("compiled_bytes", size, limits.compiled_bytes, "artifact content size")
    decompressor = zstandard.ZstdDecompressor().decompressobj()
    try:
        data = decompressor.decompress(blob)
    except zstandard.ZstdError as exc:
        raise _corrupt(f"the zstd frame is damaged ({exc})") from None
    if not decompressor.eof:
        raise _truncated("the zstd frame ends before its last block")
    if decompressor.unused_data:
        raise _corrupt(f"{len(decompressor.unused_data)} unexpected bytes after the zstd frame")
    if len(data) != size:
        raise _corrupt("the zstd frame's content size does not match its header")
    return data


def from_file_bytes(blob: bytes, *, limits: Limits = DEFAULT_LIMITS) -> Artifact:
    """An artifact from file bytes (zstd container) or from canonical bytes."""
    if blob[:4] == MAGIC:
        return from_canonical(blob, limits=limits)
    return from_canonical(decompress(blob, limits=limits), limits=limits)


def to_file_bytes(artifact: Artifact) -> bytes:
    return compress(encode(artifact))


def save_artifact(artifact: Artifact, path: Path | str) -> str:
    """Write the zstd container atomically; return the identity."""
    atomic_write(Path(path), to_file_bytes(artifact))
    return identity(artifact)


def load_artifact(
    path: Path | str, *, expect: str | None = None, limits: Limits | None = None
) -> Artifact:
    """Read and fully validate an artifact file; with `expect`, also require that identity
    (`E_ARTIFACT_IDENTITY`)."""
    limits = limits or DEFAULT_LIMITS
    blob = read_file(path, "artifact", limits, magic=ZSTD_MAGIC)
    try:
        artifact = from_canonical(decompress(blob, limits=limits), limits=limits)
    except TrgcError as error:
        if error.source is None:
            error.source = str(path)
        raise
    if expect is not None and identity(artifact) != expect:
        raise TrgcError(
            "E_ARTIFACT_IDENTITY",
            f"artifact identity is {identity(artifact)}, expected {expect}",
            source=str(path),
        )
    return artifact


# ---------------------------------------------------------------------------- deferred decoding


class _DeferredArtifact(Artifact):
    """An `Artifact` whose machines are decoded when first read (`decode_deferred`).

    Every field but `machines` is set when it is made, from sections that were checked then
    (`byte_class` is made into its array when first read, from bytes checked then);
    the first read of `machines` runs the whole eager `decode` over the same bytes (every check
    it makes, the ones made before included) and keeps its machines. A failure there is passed
    to the caller's `on_error`, which returns the error to raise (and may, say, remove a cache
    entry), and is raised again on every later read: nothing of an artifact that fails its
    checks is ever used."""

    def __init__(
        self, data: bytes, limits: Limits, fields: dict, on_error, byte_classes: bytes
    ) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_cache", {"canonical": data})
        object.__setattr__(self, "_deferred", [data, limits, on_error, None])
        object.__setattr__(self, "_byte_classes", byte_classes)

    @property
    def byte_class(self) -> np.ndarray:  # type: ignore[override]
        """The checked class bytes as the eager decode's array, made when first read (a warm
        matcher's first mask reads none)."""
        found = self.__dict__.get("_byte_class")
        if found is None:
            found = self.__dict__.setdefault("_byte_class", _byte_class_array(self._byte_classes))
        return found

    @property
    def machines(self) -> tuple[Machine, ...]:  # type: ignore[override]
        decoded = self.__dict__.get("_machines")
        if decoded is not None:
            return decoded
        data, limits, on_error, failed = self._deferred
        if failed is not None:
            raise failed
        try:
            full = decode(data, limits=limits)
        except TrgcError as error:
            failed = self._deferred[3] = on_error(error) if on_error is not None else error
            raise failed from None
        # an idempotent publication: threads racing here decode equal machines
        return self.__dict__.setdefault("_machines", full.machines)

    def __reduce__(self):
        """Pickled (or copied) as the plain artifact it stands for, its machines decoded."""
        fields = (self.metadata, self.byte_class, self.n_classes, self.specials, self.machines,
                  self.max_depth)  # fmt: skip
        return (Artifact, fields)


def decode_deferred(data: bytes, *, limits: Limits = DEFAULT_LIMITS, on_error=None) -> Artifact:
    """Canonical bytes as an `Artifact` whose machine tables are decoded on first use.

    Checked now: framing and digest (hashed once with the identity, which is kept), META
    (a JSON object), SPEC, BCLS, SRCH, and MACH's `max_depth` (at least 1, within the
    reader's limit, equal to the metadata's): everything the artifact's identity, metadata,
    specials and byte classes depend on. The machines, LIMT, META's canonical form (which no
    field read from it depends on: the identity is the digest of the bytes as they are), and
    every check `decode` makes, come when `machines` is first read (by the engine, when it
    first needs the transition tables); an error there goes through `on_error(error) -> error
    to raise`. For a reader that may need no table at all
    before its first answer (a mask read from a store keyed by the artifact's identity), this
    skips most of the decode's cost; the bytes and the eager `decode` are unchanged. Errors
    now: those of `decode` for the sections above."""
    data = bytes(data)
    sections = _frame_sections(data, digest=False)
    state = _check_digest(data, sections)
    digest_start = sections[b"DGST"][0]
    state.update(memoryview(data)[digest_start - SECTION_HEADER_SIZE :])
    metadata = _decode_metadata(data, *sections[b"META"], canonical=False)
    specials = _decode_specials(data, *sections[b"SPEC"])
    byte_classes, n_classes = _check_byte_classes(data, *sections[b"BCLS"])
    start, end = sections[b"MACH"]
    max_depth = _Reader(data, start, end, "MACH").u32("max_depth")
    if max_depth < 1:
        raise _corrupt("section MACH: max_depth must be at least 1")
    check_limit("max_depth", max_depth, limits.max_depth, "the artifact's max_depth")
    if "max_depth" in metadata and metadata["max_depth"] != max_depth:
        raise _corrupt("section MACH max_depth disagrees with the metadata")
    source_start, source_end = sections[b"SRCH"]
    source_hash = data[source_start:source_end]
    expected_source = metadata.get("source_sha256")
    if len(source_hash) != DIGEST_SIZE or (
        expected_source != "sha256:" + source_hash.hex()
        if source_hash != NO_SOURCE_HASH
        else expected_source is not None
    ):
        raise _corrupt("section SRCH disagrees with the metadata's source_sha256")
    fields = {"metadata": metadata, "n_classes": n_classes, "specials": specials,
              "max_depth": max_depth}  # fmt: skip
    artifact = _DeferredArtifact(data, limits, fields, on_error, byte_classes)
    artifact._cache["sha256"] = "sha256:" + state.hexdigest()  # of all the bytes: the identity
    return artifact
