"""Lock files: pin `name -> (source hash, artifact hash, compiler, limits)` and re-prove them.

`lock` compiles every source (trg-1 grammars `*.trg`, JSON Schemas `*.json`), writes each
artifact next to the lock (or into `artifacts_dir`) and records the hashes in TOML written
with tomli-w. `verify` recompiles from the recorded sources and reports every added, removed
and changed entry; a release pipeline runs it on a clean checkout to prove reproducible builds.
Paths inside the lock are relative to the lock file's directory, with `/` separators.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PureWindowsPath

from trgc.artifact.model import Artifact
from trgc.atomic import atomic_write
from trgc.errors import TrgcError
from trgc.limits import DEFAULT_LIMITS, Limits, read_file

LOCK_FORMAT = "trgc-lock-1"
SOURCE_SUFFIXES = (".trg", ".json")


@dataclass(frozen=True)
class LockEntry:
    name: str
    source: str
    source_sha256: str
    artifact: str
    artifact_sha256: str

    def to_toml(self) -> dict[str, str]:
        return {
            "source": self.source,
            "source_sha256": self.source_sha256,
            "artifact": self.artifact,
            "artifact_sha256": self.artifact_sha256,
        }


@dataclass(frozen=True)
class Lock:
    compiler: str
    limits: dict[str, int]
    entries: dict[str, LockEntry]

    def to_toml(self) -> dict:
        return {
            "lock": {
                "format": LOCK_FORMAT,
                "compiler": self.compiler,
                "limits": dict(sorted(self.limits.items())),
            },
            "entries": {name: self.entries[name].to_toml() for name in sorted(self.entries)},
        }


@dataclass
class VerifyReport:
    """What `verify` found: entries added, removed and changed (with the fields that differ)."""

    checked: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: dict[str, list[dict[str, str]]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not (self.added or self.removed or self.changed)

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "checked": self.checked,
            "added": self.added,
            "removed": self.removed,
            "changed": self.changed,
        }


def sha256_bytes(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def compile_path(path: Path, limits: Limits) -> tuple[bytes, Artifact]:
    """Read a `.trg` grammar or `.json` schema file once and compile it as `trgc compile`
    would; return the source bytes (for their hash) with the artifact."""
    from trgc.compiler.sources import compile_source

    data = read_file(path, "source", limits)
    return data, compile_source(data, source=str(path), limits=limits)


def lock(
    sources: list[Path],
    lock_path: Path,
    *,
    artifacts_dir: Path | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> Lock:
    """Compile `sources`, write their artifacts and the lock file; return the lock."""
    from trgc import __version__

    base = lock_path.resolve().parent
    out_dir = (artifacts_dir or lock_path.parent).resolve()
    entries: dict[str, LockEntry] = {}
    compiled = []
    for source in sorted(sources, key=lambda p: p.as_posix()):
        if source.suffix not in SOURCE_SUFFIXES:
            raise TrgcError(
                "E_USAGE",
                f"cannot lock {source}: expected a .trg grammar or a .json schema",
                source=str(source),
            )
        name = source.stem
        if name in entries:
            raise TrgcError(
                "E_LOCK_DUPLICATE_NAME",
                f"two sources are both named {name!r}: {entries[name].source} and {_relative(source, base)}",
                hint="rename one of them; lock entries are keyed by file stem",
            )
        data, artifact = compile_path(source, limits)
        target = out_dir / f"{name}.trga"
        entries[name] = LockEntry(
            name=name,
            source=_relative(source, base),
            source_sha256=sha256_bytes(data),
            artifact=_relative(target, base),
            artifact_sha256=artifact.sha256,
        )
        compiled.append((artifact, target))
    # publish only after every source compiled: a failure leaves the old artifacts and lock
    out_dir.mkdir(parents=True, exist_ok=True)
    for artifact, target in compiled:
        artifact.save(target)
    result = Lock(compiler=f"trgc {__version__}", limits=limits.to_dict(), entries=entries)
    write_lock(result, lock_path)
    return result


def write_lock(lock_data: Lock, path: Path) -> None:
    import tomli_w

    text = "# written by `trgc lock`; verify with `trgc verify --lock " + path.name + "`\n"
    text += tomli_w.dumps(lock_data.to_toml())
    atomic_write(path, text.encode("utf-8"))


LOCK_NAMES = ("trgc.lock", "artifacts/trgc.lock")


def find_lock(start: Path | None = None) -> Path:
    """The lock `trgc verify` uses without --lock: the first of `trgc.lock` and
    `artifacts/trgc.lock` in the current directory, then in each parent in turn."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        for name in LOCK_NAMES:
            candidate = directory / name
            if candidate.is_file():
                return candidate
    raise TrgcError(
        "E_IO",
        f"no lock file: neither {' nor '.join(LOCK_NAMES)} in {here} or any parent directory",
        hint="give --lock FILE, or write one with trgc lock",
    )


def read_lock(path: Path) -> Lock:
    """Parse and validate a lock file: exactly the tables and keys of trgc-lock-1, every value of
    its type, hashes as `sha256:<64 hex>`, paths relative to the lock's directory."""
    try:
        data = tomllib.loads(read_file(path, "lock").decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise _invalid(path, f"not a valid TOML lock file: {exc}") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise _invalid(path, "the lock file nests too deeply to be a trgc lock") from None
    header = data.get("lock")
    if set(data) - {"lock", "entries"} or not isinstance(header, dict):
        raise _invalid(path, "a lock file holds exactly the tables [lock] and [entries]")
    if header.get("format") != LOCK_FORMAT:
        raise _invalid(
            path, f"unknown lock format {header.get('format')!r}, expected {LOCK_FORMAT!r}"
        )
    if set(header) != {"format", "compiler", "limits"}:
        raise _invalid(path, f"[lock] must have format, compiler and limits; got {sorted(header)}")
    if not isinstance(header["compiler"], str):
        raise _invalid(path, "[lock] compiler must be a string")
    if not isinstance(header["limits"], dict) or not all(
        type(value) is int for value in header["limits"].values()
    ):
        raise _invalid(path, "[lock.limits] must be a table of integers")
    table = data.get("entries", {})
    if not isinstance(table, dict):
        raise _invalid(path, "[entries] must be a table of entries")
    entries: dict[str, LockEntry] = {}
    for name, entry in table.items():
        if not isinstance(entry, dict) or set(entry) != set(ENTRY_FIELDS):
            raise _invalid(path, f"entry {name!r} must have exactly {sorted(ENTRY_FIELDS)}")
        for key, valid in ENTRY_FIELDS.items():
            if not valid(entry[key]):
                raise _invalid(path, f"entry {name!r}: {key} {entry[key]!r} is not {valid.__doc__}")
        entries[name] = LockEntry(name=name, **entry)
    try:
        limits = DEFAULT_LIMITS.with_overrides(dict(header["limits"]))
    except TrgcError as error:
        raise _invalid(path, f"[lock.limits]: {error.message}") from None
    return Lock(compiler=header["compiler"], limits=limits.to_dict(), entries=entries)


def _relative_path(value: object) -> bool:
    """a relative path with / separators"""
    return (
        isinstance(value, str)
        and value != ""
        and "\0" not in value
        and "\\" not in value
        and not value.startswith("/")
        and not PureWindowsPath(value).drive
    )


def _sha256(value: object) -> bool:
    """sha256:<64 lowercase hex digits>"""
    return (
        isinstance(value, str)
        and len(value) == 71
        and value.startswith("sha256:")
        and all(c in "0123456789abcdef" for c in value[7:])
    )


# the keys of one [entries.NAME] table and what each value must be (one line per field)
ENTRY_FIELDS = {
    "source": _relative_path,
    "source_sha256": _sha256,
    "artifact": _relative_path,
    "artifact_sha256": _sha256,
}


def _invalid(path: Path, message: str) -> TrgcError:
    return TrgcError("E_LOCK_INVALID", message, source=str(path))


def verify(lock_path: Path, sources: list[Path] | None = None) -> VerifyReport:
    """Recompile every locked source and compare; `sources`, if given, is the expected set."""
    from trgc import __version__
    from trgc.compiler.sources import compile_source

    locked = read_lock(lock_path)
    base = lock_path.resolve().parent
    limits = DEFAULT_LIMITS.with_overrides(locked.limits)
    report = VerifyReport()
    if sources is not None:
        given = {p.stem: p for p in sources}
        report.added = sorted(set(given) - set(locked.entries))
        report.removed = sorted(set(locked.entries) - set(given))
    compiler = f"trgc {__version__}"
    for name in sorted(locked.entries):
        entry = locked.entries[name]
        source = base / entry.source
        if not os.path.exists(source):  # False, not an error, for a name too long to exist
            if name not in report.removed:
                report.removed.append(name)
            continue
        report.checked.append(name)
        differences = []
        if locked.compiler != compiler:
            differences.append({"field": "compiler", "locked": locked.compiler, "actual": compiler})
        data = read_file(source, "source", limits)
        source_hash = sha256_bytes(data)
        if source_hash != entry.source_sha256:
            differences.append(
                {"field": "source_sha256", "locked": entry.source_sha256, "actual": source_hash}
            )
        try:
            actual = compile_source(data, source=str(source), limits=limits).sha256
        except TrgcError as error:
            actual = f"error {error.code}"
        if actual != entry.artifact_sha256:
            differences.append(
                {"field": "artifact_sha256", "locked": entry.artifact_sha256, "actual": actual}
            )
        differences.extend(_check_artifact_file(base / entry.artifact, entry.artifact_sha256))
        if differences:
            report.changed[name] = differences
    report.removed.sort()
    return report


def _check_artifact_file(path: Path, expected: str) -> list[dict[str, str]]:
    """The committed artifact file must exist and carry the locked identity."""
    from trgc.artifact.codec import load_artifact

    if not os.path.exists(path):
        return [{"field": "artifact_file", "locked": expected, "actual": "missing"}]
    try:
        found = load_artifact(path).sha256
    except TrgcError as error:
        found = f"error {error.code}"
    if found != expected:
        return [{"field": "artifact_file", "locked": expected, "actual": found}]
    return []


def _relative(path: Path, base: Path) -> str:
    resolved = path.resolve()
    try:
        return resolved.relative_to(base).as_posix()
    except ValueError:
        return Path(os.path.relpath(resolved, base)).as_posix()
