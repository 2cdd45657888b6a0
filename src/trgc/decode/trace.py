"""The trace format trgc-trace-1 (docs/trace-format.md): a JSONL header, step lines, an end line.

Every line is canonical JSON (sorted keys, no whitespace, no escapes a canonical writer would not
use, `\n`-terminated), and reading requires exactly that: a line that parses but is not its own
canonical form (CRLF, spaces, unsorted or repeated keys) is `E_TRACE_FORMAT`, as are an unknown
protocol, a missing or unknown field, a value of the wrong type or out of its range, and a line
nested deeper than the format ever nests, each with its line number; a trace that stops before
its end line is `E_TRACE_TRUNCATED`. `parse_trace` is the one validation `replay` and `trace
stats` share. Traces hold hashes, ids and counters, never prompt text; the only output bytes are
the raw partial bytes of a cancellation record.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath

from trgc.atomic import atomic_write, read_bytes
from trgc.decode.rng import ALGORITHM
from trgc.decode.sampler import FAILURE_CODES, STOP_CANCELLED, STOP_REASONS, SamplerSettings
from trgc.decode.sidecar import FORMAT as SIDECAR_FORMAT
from trgc.errors import Span, TrgcError
from trgc.jsonread import read_json
from trgc.limits import file_cap

PROTOCOL = "trgc-trace-1"
# A trace is read whole; this ceiling (about a million steps) keeps that bounded.
MAX_TRACE_BYTES = file_cap("trace")
# header.composition.tools[i] and header.composition.model are the deepest values of the
# format: four levels (header, composition, the list, a tool)
MAX_LINE_DEPTH = 4
INT_LIMIT = 1 << 63  # every counter and id fits a signed 64-bit integer
SEED_LIMIT = 1 << 64
COMPLETED_STOPS = ("eos", "eos_forced")


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < INT_LIMIT


def _positive_int(v) -> bool:
    return _int(v) and v >= 1


def _u64(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < SEED_LIMIT


def _opt_int(v) -> bool:
    return v is None or _int(v)


def _str(v) -> bool:
    return isinstance(v, str)


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


def _sha256_id(v) -> bool:
    return isinstance(v, str) and v.startswith("sha256:") and _hex64(v[7:])


def _one_of(*values: object) -> Callable:
    def check(v) -> bool:
        return any(v == allowed and type(v) is type(allowed) for allowed in values)

    return check


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


def _sorted_ids(v) -> bool:
    return isinstance(v, list) and all(_int(x) for x in v) and v == sorted(set(v))


def _opt_hex(v) -> bool:
    return v is None or (
        isinstance(v, str) and len(v) % 2 == 0 and all(c in "0123456789abcdef" for c in v)
    )


def _sampler(v) -> bool:
    try:
        SamplerSettings.from_dict(v)
    except TrgcError:
        return False
    return True


_RANDOM = re.compile(r"random:[0-9]+", re.ASCII)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _logits(v) -> bool:
    """Where the logits came from: `random:SEED` (seed < 2**64, replay regenerates it), or any
    other description without control characters (`npy:sha256:<hex>`, `model:...`, `callback`
    or a library caller's own), which replay shows as informative."""
    if not isinstance(v, str) or not v or _CONTROL.search(v):
        return False
    if v.startswith("random:"):
        return _RANDOM.fullmatch(v) is not None and int(v[7:]) < SEED_LIMIT
    return True


def _opt_sha256_id(v) -> bool:
    return v is None or _sha256_id(v)


def _model(v) -> bool:
    return v is None or (
        isinstance(v, dict)
        and sorted(v) == sorted(MODEL_FIELDS)
        and all(MODEL_FIELDS[k](v[k]) for k in MODEL_FIELDS)
    )


def _tool_list(v) -> bool:
    return isinstance(v, list) and all(
        isinstance(t, dict)
        and sorted(t) == sorted(TOOL_FIELDS)
        and all(TOOL_FIELDS[k](t[k]) for k in TOOL_FIELDS)
        for t in v
    )


# What else took part in the run (docs/trace-format.md "Composition"): the model's weights, the
# prompt policy (chat template and system prompt) and every registered tool's implementation.
MODEL_FIELDS: dict[str, Callable] = {"name": _str, "weights_sha256": _sha256_id}
TOOL_FIELDS: dict[str, Callable] = {
    "tool": _str,
    "implementation": _str,
    "implementation_hash": _sha256_id,
}
COMPOSITION_FIELDS: dict[str, Callable] = {
    "model": _model,
    "prompt_policy_sha256": _opt_sha256_id,
    "tools": _tool_list,
}
# Microseconds spent before the first step (null when that phase did not happen). Measurements
# of one run, like MEASURED_STEP_FIELDS: recorded, never replayed or compared.
TIMING_FIELDS: dict[str, Callable] = {
    "artifact_load_us": _opt_int,
    "tokenizer_load_us": _opt_int,
    "model_load_us": _opt_int,
    "bind_us": _opt_int,
}
# A spec maps each field to a validator or to the spec of a nested object: adding a header field
# is one line here (and one in docs/trace-format.md).
Spec = dict[str, "Callable | Spec"]
HEADER_FIELDS: Spec = {
    "type": _one_of("header"),
    "protocol": _one_of(PROTOCOL),
    "trgc_version": _str,
    "compiler": _str,
    "artifact": {"sha256": _sha256_id, "path": _opt_relative_path},
    "tokenizer": {
        "sha256": _sha256_id,
        "path": _opt_relative_path,
        "vocab_size": _positive_int,
        "eos_ids": _sorted_ids,
    },
    "sampler": _sampler,
    "max_tokens": _positive_int,
    "rng": {"algorithm": _one_of(ALGORITHM), "seed": _u64},
    "logits": _logits,
    "sidecar": {"file": _file_name, "format": _one_of(SIDECAR_FORMAT)},
    "composition": COMPOSITION_FIELDS,
    "timings": TIMING_FIELDS,
}
STEP_FIELDS: Spec = {
    "type": _one_of("step"),
    "step": _int,
    "allowed": _int,
    "mask_sha256": _hex64,
    "config": _str,
    "token": _opt_int,
    "stop": _one_of(None, *STOP_REASONS),
    "draw": _opt_int,
    "rank": _opt_int,
    "candidates": _int,
    "nan": _int,
    "intervention": _opt_float,
    "cache_hit": _opt_bool,
    "mask_us": _int,
    "sample_us": _int,
}
END_FIELDS: Spec = {
    "type": _one_of("end"),
    "stop": _one_of(*STOP_REASONS),
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
    "failure_code": _one_of(None, *FAILURE_CODES.values()),
    "partial_hex": _opt_hex,
    "rng_draws": _int,
    "sidecar_sha256": _hex64,
}
# Step fields that are measurements of one run, not consequences of the inputs: not replayed.
MEASURED_STEP_FIELDS = ("cache_hit", "mask_us", "sample_us")
# Header fields that are measurements (TIMING_FIELDS): replay and comparisons ignore them.
MEASURED_HEADER_FIELDS = ("timings",)
# What replay does with each provenance field of the header (docs/trace-format.md): "bound"
# fields must match what replay recomputes, "informative" ones are shown, never compared.
PROVENANCE: dict[str, str] = {
    "trgc_version": "informative: the trgc that wrote the trace; any later trgc replays it",
    "compiler": "bound: must equal the compiler version recorded in the artifact replayed against",
    "logits": "bound for random:SEED (replay regenerates the stand-in's logits and compares them "
    "with the sidecar's); informative otherwise (the sidecar holds the logits replay uses)",
}


def canonical_line(record: dict) -> str:
    return json.dumps(
        record, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def _format_error(message: str, line: int, source: str | None, column: int = 1) -> TrgcError:
    return TrgcError("E_TRACE_FORMAT", message, span=Span(line=line, column=column), source=source)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _check_fields(record: dict, spec: Spec, line: int, where: str, source: str | None) -> None:
    """Exactly the fields of `spec`, each valid; nested specs are checked the same way."""
    if not isinstance(record, dict):
        raise _format_error(f"{where} must be an object, got {_shown(record)}", line, source)
    unknown = sorted(set(record) - set(spec))
    missing = sorted(set(spec) - set(record))
    if unknown or missing:
        parts = ([f"unknown field(s) {_shown(unknown)}"] if unknown else []) + (
            [f"missing field(s) {missing}"] if missing else []
        )
        raise _format_error(f"{where}: {'; '.join(parts)}", line, source)
    for name in sorted(spec):
        check = spec[name]
        if isinstance(check, dict):
            _check_fields(record[name], check, line, f"{where}.{name}", source)
        elif not check(record[name]):
            raise _format_error(
                f"{where}: field {name!r} has an invalid value {_shown(record[name])}", line, source
            )


def validate_header(record: dict, line: int = 1, source: str | None = None) -> None:
    if record.get("type") != "header":
        raise _format_error(
            f"the first line must be the header, got type {_shown(record.get('type'))}",
            line,
            source,
        )
    if record.get("protocol") != PROTOCOL:
        raise _format_error(
            f"unknown trace protocol {_shown(record.get('protocol'))} (this trgc reads {PROTOCOL})",
            line,
            source,
        )
    _check_fields(record, HEADER_FIELDS, line, "header", source)
    tokenizer = record["tokenizer"]
    if any(i >= tokenizer["vocab_size"] for i in tokenizer["eos_ids"]):
        raise _format_error("header.tokenizer: an EOS id is not below vocab_size", line, source)


def validate_end(end: dict, steps: int, line: int, source: str | None = None) -> None:
    """The end line's fields and what its stop reason implies (the same rules generation
    follows), so that aggregates never count a line replay would refuse."""
    _check_fields(end, END_FIELDS, line, "end line", source)
    stop = end["stop"]
    implied = {
        "steps": steps,
        "completed": stop in COMPLETED_STOPS,
        "failure_code": FAILURE_CODES.get(stop),
    }
    for name, value in implied.items():
        if end[name] != value:
            raise _format_error(
                f"end line: {name} is {_shown(end[name])}, but stop {stop!r} after {steps} step "
                f"lines means {value!r}",
                line,
                source,
            )
    if (end["partial_hex"] is None) == (stop == STOP_CANCELLED):
        raise _format_error(
            "end line: partial_hex is recorded exactly when stop is 'cancelled'", line, source
        )


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
            record = read_json(
                line,
                code="E_TRACE_FORMAT",
                what=f"line {number}",
                max_bytes=MAX_TRACE_BYTES,
                max_depth=MAX_LINE_DEPTH,
            )
        except TrgcError as error:
            if number == len(lines) and not complete and error.code == "E_TRACE_FORMAT":
                raise TrgcError(
                    "E_TRACE_TRUNCATED",
                    f"trace ends inside line {number} ({error.message})",
                    span=Span(line=number, column=1),
                    source=source,
                ) from None
            column = error.span.column if error.span is not None else 1
            raise _format_error(error.message, number, source, column or 1) from None
        if not isinstance(record, dict) or not isinstance(record.get("type"), str):
            raise _format_error(
                f"line {number} is not a JSON object with a string 'type'", number, source
            )
        if canonical_line(record) != line:
            raise _format_error(
                f"line {number} is not canonical JSON (sorted keys, no whitespace, no repeated "
                "keys, no unneeded escapes, LF line ends)",
                number,
                source,
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
            raise _format_error(f"line {number} follows the end line", number, source)
        if kind == "step":
            _check_fields(record, STEP_FIELDS, number, f"step line {number}", source)
            if record["step"] != len(steps):
                raise _format_error(
                    f"line {number}: expected step {len(steps)}, got step {record['step']}",
                    number,
                    source,
                )
            steps.append(record)
        elif kind == "end":
            validate_end(record, len(steps), number, source)
            end = record
        else:
            raise _format_error(f"line {number}: unknown line type {_shown(kind)}", number, source)
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
    validate_end(trace.end, len(trace.steps), len(trace.steps) + 2, str(path))
    validate_header(trace.header, 1, str(path))
    atomic_write(path, trace.to_bytes())
