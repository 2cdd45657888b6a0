"""Audit records of constrained requests in a serving engine, and their independent check.

A serving engine samples with its own sampler, so a constrained request cannot be replayed bit
for bit the way `trgc generate` traces are. What can be proven afterwards is the constraint's
part: at every step the emitted token was in the mask trgc computed for that step. The record
(JSON Lines, `RECORD` below, documented in docs/integrations.md) holds, per step, the token and
the SHA-256 of the packed mask; `check_audit` recomputes every mask with a fresh `Matcher` over
the same artifact and token table (found by identity in the cache directory, or given) and
reports the first step where a mask or a token disagrees. The record holds token ids only,
never text.

The writer keeps the steps in memory and publishes the whole record atomically when the request
leaves the batch, so a reader never sees a partial record.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from trgc.atomic import atomic_write, read_bytes
from trgc.errors import TrgcError

RECORD = "trgc-audit-1"
HEADER_FIELDS = ("record", "artifact", "tokenizer", "constraint", "engine")
STEP_FIELDS = ("step", "token", "mask", "allowed")
FINAL_FIELDS = ("final", "steps", "reason", "accepting", "terminated")
REASONS = ("finished", "violation")
MAX_RECORD_BYTES = 256 * 1024 * 1024


def mask_hash(words: np.ndarray) -> str:
    """`sha256:` of a packed mask's little-endian int32 words (the tokenizer's width)."""
    return (
        "sha256:" + hashlib.sha256(np.ascontiguousarray(words, dtype="<i4").tobytes()).hexdigest()
    )


class AuditWriter:
    """The audit record of one request, written to `path` by `close`."""

    def __init__(
        self, path: Path, *, artifact: str, tokenizer: str, constraint: str, engine: str
    ) -> None:
        self.path = Path(path)
        self.header = {
            "record": RECORD,
            "artifact": artifact,
            "tokenizer": tokenizer,
            "constraint": constraint,
            "engine": engine,
        }
        self.steps: list[dict] = []

    def step(self, token: int, mask: str, allowed: bool) -> None:
        self.steps.append(
            {"step": len(self.steps), "token": int(token), "mask": mask, "allowed": allowed}
        )

    def close(self, *, accepting: bool, terminated: bool) -> None:
        """Publish the record; the reason is `violation` if any step was not allowed."""
        violated = any(not s["allowed"] for s in self.steps)
        final = {
            "final": True,
            "steps": len(self.steps),
            "reason": "violation" if violated else "finished",
            "accepting": accepting,
            "terminated": terminated,
        }
        lines = [self.header, *self.steps, final]
        text = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, text.encode("utf-8"))


@dataclass
class AuditRecord:
    header: dict
    steps: list[dict]
    final: dict

    @property
    def tokens(self) -> list[int]:
        return [s["token"] for s in self.steps]


def _fail(message: str, path: str, line: int | None = None) -> TrgcError:
    from trgc.errors import Span

    return TrgcError("E_AUDIT_RECORD", message, source=path, span=Span(line, 1) if line else None)


def _fields(line: dict, expected: tuple[str, ...], path: str, number: int) -> None:
    keys = set(line)
    if keys != set(expected):
        extra = sorted(keys - set(expected))
        missing = sorted(set(expected) - keys)
        what = f"unknown field {extra[0]!r}" if extra else f"missing field {missing[0]!r}"
        raise _fail(what, path, number)


def read_audit(path: str | Path) -> AuditRecord:
    """Parse and validate the shape of an audit record (`E_AUDIT_RECORD` with the line)."""
    source = str(path)
    lines = read_bytes(path, MAX_RECORD_BYTES).decode("utf-8", errors="strict").splitlines()
    parsed: list[dict] = []
    for number, text in enumerate(lines, start=1):
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise _fail(f"not a JSON line: {exc}", source, number) from None
        if not isinstance(value, dict):
            raise _fail("expected a JSON object", source, number)
        parsed.append(value)
    if not parsed:
        raise _fail("empty record", source)
    header, *body = parsed
    _fields(header, HEADER_FIELDS, source, 1)
    if header["record"] != RECORD:
        raise _fail(f"record {header['record']!r}, expected {RECORD!r}", source, 1)
    if not body or "final" not in body[-1]:
        raise _fail("the record has no final line", source, len(parsed))
    final = body.pop()
    _fields(final, FINAL_FIELDS, source, len(parsed))
    for k, step in enumerate(body):
        _fields(step, STEP_FIELDS, source, k + 2)
        token = step["token"]
        if step["step"] != k or type(token) is not int or token < 0:
            raise _fail(f"expected step {k} with a token id", source, k + 2)
    if final["steps"] != len(body) or final["reason"] not in REASONS:
        raise _fail("the final line does not match the steps", source, len(parsed))
    return AuditRecord(header, body, final)


@dataclass
class AuditReport:
    """The outcome of `check_audit`: `ok`, the steps checked, the first problem found."""

    path: str
    steps: int = 0
    ok: bool = True
    problems: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"path": self.path, "ok": self.ok, "steps": self.steps, "problems": self.problems}


def check_audit(
    path: str | Path,
    *,
    artifact: Any = None,
    tokenizer: Any = None,
    tokens: list[int] | None = None,
) -> AuditReport:
    """Recompute every mask of the record at `path` and check each token against it.

    `artifact` and `tokenizer` default to the record's identities in the cache directory
    (`<cache_dir>/artifacts/<hex>.trga`, `<cache_dir>/tokenizers/sha256-<hex>.trt`); given, they
    must have those identities. `tokens`, if given, must equal the record's tokens (e.g. the
    engine's output token ids), so a record is tied to the output it claims to cover."""
    from trgc.engine.inputs import as_artifact, as_token_table
    from trgc.engine.matcher import Matcher
    from trgc.integrations.constraints import artifact_path

    record = read_audit(path)
    header = record.header
    art = as_artifact(artifact if artifact is not None else artifact_path(header["artifact"]))
    table = as_token_table(tokenizer if tokenizer is not None else table_path(header["tokenizer"]))
    for what, have, want in (
        ("artifact", art.sha256, header["artifact"]),
        ("tokenizer", str(table.sha256), header["tokenizer"]),
    ):
        if have != want:
            raise TrgcError(
                "E_COMPOSITION_MISMATCH",
                f"the record's {what} is {want}, the one given is {have}",
                source=str(path),
            )
    report = AuditReport(str(path), steps=len(record.steps))
    problems = report.problems
    if tokens is not None and [int(t) for t in tokens] != record.tokens:
        problems.append({"step": None, "problem": "the record's tokens are not the given output"})
    matcher = Matcher(art, table)
    for step in record.steps:
        token = step["token"]
        if matcher.is_terminated():
            problems.append({"step": step["step"], "problem": "token after the end of the match"})
            break
        if mask_hash(matcher.allowed_tokens_packed()) != step["mask"]:
            problems.append({"step": step["step"], "problem": "the recorded mask differs"})
        if not step["allowed"] or not matcher.is_allowed(token):
            problems.append({"step": step["step"], "problem": f"token {token} was not allowed"})
            break
        matcher.advance(token)
    final = record.final
    if not problems and (
        final["accepting"] != matcher.is_accepting()
        or final["terminated"] != matcher.is_terminated()
    ):
        problems.append({"step": None, "problem": "the final state differs from the record's"})
    report.ok = not problems
    return report


def table_path(identity: str) -> Path:
    """The cached token table of an identity: `<cache_dir>/tokenizers/sha256-<hex>.trt`."""
    from trgc.integrations.smollm2 import cache_dir

    if not identity.startswith("sha256:") or len(identity) != 71:
        raise TrgcError("E_AUDIT_RECORD", f"{identity!r} is not a sha256:<hex> identity")
    return cache_dir() / "tokenizers" / f"sha256-{identity[7:]}.trt"
