"""The trace format trgc-trace-1 (docs/trace-format.md): a JSONL header, step lines, an end line.

Every line is canonical JSON (sorted keys, no whitespace). Reading is strict: an unknown
protocol, a missing or unknown field, or a value of the wrong type is `E_TRACE_FORMAT` with
the line number; a trace that stops before its end line is `E_TRACE_TRUNCATED`. Traces hold
hashes, ids and counters, never prompt text; the only output bytes are the raw partial bytes
of a cancellation record.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath

from trgc.atomic import atomic_write, read_bytes
from trgc.errors import Span, TrgcError
from trgc.limits import file_cap

PROTOCOL = "trgc-trace-1"
# A trace is read whole; this ceiling (about a million steps) keeps that bounded.
MAX_TRACE_BYTES = file_cap("trace")


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _opt_int(v) -> bool:
    return v is None or _int(v)


def _str(v) -> bool:
    return isinstance(v, str)


def _opt_str(v) -> bool:
    return v is None or isinstance(v, str)


def _bool(v) -> bool:
    return isinstance(v, bool)


def _opt_bool(v) -> bool:
    return v is None or isinstance(v, bool)


def _opt_float(v) -> bool:
    return v is None or (
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    )


def _hex64(v) -> bool:
    return isinstance(v, str) and len(v) == 64 and all(c in "0123456789abcdef" for c in v)


def _file_name(v) -> bool:
    """A plain file name: the sidecar lives in the trace's own directory, nowhere else."""
    return isinstance(v, str) and v not in ("", ".", "..") and not any(c in v for c in "/\\\0")


def _opt_relative_path(v) -> bool:
    """Null or a relative path (artifact and tokenizer paths are relative to the trace)."""
    return v is None or (
        isinstance(v, str)
        and v != ""
        and "\0" not in v
        and not v.startswith(("/", "\\"))
        and not PureWindowsPath(v).drive
    )


def _dict(v) -> bool:
    return isinstance(v, dict)


def _int_list(v) -> bool:
    return isinstance(v, list) and all(_int(x) for x in v)


def _opt_hex(v) -> bool:
    return v is None or (
        isinstance(v, str) and len(v) % 2 == 0 and all(c in "0123456789abcdef" for c in v)
    )


HEADER_FIELDS: dict[str, Callable] = {
    "type": _str,
    "protocol": _str,
    "trgc_version": _str,
    "compiler": _str,
    "artifact": _dict,
    "tokenizer": _dict,
    "sampler": _dict,
    "max_tokens": _int,
    "rng": _dict,
    "logits": _str,
    "sidecar": _dict,
}
ARTIFACT_FIELDS: dict[str, Callable] = {"sha256": _str, "path": _opt_relative_path}
TOKENIZER_FIELDS: dict[str, Callable] = {
    "sha256": _str,
    "path": _opt_relative_path,
    "vocab_size": _int,
    "eos_ids": _int_list,
}
RNG_FIELDS: dict[str, Callable] = {"algorithm": _str, "seed": _int}
SIDECAR_FIELDS: dict[str, Callable] = {"file": _file_name, "format": _str}
STEP_FIELDS: dict[str, Callable] = {
    "type": _str,
    "step": _int,
    "allowed": _int,
    "mask_sha256": _hex64,
    "config": _str,
    "token": _opt_int,
    "stop": _opt_str,
    "draw": _opt_int,
    "rank": _opt_int,
    "candidates": _int,
    "nan": _int,
    "intervention": _opt_float,
    "cache_hit": _opt_bool,
    "mask_us": _int,
    "sample_us": _int,
}
END_FIELDS: dict[str, Callable] = {
    "type": _str,
    "stop": _str,
    "completed": _bool,
    "accepting": _bool,
    "config": _str,
    "steps": _int,
    "tokens": _int,
    "output_bytes": _int,
    "output_sha256": _hex64,
    "nan": _int,
    "intervention": _opt_float,
    "intervention_steps": _int,
    "failure_code": _opt_str,
    "partial_hex": _opt_hex,
    "rng_draws": _int,
    "sidecar_sha256": _hex64,
}
# Step fields that are measurements of one run, not consequences of the inputs: not replayed.
MEASURED_STEP_FIELDS = ("cache_hit", "mask_us", "sample_us")


def canonical_line(record: dict) -> str:
    return json.dumps(
        record, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def _check_fields(
    record: dict, spec: dict[str, Callable], line: int, where: str, source: str | None
) -> None:
    unknown = sorted(set(record) - set(spec))
    missing = sorted(set(spec) - set(record))
    if unknown or missing:
        parts = ([f"unknown field(s) {unknown}"] if unknown else []) + (
            [f"missing field(s) {missing}"] if missing else []
        )
        raise TrgcError(
            "E_TRACE_FORMAT",
            f"{where}: {'; '.join(parts)}",
            span=Span(line=line, column=1),
            source=source,
        )
    for name in sorted(spec):
        if not spec[name](record[name]):
            raise TrgcError(
                "E_TRACE_FORMAT",
                f"{where}: field {name!r} has an invalid value {record[name]!r}",
                span=Span(line=line, column=1),
                source=source,
            )


def validate_header(record: dict, line: int = 1, source: str | None = None) -> None:
    _check_fields(record, HEADER_FIELDS, line, "header", source)
    if record["type"] != "header":
        raise TrgcError(
            "E_TRACE_FORMAT",
            f"the first line must be the header, got type {record['type']!r}",
            span=Span(line=line, column=1),
            source=source,
        )
    if record["protocol"] != PROTOCOL:
        raise TrgcError(
            "E_TRACE_FORMAT",
            f"unknown trace protocol {record['protocol']!r} (this trgc reads {PROTOCOL})",
            span=Span(line=line, column=1),
            source=source,
        )
    for key, spec in (
        ("artifact", ARTIFACT_FIELDS),
        ("tokenizer", TOKENIZER_FIELDS),
        ("rng", RNG_FIELDS),
        ("sidecar", SIDECAR_FIELDS),
    ):
        _check_fields(record[key], spec, line, f"header.{key}", source)


@dataclass
class Trace:
    """A parsed trace: the header, the step records in order, and the end record."""

    header: dict
    steps: list[dict]
    end: dict
    path: Path | None = None

    def lines(self) -> list[str]:
        return [canonical_line(r) for r in (self.header, *self.steps, self.end)]

    def to_bytes(self) -> bytes:
        return ("\n".join(self.lines()) + "\n").encode("utf-8")


def parse_trace(data: bytes, source: str | None = None) -> Trace:
    """Parse and strictly validate trace bytes."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TrgcError(
            "E_TRACE_FORMAT", f"trace is not UTF-8 (byte {exc.start})", source=source
        ) from None
    lines = text.split("\n")
    complete = text.endswith("\n")
    if complete:
        lines.pop()
    records: list[dict] = []
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line, parse_constant=_refuse_constant)
        except (json.JSONDecodeError, ValueError) as exc:
            if number == len(lines) and not complete:
                raise TrgcError(
                    "E_TRACE_TRUNCATED",
                    f"trace ends inside line {number} ({exc})",
                    span=Span(line=number, column=1),
                    source=source,
                ) from None
            raise TrgcError(
                "E_TRACE_FORMAT",
                f"line {number} is not JSON: {exc}",
                span=Span(line=number, column=1),
                source=source,
            ) from None
        if not isinstance(record, dict) or not isinstance(record.get("type"), str):
            raise TrgcError(
                "E_TRACE_FORMAT",
                f"line {number} is not a JSON object with a string 'type'",
                span=Span(line=number, column=1),
                source=source,
            )
        records.append(record)
    if not records:
        raise TrgcError("E_TRACE_TRUNCATED", "trace is empty", source=source)
    validate_header(records[0], 1, source)
    steps: list[dict] = []
    end: dict | None = None
    for number, record in enumerate(records[1:], start=2):
        kind = record["type"]
        if end is not None:
            raise TrgcError(
                "E_TRACE_FORMAT",
                f"line {number} follows the end line",
                span=Span(line=number, column=1),
                source=source,
            )
        if kind == "step":
            _check_fields(record, STEP_FIELDS, number, f"step line {number}", source)
            if record["step"] != len(steps):
                raise TrgcError(
                    "E_TRACE_FORMAT",
                    f"line {number}: expected step {len(steps)}, got step {record['step']}",
                    span=Span(line=number, column=1),
                    source=source,
                )
            steps.append(record)
        elif kind == "end":
            _check_fields(record, END_FIELDS, number, "end line", source)
            end = record
        else:
            raise TrgcError(
                "E_TRACE_FORMAT",
                f"line {number}: unknown line type {kind!r}",
                span=Span(line=number, column=1),
                source=source,
            )
    if end is None or not complete:
        last = f"step {len(steps) - 1}" if steps else "the header"
        raise TrgcError(
            "E_TRACE_TRUNCATED",
            f"trace ends after {last} without its end line",
            span=Span(line=len(records), column=1),
            source=source,
            details={"steps": len(steps)},
        )
    return Trace(header=records[0], steps=steps, end=end)


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not allowed in a trace")


def read_trace(path: Path | str) -> Trace:
    data = read_bytes(
        path, MAX_TRACE_BYTES, what="the trace", hint="no trace trgc writes is that large"
    )
    trace = parse_trace(data, source=str(path))
    trace.path = Path(path)
    return trace


def write_trace(path: Path | str, trace: Trace) -> None:
    """Publish a trace atomically (canonical lines, one per record, newline-terminated)."""
    for number, record in enumerate(trace.steps):
        _check_fields(record, STEP_FIELDS, number + 2, "step", str(path))
    _check_fields(trace.end, END_FIELDS, len(trace.steps) + 2, "end line", str(path))
    validate_header(trace.header, 1, str(path))
    atomic_write(path, trace.to_bytes())
