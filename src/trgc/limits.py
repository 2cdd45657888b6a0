"""The ceilings every stage checks before the allocation it guards, and the operation budget.

Defaults come from the research report ("Safe compilation pipeline"). A limit is raised as
`E_LIMIT_<NAME>` (exit status 3). Users override limits with `--limit NAME=VALUE` or a TOML
file holding a `[limits]` table; unknown names are errors, never ignored.
"""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

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
                raise TrgcError("E_USAGE", f"limit {name} must be a non-negative integer, got {value!r}")
        return replace(self, **overrides)


DEFAULT_LIMITS = Limits()
LIMIT_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Limits))


def parse_limit_option(text: str) -> tuple[str, int]:
    """Parse one `NAME=VALUE` command-line override."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise TrgcError("E_USAGE", f"--limit expects NAME=VALUE, got {text!r}")
    try:
        number = int(value.strip().replace("_", ""))
    except ValueError:
        raise TrgcError("E_USAGE", f"--limit {name}: {value!r} is not an integer") from None
    return name.strip(), number


def load_limits_file(path: Path) -> dict[str, int]:
    """Read the `[limits]` table of a TOML file; any other top-level key is an error."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TrgcError("E_IO", f"cannot read limits file: {exc.strerror}", source=str(path)) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TrgcError("E_USAGE", f"invalid TOML: {exc}", source=str(path)) from None
    extra = sorted(set(data) - {"limits"})
    if extra:
        raise TrgcError("E_USAGE", f"unknown top-level key {extra[0]!r} in limits file", source=str(path))
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
