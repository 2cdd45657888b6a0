"""Evidence validation for extraction results: the report's syntax-to-semantics boundary.

An extraction result holds, per field, a status (supported | unknown | unsupported |
conflict), a value, evidence spans (byte ranges of source documents named by the SHA-256 of
their bytes, with the SHA-256 of the quoted bytes and one listed transform), a unit and a
validation block. `check_evidence` re-derives everything it can from the sources (and, given
the application schema, the validation flags: `trgc.tools.evidence_schema`) and reports
every failed check per field. It never changes the result: failures are reported,
not repaired. Malformed documents raise the evidence error codes (exit 2); failed checks are findings
(exit 1). See docs/evidence.md for the rules and the finding codes.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal
from pathlib import Path

from trgc.errors import TrgcError
from trgc.jsonread import read_json
from trgc.limits import DEFAULT_LIMITS, file_cap
from trgc.tools import strictjson
from trgc.tools.evidence_schema import FLAGS, AppSchema, recompute
from trgc.tools.strictjson import (
    ANY,
    ARRAY,
    INTEGER,
    NULLABLE_BOOLEAN,
    NULLABLE_STRING,
    OBJECT,
    STRING,
    pointer,
)

PROTOCOL = "trgc-evidence-check-1"
MAX_RESULT_BYTES = DEFAULT_LIMITS.input_bytes
MAX_SOURCE_BYTES = file_cap("evidence source")
MAX_RESULT_DEPTH = 32
STATUSES = ("supported", "unknown", "unsupported", "conflict")
TRANSFORMS = ("exact", "trim", "casefold", "parse_integer", "parse_decimal")
ASCII_WHITESPACE = " \t\n\v\f\r"
CODES = strictjson.Codes(
    json="E_EVIDENCE_JSON",
    unknown_field="E_EVIDENCE_UNKNOWN_FIELD",
    missing_field="E_EVIDENCE_MISSING_FIELD",
    type="E_EVIDENCE_TYPE",
)
FIELD_SPEC: dict = {
    "status": STRING,
    "value": ANY,
    "evidence": ARRAY,
    "unit": NULLABLE_STRING,
    "validation": {
        "enum_member": NULLABLE_BOOLEAN,
        "range_ok": NULLABLE_BOOLEAN,
        "cross_field_ok": NULLABLE_BOOLEAN,
    },
}
SPAN_SPEC: dict = {
    "source_id": STRING,
    "start_byte": INTEGER,
    "end_byte": INTEGER,
    "quoted_sha256": STRING,
    "transform": STRING,
}
_SOURCE_ID_RE = re.compile(r"sha256:[0-9a-f]{64}")
_HEX_RE = re.compile(r"[0-9a-f]{64}")
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_INTEGER_RE = re.compile(r"[+-]?[0-9]+")
_DECIMAL_RE = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?")
_MAX_NUMBER_DIGITS = 4000


class _Untransformable(Exception):
    """The quoted text is not in the transform's input language."""


def parse_source_option(text: str) -> tuple[str, Path]:
    """Split one `--source NAME=PATH`; NAME is a label, evidence names sources by content hash."""
    name, sep, path = text.partition("=")
    if not sep or _NAME_RE.fullmatch(name) is None or not path:
        raise TrgcError(
            "E_EVIDENCE_SOURCE",
            f"--source expects NAME=PATH with NAME of [A-Za-z0-9._-], got {text[:120]!r}",
        )
    return name, Path(path)


def source_id(data: bytes) -> str:
    return "sha256:" + strictjson.sha256_hex(data)


def apply_transform(transform: str, quoted: bytes) -> object:
    """The value `transform` derives from the quoted bytes (str, int or Decimal)."""
    try:
        text = quoted.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Untransformable(
            f"the quoted bytes are not UTF-8 (byte {exc.start} of the span)"
        ) from None
    if transform == "exact":
        return text
    if transform == "trim":
        return text.strip(ASCII_WHITESPACE)
    if transform == "casefold":
        return text.casefold()
    regex = _INTEGER_RE if transform == "parse_integer" else _DECIMAL_RE
    if regex.fullmatch(text) is None or len(text) > _MAX_NUMBER_DIGITS:
        kind = "an integer" if transform == "parse_integer" else "a decimal"
        raise _Untransformable(f"the quoted text {text[:60]!r} is not {kind} numeral")
    return int(text) if transform == "parse_integer" else Decimal(text)


def _same(transform: str, derived: object, value: object) -> bool:
    """Whether `value` (from the result JSON) equals the derived value, type included."""
    if transform in ("exact", "trim", "casefold"):
        return isinstance(value, str) and value == derived
    if transform == "parse_integer":
        return isinstance(value, int) and not isinstance(value, bool) and value == derived
    if isinstance(value, str):
        if _DECIMAL_RE.fullmatch(value) is None or len(value) > _MAX_NUMBER_DIGITS:
            return False
        value = Decimal(value)
    return isinstance(value, int | Decimal) and not isinstance(value, bool) and value == derived


def _jsonable(value: object) -> object:
    return str(value) if isinstance(value, Decimal) else value


def _check_shape(document: object) -> dict:
    strictjson.check_object(document, {"fields": OBJECT}, CODES, "")
    fields = document["fields"]  # type: ignore[index]
    for name in sorted(fields):
        at = pointer("fields", name)
        field = strictjson.check_object(fields[name], FIELD_SPEC, CODES, at)
        if field["status"] not in STATUSES:
            raise TrgcError(
                "E_EVIDENCE_VALUE",
                f"status {field['status'][:40]!r} is not one of {', '.join(STATUSES)}",
                pointer=at + "/status",
            )
        for index, span in enumerate(field["evidence"]):
            where = at + pointer("evidence", index)
            strictjson.check_object(span, SPAN_SPEC, CODES, where)
            if _SOURCE_ID_RE.fullmatch(span["source_id"]) is None:
                raise TrgcError(
                    "E_EVIDENCE_VALUE",
                    "source_id must be sha256:<64 hex>",
                    pointer=where + "/source_id",
                )
            if _HEX_RE.fullmatch(span["quoted_sha256"]) is None:
                raise TrgcError(
                    "E_EVIDENCE_VALUE",
                    "quoted_sha256 must be 64 lowercase hex",
                    pointer=where + "/quoted_sha256",
                )
            if span["transform"] not in TRANSFORMS:
                raise TrgcError(
                    "E_EVIDENCE_VALUE",
                    f"transform {span['transform'][:40]!r} is not one of {', '.join(TRANSFORMS)}",
                    pointer=where + "/transform",
                )
            if not 0 <= span["start_byte"] <= span["end_byte"]:
                raise TrgcError(
                    "E_EVIDENCE_VALUE",
                    f"span [{span['start_byte']}, {span['end_byte']}) needs 0 <= start_byte <= end_byte",
                    pointer=where,
                )
    return fields


class _FieldCheck:
    """The findings for one field, in a fixed order: status rules, then each span."""

    def __init__(
        self,
        name: str,
        field: dict,
        sources: dict[str, tuple[str, bytes]],
        recomputed: tuple[dict, dict] | None = None,
        declared: bool = True,
    ) -> None:
        self.name = name
        self.field = field
        self.sources = sources
        self.recomputed = recomputed  # (flags, reasons) from the application schema, if given
        self.declared = declared
        self.at = pointer("fields", name)
        self.problems: list[dict] = []
        self.spans: list[dict] = []

    def problem(self, check: str, where: str, message: str) -> None:
        self.problems.append({"check": check, "pointer": where, "message": message})

    def span(self, index: int, span: dict, derive: bool) -> object:
        """Verify one span and, if `derive`, apply its transform; None when nothing was derived."""
        where = self.at + pointer("evidence", index)
        record: dict = {
            "index": index,
            "source": None,
            "start_byte": span["start_byte"],
            "end_byte": span["end_byte"],
            "transform": span["transform"],
            "quote_verified": False,
            "derived": None,
        }
        self.spans.append(record)
        known = self.sources.get(span["source_id"])
        if known is None:
            self.problem(
                "unknown_source",
                where + "/source_id",
                f"no --source has content hash {span['source_id']}",
            )
            return None
        record["source"], data = known
        start, end = span["start_byte"], span["end_byte"]
        if end > len(data):
            self.problem(
                "span_out_of_range",
                where + "/end_byte",
                f"end_byte {end:,} is past the end of {record['source']} ({len(data):,} bytes)",
            )
            return None
        if start == end:
            self.problem("empty_span", where, "the span quotes no bytes")
            return None
        quoted = data[start:end]
        actual = strictjson.sha256_hex(quoted)
        if actual != span["quoted_sha256"]:
            self.problem(
                "quoted_sha256_mismatch",
                where + "/quoted_sha256",
                f"the bytes [{start}, {end}) of {record['source']} hash to {actual}",
            )
            return None
        record["quote_verified"] = True
        if not derive:
            return None
        try:
            derived = apply_transform(span["transform"], quoted)
        except _Untransformable as exc:
            self.problem("transform_failed", where + "/transform", str(exc))
            return None
        record["derived"] = _jsonable(derived)
        return derived

    def run(self) -> dict:
        field, at = self.field, self.at
        status, value, evidence = field["status"], field["value"], field["evidence"]
        if status == "supported" and value is None:
            self.problem("missing_value", at + "/value", "a supported field needs a value")
        if status != "supported" and value is not None:
            self.problem("value_not_null", at + "/value", f"status {status!r} requires value null")
        if status == "unknown" and evidence:
            self.problem(
                "unknown_has_evidence",
                at + "/evidence",
                "an unknown value has no evidence in the sources",
            )
        needed = {"supported": 1, "unsupported": 1, "conflict": 2}.get(status, 0)
        if len(evidence) < needed:
            self.problem(
                "missing_evidence",
                at + "/evidence",
                f"status {status!r} needs at least {needed} evidence span(s)",
            )
        # an unsupported value is present but not expressible: its quote need not transform
        derive = status in ("supported", "conflict")
        derived = [self.span(index, span, derive) for index, span in enumerate(evidence)]
        if status == "supported" and value is not None:
            for index, (span, got) in enumerate(zip(evidence, derived, strict=True)):
                if got is not None and not _same(span["transform"], got, value):
                    self.problem(
                        "value_mismatch",
                        at + pointer("evidence", index),
                        f"{span['transform']} of the quote gives {_jsonable(got)!r}, not the value {_jsonable(value)!r}",
                    )
            flags = field["validation"] if self.recomputed is None else self.recomputed[0]
            failed = sorted(k for k, v in flags.items() if v is False)
            if failed:
                self.problem(
                    "validation_failed",
                    at + "/validation",
                    f"a supported field failed {', '.join(failed)}; it cannot be supported",
                )
        if self.recomputed is not None:
            self.check_flags()
        complete = len(evidence) >= 2 and all(d is not None for d in derived)
        # Python equality is exact for str, int and Decimal (12.50 == 12.5 == 12.5 as int/Decimal)
        if status == "conflict" and complete and all(d == derived[0] for d in derived[1:]):
            self.problem(
                "conflict_without_disagreement",
                at + "/evidence",
                "every span derives the same value; the evidence does not conflict",
            )
        return {
            "field": self.name,
            "status": status,
            "unit": field["unit"],
            "ok": not self.problems,
            "problems": self.problems,
            "evidence": self.spans,
            "validation": {
                "claimed": field["validation"],
                "recomputed": None if self.recomputed is None else self.recomputed[0],
            },
        }

    def check_flags(self) -> None:
        """Each claimed flag against the schema's recomputation: a difference is a finding."""
        flags, reasons = self.recomputed  # type: ignore[misc]
        if not self.declared:
            self.problem(
                "undeclared_field",
                self.at,
                f"the application schema declares no field {self.name!r}",
            )
        for flag in FLAGS:
            claimed = self.field["validation"][flag]
            if claimed != flags[flag]:
                self.problem(
                    "validation_mismatch",
                    self.at + pointer("validation", flag),
                    f"claimed {_flag(claimed)}, recomputed {_flag(flags[flag])}: {reasons[flag]}",
                )


def _flag(value: bool | None) -> str:
    return "null" if value is None else str(value).lower()


def check_evidence(
    result: bytes | str,
    sources: dict[str, bytes],
    source: str | None = None,
    schema: AppSchema | None = None,
) -> dict:
    """Check an extraction result against named source documents; return the report.

    With the application `schema`, the validation flags are recomputed and every claimed
    flag that differs is a finding. Raises `TrgcError` only for malformed input or an
    exceeded limit; every failed check is a finding in the report (`ok` false).
    """
    for name, data in sorted(sources.items()):
        if len(data) > MAX_SOURCE_BYTES:
            raise TrgcError(
                "E_LIMIT_INPUT_BYTES",
                f"source {name} has more than {MAX_SOURCE_BYTES:,} bytes",
                source=name,
            )
    data = result.encode("utf-8", "surrogatepass") if isinstance(result, str) else result
    document = read_json(
        data,
        code=CODES.json,
        what="the extraction result",
        max_bytes=MAX_RESULT_BYTES,
        max_depth=MAX_RESULT_DEPTH,
        floats="decimal",
        source=source,
    )
    try:
        fields = _check_shape(document)
    except TrgcError as error:
        error.source = error.source or source
        raise
    by_id: dict[str, tuple[str, bytes]] = {}
    listed = []
    for name, content in sorted(sources.items()):
        identity = source_id(content)
        by_id.setdefault(identity, (name, content))
        listed.append({"name": name, "source_id": identity, "bytes": len(content)})
    flags = None
    schema_doc = None
    if schema is not None:
        values = {
            name: f["value"] if f["status"] == "supported" else None for name, f in fields.items()
        }
        flags = recompute(schema, values)
        missing = sorted(set(schema.fields) - set(fields))
        schema_doc = {
            "sha256": schema.sha256,
            "problems": [
                {
                    "check": "missing_field",
                    "pointer": pointer("fields", name),
                    "message": f"the application schema declares {name!r}; the result has no such field",
                }
                for name in missing
            ],
        }
    checked = [
        _FieldCheck(
            name,
            fields[name],
            by_id,
            None if flags is None else flags[name],
            schema is None or name in schema.fields,
        ).run()
        for name in sorted(fields)
    ]
    schema_ok = schema_doc is None or not schema_doc["problems"]
    return {
        "protocol": PROTOCOL,
        "ok": schema_ok and all(f["ok"] for f in checked),
        "schema": schema_doc,
        "unicode_version": unicodedata.unidata_version,
        "sources": listed,
        "fields": checked,
        "summary": {
            "fields": len(checked),
            "ok": sum(1 for f in checked if f["ok"]),
            "problems": sum(len(f["problems"]) for f in checked)
            + (0 if schema_doc is None else len(schema_doc["problems"])),
            "validation": "claimed" if schema is None else "recomputed",
        },
    }
