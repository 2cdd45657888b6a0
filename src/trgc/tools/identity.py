"""Implementation identities: the `implementation_hash` of each registered tool.

A tool's behaviour is defined by the source files of the modules that implement it (the
registry lists them per tool). Its identity is

    implementation_hash = "sha256:" + hex(SHA-256(canonical JSON of
        {"implementation": <versioned label>, "sources": {<file name>: <hex SHA-256 of its bytes>}}))

over the exact bytes of those files, so it is the same in every process and on every machine
that runs the same trgc source, and it changes when any byte of the implementation changes,
even if the version label was not bumped. The files are read from this package's directory
(never from a name a request supplies).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from trgc.errors import TrgcError
from trgc.tools import strictjson

_PACKAGE_DIR = Path(__file__).resolve().parent


def implementation_hash(label: str, sources: dict[str, bytes]) -> str:
    """The identity of an implementation called `label` made of the files `sources`."""
    document = {
        "implementation": label,
        "sources": {name: strictjson.sha256_hex(data) for name, data in sources.items()},
    }
    return "sha256:" + strictjson.sha256_hex(strictjson.canonical_bytes(document))


@cache
def module_bytes(name: str) -> bytes:
    """The bytes of the tools-layer source file `name` (e.g. "tinycalc.py"), read once."""
    path = _PACKAGE_DIR.joinpath(name)
    if path.parent != _PACKAGE_DIR or path.suffix != ".py":
        raise TrgcError("E_INTERNAL", f"not a tools-layer module: {name!r}")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise TrgcError(
            "E_INTERNAL",
            f"cannot read the tool implementation source {name}: {exc.strerror}",
            source=str(path),
            hint="trgc's installation is incomplete; reinstall it",
        ) from None


@cache
def registered_hash(label: str, modules: tuple[str, ...]) -> str:
    """`implementation_hash` of the installed files `modules`, computed once per process."""
    return implementation_hash(label, {name: module_bytes(name) for name in modules})
