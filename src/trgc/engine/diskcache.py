"""The persistent mask cache: opaque entries in a directory shared by every trgc process.

An entry is a byte payload stored under an `EntryKey`, the cache-identity fields the caller
names (entry kind and format version, tokenizer identity, compiler version, special-token
policy, and the subject: a frame entry's residual hash, a `.trm` file's artifact and trie). The
file name is the SHA-256 of the key's canonical JSON; the file holds the key itself, the payload
and a SHA-256 digest of both, checked on every read. Nothing read is trusted blindly: a file that
is oversized, truncated, corrupted or foreign (another key, container version or magic) is
refused with its own code, counted, removed and reported as a miss, so the caller recomputes.

Publication is atomic (temporary file, fsync, rename: a reader sees a whole entry or none) and
several processes may read and write one directory at once. The total size is bounded
(`max_bytes`): a usage ledger updated under a file lock triggers, once it passes the bound, an
eviction that scans the directory and removes the least recently used entries (modification
time, refreshed on a hit) down to `LOW_WATER` of the bound, then rewrites the ledger exactly.
The layout is described in `docs/mask-cache.md`.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import re
import shutil
import struct
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from trgc.atomic import atomic_write, read_bytes
from trgc.errors import TrgcError

MAGIC = b"TRGCDCE\0"
CONTAINER_VERSION = 1
LAYOUT = f"trgc-cache-{CONTAINER_VERSION}"  # the directory holding this layout's entries
SUFFIX = ".entry"
LEDGER_BYTES = 4096  # the usage ledger is one small JSON object
_HEAD = struct.Struct("<8sIIQ")  # magic, container version, key length, payload length
DIGEST_BYTES = 32
MAX_KEY_BYTES = 4096

GiB = 1024**3
MiB = 1024**2
DEFAULT_MAX_BYTES = 1 * GiB  # the documented bound of a cache directory (TRGC_CACHE_MAX_BYTES)
DEFAULT_MAX_ENTRY_BYTES = 96 * MiB  # a .trm under cache_bytes (64 MiB) fits with room to spare
LOW_WATER = 0.8  # eviction stops at this fraction of max_bytes, so scans are rare
TOUCH_AFTER_SECONDS = 60.0  # a hit refreshes the entry's time at most once a minute
STALE_TEMPORARY_SECONDS = 3600.0  # prune removes temporaries of writers dead this long
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by trgc.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)

ENV_DIR = "TRGC_CACHE_DIR"
ENV_MAX_BYTES = "TRGC_CACHE_MAX_BYTES"
TRM_KIND = "trm"

_KIND_RE = re.compile(r"[a-z][a-z0-9-]{0,31}")
REFUSAL_CODES = (
    "E_CACHE_ENTRY_OVERSIZED",
    "E_CACHE_ENTRY_TRUNCATED",
    "E_CACHE_ENTRY_FOREIGN",
    "E_CACHE_ENTRY_CORRUPT",
    "E_CACHE_ENTRY_PAYLOAD",  # refused by the caller: the payload does not decode as its kind
)
PENDING_LIMIT = 2048  # entries waiting for the publisher; more are dropped (counted)
QUIET_SECONDS = 0.25  # the publisher writes once nothing new came for this long
FLUSH_AT_EXIT_SECONDS = 10.0


_quote = json.encoder.encode_basestring  # a JSON string, non-ASCII kept (ensure_ascii=False)


@dataclass(frozen=True)
class EntryKey:
    """The identity of one entry. Every field takes part in the address, so an entry is never
    returned for another tokenizer, compiler, policy, subject, kind or format version."""

    kind: str  # what the payload is ("frame", "trm", ...): [a-z][a-z0-9-]{0,31}
    format: int  # version of the payload's own format
    tokenizer: str  # token table identity (sha256:...)
    compiler: str  # compiler version
    policy: str  # special-token policy
    subject: str  # residual hash of a frame entry; artifact and trie of a .trm

    def __post_init__(self) -> None:
        if not _KIND_RE.fullmatch(self.kind):
            raise ValueError(f"kind: expected [a-z][a-z0-9-]{{0,31}}, got {self.kind!r}")
        if isinstance(self.format, bool) or not isinstance(self.format, int) or self.format < 0:
            raise ValueError(f"format: expected a non-negative int, got {self.format!r}")
        for name in ("tokenizer", "compiler", "policy", "subject"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{name}: expected a str, got {getattr(self, name)!r}")
        # json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False), written
        # out (a key is made for every lookup; the general encoder costs several times this)
        q = _quote
        canonical = (f'{{"compiler":{q(self.compiler)},"format":{self.format:d},'
                     f'"kind":{q(self.kind)},"policy":{q(self.policy)},'
                     f'"subject":{q(self.subject)},"tokenizer":{q(self.tokenizer)}}}').encode()  # fmt: skip
        if len(canonical) > MAX_KEY_BYTES:
            raise ValueError(f"key: expected at most {MAX_KEY_BYTES} bytes of canonical JSON")
        object.__setattr__(self, "_canonical", canonical)  # computed once: keys are immutable
        object.__setattr__(self, "_address", hashlib.sha256(canonical).hexdigest())

    def canonical(self) -> bytes:
        """The key as canonical JSON (sorted keys, no whitespace, UTF-8)."""
        return self._canonical  # type: ignore[attr-defined]

    def address(self) -> str:
        """Hex SHA-256 of the canonical key: the entry's file name."""
        return self._address  # type: ignore[attr-defined]


def trm_key(file_key: tuple[str, str, str, str, str], trm_version: int) -> EntryKey:
    """The key of a whole `.trm` file for a `Binding.file_key` (artifact, tokenizer, compiler,
    policy, trie) and the `.trm` format version."""
    artifact, tokenizer, compiler, policy, trie = file_key
    return EntryKey(TRM_KIND, trm_version, tokenizer, compiler, policy, f"{artifact} {trie}")


def encode_entry(key: EntryKey, payload: bytes) -> bytes:
    """The bytes of an entry file: header, canonical key, payload, SHA-256 of all of them."""
    canonical = key.canonical()
    body = _HEAD.pack(MAGIC, CONTAINER_VERSION, len(canonical), len(payload)) + canonical + payload
    return body + hashlib.sha256(body).digest()


def entry_overhead(key: EntryKey) -> int:
    """Bytes an entry file adds to its payload."""
    return _HEAD.size + len(key.canonical()) + DIGEST_BYTES


def _refusal(code: str, message: str, path: Path) -> TrgcError:
    return TrgcError(code, f"cache entry refused: {message}", source=str(path),
                     hint="the entry was removed; it is recomputed on the next use")  # fmt: skip


def decode_entry(data: bytes, key: EntryKey | None, path: Path) -> tuple[bytes, bytes]:
    """(canonical key, payload) of an entry file's bytes; raise the refusal code otherwise.
    With `key`, an entry stored under any other key is foreign."""
    if len(data) < len(MAGIC):
        raise _refusal("E_CACHE_ENTRY_TRUNCATED", f"{len(data)} bytes, no header", path)
    if data[: len(MAGIC)] != MAGIC:
        raise _refusal("E_CACHE_ENTRY_FOREIGN", "not a trgc cache entry (bad magic)", path)
    if len(data) < _HEAD.size:
        raise _refusal("E_CACHE_ENTRY_TRUNCATED", "the header is cut short", path)
    _, version, key_len, payload_len = _HEAD.unpack_from(data)
    if version != CONTAINER_VERSION:
        raise _refusal(
            "E_CACHE_ENTRY_FOREIGN",
            f"container version {version}, this trgc reads {CONTAINER_VERSION}",
            path,
        )
    declared = _HEAD.size + key_len + payload_len + DIGEST_BYTES
    if len(data) < declared:
        raise _refusal(
            "E_CACHE_ENTRY_TRUNCATED", f"{len(data)} bytes, the header declares {declared}", path
        )
    if len(data) > declared:
        raise _refusal(
            "E_CACHE_ENTRY_CORRUPT", f"{len(data)} bytes, the header declares {declared}", path
        )
    body = memoryview(data)[: declared - DIGEST_BYTES]
    if hashlib.sha256(body).digest() != data[declared - DIGEST_BYTES :]:
        raise _refusal("E_CACHE_ENTRY_CORRUPT", "digest mismatch", path)
    stored = bytes(body[_HEAD.size : _HEAD.size + key_len])
    if key is not None and stored != key.canonical():
        raise _refusal("E_CACHE_ENTRY_FOREIGN", "stored under another key", path)
    return stored, bytes(body[_HEAD.size + key_len :])


_SEP = os.sep
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)


def _read_all(fd: int, limit: int) -> bytes:
    """Up to `limit` bytes of `fd`, to its end (as `BufferedReader.read(limit)`: reads until
    the limit or an empty read)."""
    chunks, got = [], 0
    while got < limit:
        chunk = os.read(fd, limit - got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def default_root() -> Path:
    """`TRGC_CACHE_DIR` if set, else the user's cache directory (XDG_CACHE_HOME/trgc, or
    ~/.cache/trgc, on Linux; the platform's own place elsewhere)."""
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env)
    import platformdirs

    return platformdirs.user_cache_path("trgc", appauthor=False)


def default_max_bytes() -> int:
    """`TRGC_CACHE_MAX_BYTES` if set (a non-negative integer), else `DEFAULT_MAX_BYTES`."""
    env = os.environ.get(ENV_MAX_BYTES)
    if env is None or env == "":
        return DEFAULT_MAX_BYTES
    try:
        value = int(env.replace("_", ""))
    except ValueError:
        value = -1
    if value < 0:
        raise TrgcError("E_USAGE", f"{ENV_MAX_BYTES} must be a non-negative integer, got {env!r}")
    return value


@dataclass
class CacheStats:
    """What one `DiskCache` object saw (this process only)."""

    hits: int = 0
    misses: int = 0
    writes: int = 0
    write_failures: int = 0
    dropped: int = 0  # `put_later` entries not published: the publisher's queue was full
    evictions: int = 0
    refused: dict[str, int] = field(default_factory=dict)
    last_refusal: TrgcError | None = None

    def to_dict(self) -> dict:
        out = asdict(self)
        out["last_refusal"] = None if self.last_refusal is None else self.last_refusal.to_dict()
        return out


@dataclass(frozen=True)
class _File:
    path: Path
    kind: str
    size: int
    mtime: float


@dataclass(frozen=True)
class CacheInfo:
    """A scan of a cache directory."""

    location: str
    entries: int
    bytes: int
    limit_bytes: int
    max_entry_bytes: int
    kinds: dict[str, dict[str, int]]  # kind -> {"entries": n, "bytes": n}
    temporaries: int  # files of writers still writing, or dead before publishing

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class PruneReport:
    location: str
    evicted_entries: int
    evicted_bytes: int
    refused: dict[str, int]  # code -> entries removed by --verify
    temporaries_removed: int
    entries: int
    bytes: int
    limit_bytes: int

    def to_dict(self) -> dict:
        return asdict(self)


class DiskCache:
    """A cache directory (see the module docstring). Reads and writes never raise for a bad
    or missing entry: `get` returns None and counts why, `put` returns False when it could not
    publish. One object per thread (plus the background publisher of `put_later`, which only
    puts); any number of processes may share the directory."""

    def __init__(
        self,
        root: Path | str,
        *,
        max_bytes: int | None = None,
        max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
    ) -> None:
        self.root = Path(root)
        self.max_bytes = default_max_bytes() if max_bytes is None else int(max_bytes)
        if self.max_bytes < 0 or max_entry_bytes < 0:
            raise ValueError("max_bytes and max_entry_bytes must be non-negative")
        self.max_entry_bytes = min(int(max_entry_bytes), self.max_bytes)
        self.layout = self.root / LAYOUT
        self._layout_text = str(self.layout)
        self.stats = CacheStats()
        # (tokenizer, compiler, policy) of the last mask store made over this cache for an
        # artifact of the artifact cache: `trgc.compiler.cache` reads that binding's start
        # entry (the artifact and its start mask in one read) before the artifact entry
        self.last_binding: tuple[str, str, str] | None = None
        self._publisher: _Publisher | None = None
        self._publisher_lock = threading.Lock()

    @staticmethod
    def entry_key(
        kind: str, format: int, tokenizer: str, compiler: str, policy: str, subject: str
    ) -> EntryKey:
        """An `EntryKey`, for callers in layers below the engine (`trgc.compiler.cache`)."""
        return EntryKey(kind, format, tokenizer, compiler, policy, subject)

    # -- paths and the ledger -------------------------------------------------------------
    def path_of(self, key: EntryKey) -> Path:
        return Path(self._path_text(key))

    def _path_text(self, key: EntryKey) -> str:
        """`path_of` as a string (a hit reads by it: pathlib's joins cost more than the open)."""
        address = key.address()  # `os.path.join` of these parts: none is absolute or empty
        return f"{self._layout_text}{_SEP}{key.kind}{_SEP}{address[:2]}{_SEP}{address}{SUFFIX}"

    @property
    def _ledger(self) -> Path:
        return self.layout / "usage.json"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The directory-wide lock that serialises ledger updates, eviction and clearing
        (never held while an entry is read or written)."""
        import filelock

        try:
            self.root.mkdir(parents=True, exist_ok=True)
            lock = filelock.FileLock(str(self.root / f"{LAYOUT}.lock"))
            lock.acquire()
        except OSError as exc:
            raise TrgcError(
                "E_IO", f"cannot lock the cache directory: {exc.strerror}", source=str(self.root)
            ) from None
        try:
            yield
        finally:
            lock.release()

    def require_directory(self) -> None:
        """`E_IO` unless the root is a directory or absent (maintenance commands call it)."""
        if self.root.exists() and not self.root.is_dir():
            raise TrgcError(
                "E_IO", "the cache location exists and is not a directory", source=str(self.root)
            )

    def _ensure_root(self) -> None:
        tag = self.root / "CACHEDIR.TAG"
        if not tag.exists():
            self.root.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(TrgcError):
                atomic_write(tag, CACHEDIR_TAG.encode())

    def _read_ledger(self) -> int | None:
        """Bytes the ledger records, None when it is missing or unreadable (then a scan)."""
        try:
            value = json.loads(read_bytes(self._ledger, LEDGER_BYTES))["bytes"]
        except (TrgcError, ValueError, KeyError, TypeError):
            return None
        return value if isinstance(value, int) and value >= 0 else None

    def _write_ledger(self, total: int) -> None:
        """Replace the ledger by rename, without an fsync: it is advisory (a torn or lost
        ledger is recounted by a scan), and an fsync per publication would double its cost."""
        self.layout.mkdir(parents=True, exist_ok=True)
        tmp = self.layout / f".usage.json.{os.getpid()}.tmp"
        try:
            tmp.write_bytes(json.dumps({"bytes": total}).encode())
            os.replace(tmp, self._ledger)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise TrgcError(
                "E_IO", f"cannot write the ledger: {exc.strerror}", source=str(self._ledger)
            ) from None

    # -- reading --------------------------------------------------------------------------
    def _refuse(self, error: TrgcError, path: Path) -> None:
        self.stats.refused[error.code] = self.stats.refused.get(error.code, 0) + 1
        self.stats.last_refusal = error
        with contextlib.suppress(OSError):
            path.unlink()

    def get(self, key: EntryKey) -> bytes | None:
        """The payload stored under `key`, or None (absent, or refused and removed)."""
        path = self._path_text(key)
        try:
            payload, mtime = self._read(key, path)
        except OSError:
            self.stats.misses += 1
            return None
        except TrgcError as refused:
            self._refuse(refused, Path(path))
            self.stats.misses += 1
            return None
        if time.time() - mtime > TOUCH_AFTER_SECONDS:
            with contextlib.suppress(OSError):
                os.utime(path)  # recently used: eviction removes the oldest first
        self.stats.hits += 1
        return payload

    def discard(self, key: EntryKey, error: TrgcError) -> None:
        """Refuse the entry under `key` on the caller's behalf (its payload failed the caller's
        own checks, `E_CACHE_ENTRY_PAYLOAD`): counted like any refusal, and removed."""
        self._refuse(error, self.path_of(key))

    def _read(self, key: EntryKey, path: Path | str) -> tuple[bytes, float]:
        """(payload, modification time); the size is checked before anything is read."""
        fd = os.open(path, _READ_FLAGS)  # no file object: a hit is a few system calls
        try:
            st = os.fstat(fd)
            if st.st_size > self.max_entry_bytes + entry_overhead(key):
                raise _refusal(
                    "E_CACHE_ENTRY_OVERSIZED",
                    f"{st.st_size:,} bytes, more than the {self.max_entry_bytes:,}-byte entry "
                    "limit allows",
                    path,
                )
            data = _read_all(fd, st.st_size + 1)
        finally:
            os.close(fd)
        return decode_entry(data, key, path)[1], st.st_mtime

    # -- writing --------------------------------------------------------------------------
    def put(
        self, key: EntryKey, payload: bytes, *, durable: bool = True, replace: bool = False
    ) -> bool:
        """Publish `payload` under `key` unless it is already there; False when it is larger
        than `max_entry_bytes` or the directory cannot be written (the cache is best effort).
        Publication is atomic either way (a temporary file renamed into place); `durable`
        also fsyncs the file first, so that it survives a power loss. Without it a crash may
        leave a cut entry, which the next read refuses and the caller recomputes: the
        background publisher writes so, because the fsync is nearly all of a put's cost.
        `replace` publishes over an entry already there (a store that grows, `maskstore`):
        readers see the old or the new entry whole, and of concurrent writers the last wins."""
        if len(payload) > self.max_entry_bytes:
            self.stats.write_failures += 1
            return False
        path = self.path_of(key)
        try:
            previous = path.stat().st_size
        except OSError:
            previous = 0
        else:
            if not replace:
                return True
        data = encode_entry(key, payload)
        try:
            self._ensure_root()
            path.parent.mkdir(parents=True, exist_ok=True)
            if durable:
                atomic_write(path, data)
            else:
                _replace_quickly(path, data)
            self._account(len(data) - previous)
        except (OSError, TrgcError):
            self.stats.write_failures += 1
            return False
        self.stats.writes += 1
        return True

    def put_later(
        self, key: EntryKey, make_payload: Callable[[], bytes], *, replace: bool = False
    ) -> None:
        """Publish `make_payload()` under `key` from a background thread, in a quiet moment
        (`_Publisher`): a `put` costs milliseconds (nearly all of it the fsync), which a decoder
        must not wait for between two masks. The payload is made in that thread too. Entries
        still pending when the interpreter exits are published first (for at most
        `FLUSH_AT_EXIT_SECONDS`); beyond `PENDING_LIMIT` waiting entries new ones are dropped
        (`stats.dropped`). `replace` as in `put`."""
        with self._publisher_lock:
            if self._publisher is None:
                self._publisher = _Publisher(self)
        self._publisher.submit(key, make_payload, replace)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every `put_later` entry is published (or `timeout` seconds); True when
        none is pending."""
        publisher = self._publisher
        return True if publisher is None else publisher.flush(timeout)

    def put_file(self, key: EntryKey, source: Path | str) -> bool:
        """`put` the bytes of a file (a whole `.trm`), read with the entry limit as bound."""
        try:
            payload = read_bytes(source, self.max_entry_bytes)
        except TrgcError:
            self.stats.write_failures += 1
            return False
        return self.put(key, payload)

    def _account(self, added: int) -> None:
        with self._locked():
            recorded = self._read_ledger()
            # an unknown ledger is recounted (the scan sees the new file too)
            total = recorded + added if recorded is not None else sum(f.size for f in self._scan())
            if total > self.max_bytes:
                total = self._evict_to(int(self.max_bytes * LOW_WATER))[2]
            self._write_ledger(total)

    # -- scanning and eviction -------------------------------------------------------------
    def _scan(self, temporaries: list[Path] | None = None) -> list[_File]:
        out: list[_File] = []
        try:
            kinds = sorted(os.scandir(self.layout), key=lambda e: e.name)
        except OSError:
            return out
        for kind in kinds:
            if not kind.is_dir(follow_symlinks=False) or not _KIND_RE.fullmatch(kind.name):
                continue
            with contextlib.suppress(OSError):
                for fan in sorted(os.scandir(kind.path), key=lambda e: e.name):
                    if not fan.is_dir(follow_symlinks=False):
                        continue
                    with contextlib.suppress(OSError):
                        for item in os.scandir(fan.path):
                            name = item.name
                            if name.startswith(".") and name.endswith(".tmp"):
                                if temporaries is not None:
                                    temporaries.append(Path(item.path))
                                continue
                            if not name.endswith(SUFFIX):
                                continue
                            with contextlib.suppress(OSError):
                                st = item.stat(follow_symlinks=False)
                                out.append(
                                    _File(Path(item.path), kind.name, st.st_size, st.st_mtime)
                                )
        return out

    def _evict_to(self, target: int) -> tuple[int, int, int]:
        """Remove least recently used entries until at most `target` bytes remain (under the
        lock). Returns (entries removed, bytes removed, bytes left)."""
        files = self._scan()
        files.sort(key=lambda f: (f.mtime, str(f.path)))
        total = sum(f.size for f in files)
        removed = removed_bytes = 0
        for f in files:
            if total <= target:
                break
            with contextlib.suppress(FileNotFoundError):
                f.path.unlink()
            total -= f.size
            removed += 1
            removed_bytes += f.size
        self.stats.evictions += removed
        return removed, removed_bytes, total

    # -- maintenance (trgc cache info | prune | clear) ------------------------------------
    def info(self) -> CacheInfo:
        """Scan the directory: entries and bytes, per kind, and temporaries."""
        self.require_directory()
        temporaries: list[Path] = []
        files = self._scan(temporaries)
        kinds: dict[str, dict[str, int]] = {}
        for f in files:
            slot = kinds.setdefault(f.kind, {"entries": 0, "bytes": 0})
            slot["entries"] += 1
            slot["bytes"] += f.size
        return CacheInfo(
            location=str(self.root),
            entries=len(files),
            bytes=sum(f.size for f in files),
            limit_bytes=self.max_bytes,
            max_entry_bytes=self.max_entry_bytes,
            kinds=dict(sorted(kinds.items())),
            temporaries=len(temporaries),
        )

    def verify_file(self, path: Path) -> TrgcError | None:
        """The refusal an entry file earns on its own (key not known: any valid key whose
        address is the file name passes), or None."""
        try:
            size = path.stat().st_size
            if size > self.max_entry_bytes + _HEAD.size + MAX_KEY_BYTES + DIGEST_BYTES:
                return _refusal(
                    "E_CACHE_ENTRY_OVERSIZED",
                    f"{size:,} bytes, more than the {self.max_entry_bytes:,}-byte entry limit",
                    path,
                )
            data = read_bytes(path, size)  # a file that grew since the stat is refused
        except OSError:
            return None  # removed meanwhile
        except TrgcError as error:
            if error.code == "E_IO":
                return None  # removed meanwhile
            return _refusal("E_CACHE_ENTRY_OVERSIZED", "it grew while being read", path)
        try:
            stored, payload = decode_entry(data, None, path)
        except TrgcError as error:
            return error
        if hashlib.sha256(stored).hexdigest() + SUFFIX != path.name:
            return _refusal("E_CACHE_ENTRY_FOREIGN", "stored under another key", path)
        if len(payload) > self.max_entry_bytes:
            return _refusal(
                "E_CACHE_ENTRY_OVERSIZED",
                f"a {len(payload):,}-byte payload, more than the entry limit",
                path,
            )
        return None

    def prune(self, max_bytes: int | None = None, *, verify: bool = False) -> PruneReport:
        """Evict least recently used entries down to `max_bytes` (default: the bound), remove
        temporaries older than `STALE_TEMPORARY_SECONDS`, and with `verify` read every entry
        and remove those refused."""
        target = self.max_bytes if max_bytes is None else int(max_bytes)
        if target < 0:
            raise TrgcError("E_USAGE", f"--max-bytes must be non-negative, got {target}")
        refused: dict[str, int] = {}
        self.require_directory()
        with self._locked():
            temporaries: list[Path] = []
            files = self._scan(temporaries)
            now = time.time()
            stale = 0
            for tmp in temporaries:
                with contextlib.suppress(OSError):
                    if now - tmp.stat().st_mtime > STALE_TEMPORARY_SECONDS:
                        tmp.unlink()
                        stale += 1
            if verify:
                for f in files:
                    error = self.verify_file(f.path)
                    if error is not None:
                        self._refuse(error, f.path)
                        refused[error.code] = refused.get(error.code, 0) + 1
            evicted, evicted_bytes, total = self._evict_to(target)
            entries = len(self._scan())
            if self.layout.exists():
                self._write_ledger(total)
        return PruneReport(
            location=str(self.root),
            evicted_entries=evicted,
            evicted_bytes=evicted_bytes,
            refused=dict(sorted(refused.items())),
            temporaries_removed=stale,
            entries=entries,
            bytes=total,
            limit_bytes=self.max_bytes,
        )

    def clear(self) -> tuple[int, int]:
        """Remove every entry (the layout directory is renamed away, then deleted, so a
        concurrent writer never sees a half-cleared cache). Returns (entries, bytes)."""
        self.require_directory()
        with self._locked():
            files = self._scan()
            if self.layout.exists():
                trash = self.root / f".trash-{os.getpid()}-{time.monotonic_ns()}"
                try:
                    os.replace(self.layout, trash)
                except OSError as exc:
                    raise TrgcError(
                        "E_IO", f"cannot clear the cache: {exc.strerror}", source=str(self.root)
                    ) from None
                shutil.rmtree(trash, ignore_errors=True)
        return len(files), sum(f.size for f in files)


def _replace_quickly(path: Path, data: bytes) -> None:
    """Write `data` to a temporary file beside `path` and rename it into place, without an
    fsync; nothing is left behind on failure."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class _Publisher:
    """The background thread behind `DiskCache.put_later` (a daemon, started on first use).

    It publishes only in a quiet moment: once no entry has been submitted for `QUIET_SECONDS`,
    or when `flush` asks, and stops again as soon as a new one comes. While a decoder produces
    new entries it writes nothing and is not even woken (it looks at the queue `QUIET_SECONDS`
    apart): its file system calls and, above all, the interpreter lock it takes back after each
    of them would interrupt the decoder's masks (measured: a publisher writing as entries came
    tripled the thread CPU time of cold masks). It writes without fsync (`put(durable=False)`).
    Pending entries wait in memory, at most `PENDING_LIMIT` of them."""

    def __init__(self, cache: DiskCache) -> None:
        self.cache = cache
        self.pending: list[tuple[EntryKey, Callable[[], bytes], bool]] = []
        self.unfinished = 0  # submitted and not yet published (or failed)
        self.last_submit = 0.0
        self.hurry = 0  # flushes waiting
        self.cond = threading.Condition()
        thread = threading.Thread(target=self._run, name="trgc-cache-publisher", daemon=True)
        thread.start()
        atexit.register(self.flush, FLUSH_AT_EXIT_SECONDS)

    def submit(self, key: EntryKey, make_payload: Callable[[], bytes], replace: bool) -> None:
        with self.cond:
            if len(self.pending) >= PENDING_LIMIT:
                self.cache.stats.dropped += 1
                return
            self.pending.append((key, make_payload, replace))
            self.unfinished += 1
            self.last_submit = time.monotonic()

    def _run(self) -> None:
        while True:
            with self.cond:
                while not (self.pending and (
                    self.hurry or time.monotonic() - self.last_submit >= QUIET_SECONDS
                )):  # fmt: skip
                    self.cond.wait(QUIET_SECONDS)
                batch, self.pending = self.pending, []
            done = 0
            for key, make_payload, replace in batch:
                if not self.hurry and time.monotonic() - self.last_submit < QUIET_SECONDS:
                    break  # the decoder is busy again: the rest waits for the next quiet moment
                try:
                    self.cache.put(key, make_payload(), durable=False, replace=replace)
                except Exception:  # noqa: BLE001 - best effort: a payload that cannot be made is skipped
                    self.cache.stats.write_failures += 1
                done += 1
            with self.cond:
                self.pending[:0] = batch[done:]
                self.unfinished -= done
                self.cond.notify_all()

    def flush(self, timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.cond:
            self.hurry += 1
            self.cond.notify_all()
            try:
                while self.unfinished:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        return False
                    self.cond.wait(left)
            finally:
                self.hurry -= 1
        return True


def open_cache(cache_dir: Path | str | None = None, *, enabled: bool = True) -> DiskCache | None:
    """The cache a command or library call should use: None when disabled, else `cache_dir`,
    `TRGC_CACHE_DIR` or the user's cache directory, bounded by `TRGC_CACHE_MAX_BYTES`."""
    if not enabled:
        return None
    return DiskCache(default_root() if cache_dir is None else Path(cache_dir))
