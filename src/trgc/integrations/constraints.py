"""Per-request constraints for serving engines: the `trgc` request arguments, compiled once.

A request opts in with a JSON-serialisable object (vLLM: `SamplingParams.extra_args["trgc"]`)
holding exactly one of

    {"schema": {...} | "<JSON text>"}    a JSON Schema (trj-1), compiled with trgc's defaults
    {"grammar": "<trg-1 source>"}        a trg-1 grammar
    {"artifact": "<path>" | "sha256:<hex>"}  a compiled artifact; an identity is looked up as
                                          `<cache_dir>/artifacts/<hex>.trga`

and optionally `"audit": "<path>"`, where the request's audit record is written
(`trgc.integrations.audit`). Any other key, two constraints or none is `E_VLLM_REQUEST`.

Compiled artifacts are memoised per process by the SHA-256 of the canonical request (kind and
source), so concurrent requests with one schema share one artifact (and so one token binding
and one mask cache); each is also published into the artifact cache directory, so an audit
record can be checked afterwards by identity alone.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trgc.artifact.model import Artifact
from trgc.errors import TrgcError
from trgc.integrations.smollm2 import cache_dir

KINDS = ("schema", "grammar", "artifact")
OPTIONS = ("audit",)
MEMO_ENTRIES = 256  # compiled constraints kept per process
_IDENTITY = re.compile(r"sha256:([0-9a-f]{64})")


@dataclass(frozen=True)
class RequestSpec:
    """One request's parsed trgc arguments: the constraint kind, its source (schema as compact
    JSON text in its own member order, grammar text, artifact path or identity) and the audit
    path."""

    kind: str
    source: str
    audit: Path | None

    @property
    def key(self) -> str:
        """The memo key: SHA-256 of kind and source."""
        return hashlib.sha256(f"{self.kind}\0{self.source}".encode()).hexdigest()


def _bad(message: str, hint: str | None = None) -> TrgcError:
    return TrgcError("E_VLLM_REQUEST", message, hint=hint or 'e.g. {"trgc": {"schema": {...}}}')


def parse_request(args: Any) -> RequestSpec | None:
    """The `RequestSpec` of a request's trgc arguments; None when the request has none."""
    if args is None:
        return None
    if not isinstance(args, dict):
        raise _bad(f"the trgc arguments must be an object, got {type(args).__name__}")
    unknown = sorted(set(args) - set(KINDS) - set(OPTIONS))
    if unknown:
        raise _bad(f"unknown trgc argument {unknown[0]!r} (known: {', '.join(KINDS + OPTIONS)})")
    kinds = [k for k in KINDS if k in args]
    if len(kinds) != 1:
        raise _bad(f"expected exactly one of {', '.join(KINDS)}, got {len(kinds)}")
    kind = kinds[0]
    value = args[kind]
    if kind == "schema":
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError as exc:
                raise _bad(f"the schema is not JSON text: {exc}") from None
        if not isinstance(value, dict | bool):
            raise _bad(f"schema: expected a JSON object or text, got {type(value).__name__}")
        # member order is kept: trj-1 emits properties in their declared order
        source = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    elif not isinstance(value, str) or not value:
        raise _bad(f"{kind}: expected a non-empty string, got {type(value).__name__}")
    else:
        source = value
    audit = args.get("audit")
    if audit is not None and (not isinstance(audit, str) or not audit):
        raise _bad(f"audit: expected a file path, got {audit!r}")
    return RequestSpec(kind, source, Path(audit) if audit else None)


def artifact_dir() -> Path:
    """Where compiled request constraints are published: `<cache_dir>/artifacts`."""
    return cache_dir() / "artifacts"


def artifact_path(identity: str) -> Path:
    """The cached file of an artifact identity (`sha256:<hex>`)."""
    match = _IDENTITY.fullmatch(identity)
    if match is None:
        raise _bad(f"artifact: {identity!r} is not a sha256:<64 hex digits> identity")
    return artifact_dir() / f"{match.group(1)}.trga"


def _build(spec: RequestSpec) -> Artifact:
    if spec.kind == "schema":
        from trgc.compiler.schema import compile_schema

        return compile_schema(spec.source)
    if spec.kind == "grammar":
        from trgc.compiler.build import compile_grammar

        return compile_grammar(spec.source)
    from trgc.artifact.codec import load_artifact

    if spec.source.startswith("sha256:"):
        path = artifact_path(spec.source)
        if not path.is_file():
            raise _bad(
                f"artifact {spec.source} is not in the artifact cache ({artifact_dir()})",
                hint="pass its path, or compile it once in this cache directory",
            )
        return load_artifact(path, expect=spec.source)
    return load_artifact(spec.source)


class ConstraintCache:
    """Compiled constraints by request key (an LRU of `MEMO_ENTRIES`), thread-safe."""

    def __init__(self, entries: int = MEMO_ENTRIES) -> None:
        self._entries: OrderedDict[str, Artifact] = OrderedDict()
        self._size = entries
        self._lock = threading.Lock()

    def artifact(self, spec: RequestSpec) -> Artifact:
        """The artifact of `spec`, compiled (and published to `artifact_dir()`) on first use."""
        with self._lock:
            found = self._entries.get(spec.key)
            if found is not None:
                self._entries.move_to_end(spec.key)
                return found
        artifact = _build(spec)
        publish(artifact)
        with self._lock:
            self._entries[spec.key] = artifact
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return artifact


def publish(artifact: Artifact) -> Path:
    """Save `artifact` as `artifact_path(identity)` unless it is there already."""
    path = artifact_path(artifact.sha256)
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        artifact.save(path)
    return path
