"""The ceilings every stage checks before the allocation it guards, and the operation budget.

Defaults come from the research report ("Safe compilation pipeline"). A limit is raised as
`E_LIMIT_<NAME>` (exit status 3). Users override limits with `--limit NAME=VALUE` or a TOML
file holding a `[limits]` table; unknown names are errors, never ignored.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from trgc.atomic import read_bytes
from trgc.errors import TrgcError

MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Named resource ceilings ("fuel"). All values are non-negative integers."""

    input_bytes: int = 1 * MiB
    states: int = 65_536
    transitions: int = 1_048_576
    compiled_bytes: int = 32 * MiB
    operations: int = 50_000_000
    repetition: int = 1_048_576
    max_depth: int = 1_024
    nesting: int = 1_000
    cache_bytes: int = 64 * MiB

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    def with_overrides(self, overrides: dict[str, int]) -> Limits:
        """A copy with the named limits replaced; unknown names are `E_LIMIT_UNKNOWN`."""
        known = {f.name for f in fields(self)}
        for name, value in overrides.items():
            if name not in known:
                raise TrgcError(
                    "E_LIMIT_UNKNOWN",
                    f"unknown limit {name!r}",
                    hint=f"known limits: {', '.join(sorted(known))}",
                )
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise TrgcError(
                    "E_USAGE", f"limit {name} must be a non-negative integer, got {value!r}"
                )
            if value > MAX_LIMIT:
                raise TrgcError(
                    "E_USAGE",
                    f"limit {name} = {value} is larger than {MAX_LIMIT:,} (2^63 - 1)",
                    hint="an artifact records its limits as integers below 2^63",
                )
        return replace(self, **overrides)


# the largest value a limit may take: an artifact's LIMT section holds each limit below 2^63
MAX_LIMIT = 2**63 - 1


DEFAULT_LIMITS = Limits()
LIMIT_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Limits))

GiB = 1024 * MiB


def zstd_bound(content_bytes: int) -> int:
    """The largest zstd frame of `content_bytes` of content trgc writes (zstd's worst-case
    expansion, `ZSTD_COMPRESSBOUND`, plus a frame header), so a file cap can follow a content cap."""
    return content_bytes + (content_bytes >> 7) + 64 * 1024


@dataclass(frozen=True)
class FileCap:
    """The ceiling on one kind of file trgc reads, in bytes as stored on disk: `size(limits)`,
    the limit it follows (None for a fixed ceiling) and the code a larger file gets."""

    kind: str
    description: str
    size: Callable[[Limits], int]
    limit: str | None
    code: str = "E_LIMIT_INPUT_BYTES"

    def bytes(self, limits: Limits = DEFAULT_LIMITS) -> int:
        return self.size(limits)


def mask_cache_content(limits: Limits) -> int:
    """The largest canonical `.trm` content: cache_bytes of masks plus the per-entry keys and
    index arrays (36 bytes per frame entry; an entry is a state with clipped counter values)."""
    return limits.cache_bytes + 64 * limits.states + MiB


def _fixed(n: int) -> Callable[[Limits], int]:
    return lambda limits: n


# Every file trgc opens is read through `read_file` (or `trgc.atomic.read_bytes`) with one of
# these caps: the size is checked with fstat before reading and again while reading (devices,
# pipes, growing files), so no read ever holds more than its cap. docs/limits.md lists them.
FILE_CAPS: dict[str, FileCap] = {
    cap.kind: cap
    for cap in (
        FileCap("source", "grammar, schema or tool list to compile, input to check, tool request, "
                "evidence result, lock entry source (also on standard input)",
                lambda limits: limits.input_bytes, "input_bytes"),
        FileCap("artifact", "a .trga file: one zstd frame of at most compiled_bytes of content",
                lambda limits: zstd_bound(limits.compiled_bytes), "compiled_bytes",
                "E_LIMIT_COMPILED_BYTES"),
        FileCap("mask cache", "a .trm file: one zstd frame of at most cache_bytes of masks plus "
                "16 bytes per state of index arrays and 1 MiB",
                lambda limits: zstd_bound(mask_cache_content(limits)), "cache_bytes",
                "E_LIMIT_CACHE_BYTES"),
        FileCap("token table", "a .trt file, compressed or not (also its content)", _fixed(GiB),
                None, "E_TOKENIZER_TOO_LARGE"),
        FileCap("tokenizer source", "one tokenizer file (tokenizer.json, vocab and merges, rank "
                "file, .model, special-token sidecar, config), also its decompressed content",
                _fixed(512 * MiB), None, "E_TOKENIZER_TOO_LARGE"),
        FileCap("trace", "a trace (JSONL), about a million steps", _fixed(256 * MiB), None),
        FileCap("logits sidecar", "a trace's .logits.zst; replay also caps it at the zstd bound "
                "of the payload its step lines describe", _fixed(4 * GiB), None,
                "E_SIDECAR_FORMAT"),
        FileCap("logits", "an npy:FILE logits array", _fixed(4 * GiB), None),
        FileCap("lock", "a trgc lock file (TOML)", _fixed(16 * MiB), None),
        FileCap("limits file", "a --limits-file (TOML)", _fixed(MiB), None),
        FileCap("evidence source", "an evidence check --source document", _fixed(64 * MiB), None),
        FileCap("probe", "a tokenizer verify --probe corpus", _fixed(64 * MiB), None),
        FileCap("benchmark", "one conformance, coverage or quality input file", _fixed(64 * MiB),
                None),
    )
}  # fmt: skip


def file_cap(kind: str, limits: Limits = DEFAULT_LIMITS) -> int:
    """The byte ceiling for files of `kind` (a key of `FILE_CAPS`) under `limits`."""
    return FILE_CAPS[kind].bytes(limits)


def read_file(
    path: Path | str,
    kind: str,
    limits: Limits = DEFAULT_LIMITS,
    *,
    magic: bytes | tuple[bytes, ...] = b"",
) -> bytes:
    """The bytes of a file of `kind`, refused with the kind's code once it exceeds its cap;
    with a `magic`, only a short prefix of a file that does not start with it (see
    `atomic.read_bytes`)."""
    cap = FILE_CAPS[kind]
    hint = (
        f"raise it with --limit {cap.limit}=N if this is intended"
        if cap.limit is not None
        else f"no {kind} trgc writes is that large"
    )
    return read_bytes(path, cap.bytes(limits), code=cap.code, what=kind, hint=hint, magic=magic)


_DIGITS = re.compile(r"[0-9]+(?:_[0-9]+)*", re.ASCII)


def parse_limit_option(text: str) -> tuple[str, int]:
    """Parse one `NAME=VALUE` command-line override."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise TrgcError("E_USAGE", f"--limit expects NAME=VALUE, got {text!r}")
    # ASCII digits only: int() would also read other scripts' digits ("١٠" is 10) and signs
    if _DIGITS.fullmatch(value.strip()) is None:
        raise TrgcError(
            "E_USAGE",
            f"--limit {name.strip()}: {value!r} is not a non-negative integer in ASCII digits",
            hint="digits 0-9, optionally grouped with _ (e.g. 1_000_000)",
        )
    return name.strip(), int(value.strip())


def load_limits_file(path: Path) -> dict[str, int]:
    """Read the `[limits]` table of a TOML file; any other top-level key is an error."""
    import tomllib  # only here: its regexes cost every process ~5 ms at import

    raw = read_file(path, "limits file")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise TrgcError("E_USAGE", f"invalid TOML: {exc}", source=str(path)) from None
    extra = sorted(set(data) - {"limits"})
    if extra:
        raise TrgcError(
            "E_USAGE", f"unknown top-level key {extra[0]!r} in limits file", source=str(path)
        )
    table = data.get("limits", {})
    if not isinstance(table, dict):
        raise TrgcError("E_USAGE", "[limits] must be a table", source=str(path))
    return dict(table)


def resolve_limits(options: list[str] | None = None, file: Path | None = None) -> Limits:
    """Defaults, then the TOML file, then `--limit` options (last wins)."""
    overrides: dict[str, int] = {}
    if file is not None:
        overrides.update(load_limits_file(file))
    for text in options or []:
        name, value = parse_limit_option(text)
        overrides[name] = value
    return DEFAULT_LIMITS.with_overrides(overrides)


class Budget:
    """A countdown of charged operations; running out raises `E_LIMIT_OPERATIONS`.

    Every loop whose trip count depends on the input charges this budget, so that no input
    can make compilation hang.
    """

    __slots__ = ("limit", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def charge(self, n: int = 1, what: str = "compilation") -> None:
        self.used += n
        if self.used > self.limit:
            raise TrgcError(
                "E_LIMIT_OPERATIONS",
                f"{what} needed more than {self.limit:,} operations",
                hint="simplify the grammar or raise it with --limit operations=N",
            )


def check_limit(name: str, value: int, limit: int, what: str) -> None:
    """Raise `E_LIMIT_<NAME>` if `value` exceeds `limit` (call it before allocating)."""
    if value > limit:
        raise TrgcError(
            f"E_LIMIT_{name.upper()}",
            f"{what}: {value:,} exceeds the {name} limit of {limit:,}",
            hint=f"raise it with --limit {name}=N if this is intended",
        )
