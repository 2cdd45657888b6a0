"""Evidence validation: spans verified against content-addressed sources, listed transforms
only, the status rules, per-field findings, and no rewriting of the checked result."""

from __future__ import annotations

import copy
import hashlib
import json
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trgc.cli.app import app
from trgc.errors import TrgcError
from trgc.tools.evidence import apply_transform, check_evidence, parse_source_option, source_id

DATA = Path(__file__).resolve().parent / "data" / "tools"
NOTES = (DATA / "notes.txt").read_bytes()
SOURCES = {"notes": NOTES}
NO_VALIDATION = {"enum_member": None, "range_ok": None, "cross_field_ok": None}


def span(quote: bytes, transform: str, data: bytes = NOTES, occurrence: int = 0) -> dict:
    start = -1
    for _ in range(occurrence + 1):
        start = data.index(quote, start + 1)
    end = start + len(quote)
    return {
        "source_id": source_id(data),
        "start_byte": start,
        "end_byte": end,
        "quoted_sha256": hashlib.sha256(data[start:end]).hexdigest(),
        "transform": transform,
    }


def field(status: str, value, evidence: list, **validation) -> dict:
    return {
        "status": status,
        "value": value,
        "evidence": evidence,
        "unit": None,
        "validation": {**NO_VALIDATION, **validation},
    }


def check(fields: dict, sources: dict | None = None) -> dict:
    return check_evidence(
        json.dumps({"fields": fields}).encode(), SOURCES if sources is None else sources
    )


def problems(report: dict, name: str) -> list[str]:
    (entry,) = [f for f in report["fields"] if f["field"] == name]
    return [p["check"] for p in entry["problems"]]


def test_example_document_validates():
    report = check_evidence((DATA / "extraction_ok.json").read_bytes(), SOURCES)
    assert report["ok"] is True
    assert report["summary"] == {"fields": 5, "ok": 5, "problems": 0, "validation": "claimed"}
    assert [f["field"] for f in report["fields"]] == sorted(f["field"] for f in report["fields"])
    assert report["sources"] == [
        {"name": "notes", "source_id": source_id(NOTES), "bytes": len(NOTES)}
    ]
    total = next(f for f in report["fields"] if f["field"] == "total")
    assert total["evidence"][0]["derived"] == "12.50"
    assert total["evidence"][0]["quote_verified"] is True


def test_bad_document_reports_every_failure():
    report = check_evidence((DATA / "extraction_bad.json").read_bytes(), SOURCES)
    assert report["ok"] is False
    assert problems(report, "total") == ["value_mismatch"]
    assert problems(report, "quantity") == ["conflict_without_disagreement"]
    assert problems(report, "status") == ["quoted_sha256_mismatch"]
    assert problems(report, "due_date") == ["value_not_null"]
    assert problems(report, "invoice_id") == []


def test_transforms():
    assert apply_transform("exact", b" A ") == " A "
    assert apply_transform("trim", b" \t A b\r\n") == "A b"
    assert apply_transform("casefold", "STRASSE Straße".encode()) == "strasse strasse"
    assert apply_transform("parse_integer", b"-0042") == -42
    assert apply_transform("parse_decimal", b"12.50") == Decimal("12.50")
    cases = [
        ("parse_integer", b"1.5"),
        ("parse_integer", b" 1"),
        ("parse_decimal", b"1e3"),
        ("parse_decimal", b"1,5"),
        ("exact", b"\xff\xfe"),
    ]
    for transform, quote in cases:
        document = b"quote: " + quote + b";"
        report = check(
            {"x": field("supported", 1, [span(quote, transform, data=document)])}, {"doc": document}
        )
        assert problems(report, "x") == ["transform_failed"], quote


@pytest.mark.parametrize(
    ("quote", "transform", "value", "ok"),
    [
        (b"12.50", "parse_decimal", "12.5", True),  # numeric equality
        (b"12.50", "parse_decimal", 12.5, True),  # JSON number, read as Decimal
        (b"12.50", "parse_decimal", "12.51", False),
        (b"12.50", "parse_decimal", True, False),
        (b"3", "parse_integer", 3, True),
        (b"3", "parse_integer", "3", False),  # the schema type matters
        (b"3", "parse_integer", 3.0, False),
        (b"PAID", "casefold", "paid", True),
        (b"PAID", "casefold", "PAID", False),  # the value must be what the transform gives
        (b"PAID", "exact", "PAID", True),
        (b"PAID", "exact", "paid", False),
    ],
)
def test_value_must_be_derivable(quote, transform, value, ok):
    report = check({"x": field("supported", value, [span(quote, transform)])})
    assert report["ok"] is ok
    if not ok:
        assert problems(report, "x") == ["value_mismatch"]


def test_status_rules():
    verified = span(b"12.50", "parse_decimal")
    report = check(
        {
            "supported_without_evidence": field("supported", "12.50", []),
            "supported_without_value": field("supported", None, [verified]),
            "unknown_with_value": field("unknown", "x", []),
            "unknown_with_evidence": field("unknown", None, [verified]),
            "unsupported_ok": field("unsupported", None, [span(b"PAID", "parse_integer")]),
            "unsupported_without_evidence": field("unsupported", None, []),
            "conflict_ok": field(
                "conflict", None, [span(b"3", "parse_integer"), span(b"4", "parse_integer")]
            ),
            "conflict_single": field("conflict", None, [span(b"3", "parse_integer")]),
            "conflict_with_value": field(
                "conflict", 3, [span(b"3", "parse_integer"), span(b"4", "parse_integer")]
            ),
            "supported_but_out_of_range": field("supported", "12.50", [verified], range_ok=False),
        }
    )
    assert problems(report, "supported_without_evidence") == ["missing_evidence"]
    assert problems(report, "supported_without_value") == ["missing_value"]
    assert problems(report, "unknown_with_value") == ["value_not_null"]
    assert problems(report, "unknown_with_evidence") == ["unknown_has_evidence"]
    assert (
        problems(report, "unsupported_ok") == []
    )  # present but inexpressible: no transform needed
    assert problems(report, "unsupported_without_evidence") == ["missing_evidence"]
    assert problems(report, "conflict_ok") == []
    assert problems(report, "conflict_single") == ["missing_evidence"]
    assert problems(report, "conflict_with_value") == ["value_not_null"]
    assert problems(report, "supported_but_out_of_range") == ["validation_failed"]


def test_span_checks():
    other = b"another document"
    report = check(
        {
            "unknown_source": field(
                "supported", "another", [span(b"another", "exact", data=other)]
            ),
            "out_of_range": field(
                "supported", "x", [{**span(b"PAID", "exact"), "end_byte": len(NOTES) + 1}]
            ),
            "empty": field(
                "supported",
                "",
                [{**span(b"PAID", "exact"), "end_byte": span(b"PAID", "exact")["start_byte"]}],
            ),
            "hash": field(
                "supported", "PAID", [{**span(b"PAID", "exact"), "quoted_sha256": "a" * 64}]
            ),
            "split_utf8": field(
                "supported", "x", [span("€".encode()[:2], "exact", data="a€".encode())]
            ),
        },
        sources={"notes": NOTES, "euro": "a€".encode()},
    )
    assert problems(report, "unknown_source") == ["unknown_source"]
    assert problems(report, "out_of_range") == ["span_out_of_range"]
    assert problems(report, "empty") == ["empty_span"]
    assert problems(report, "hash") == ["quoted_sha256_mismatch"]
    assert problems(report, "split_utf8") == ["transform_failed"]
    pointers = [p["pointer"] for f in report["fields"] for p in f["problems"]]
    assert "/fields/hash/evidence/0/quoted_sha256" in pointers


def test_sources_are_identified_by_content_not_name():
    report = check(
        {"total": field("supported", "12.50", [span(b"12.50", "parse_decimal")])},
        sources={"renamed": NOTES},
    )
    assert report["ok"] is True
    assert report["fields"][0]["evidence"][0]["source"] == "renamed"
    edited = NOTES.replace(b"PAID", b"OPEN")
    report = check(
        {"total": field("supported", "12.50", [span(b"12.50", "parse_decimal")])},
        sources={"notes": edited},
    )
    assert problems(report, "total") == ["unknown_source"]


def test_failures_are_reported_never_rewritten():
    document = json.loads((DATA / "extraction_bad.json").read_text())
    before = copy.deepcopy(document)
    raw = json.dumps(document).encode()
    report = check_evidence(raw, SOURCES)
    assert document == before
    assert "value" not in json.dumps(report["fields"][0]["evidence"])  # no corrected values


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        (lambda d: d.update(extra=1), "E_EVIDENCE_UNKNOWN_FIELD"),
        (lambda d: d["fields"]["total"].update(confidence=0.9), "E_EVIDENCE_UNKNOWN_FIELD"),
        (
            lambda d: d["fields"]["total"]["evidence"][0].update(note="x"),
            "E_EVIDENCE_UNKNOWN_FIELD",
        ),
        (
            lambda d: d["fields"]["total"]["validation"].update(schema_ok=True),
            "E_EVIDENCE_UNKNOWN_FIELD",
        ),
        (lambda d: d["fields"]["total"].pop("unit"), "E_EVIDENCE_MISSING_FIELD"),
        (
            lambda d: d["fields"]["total"]["evidence"][0].pop("quoted_sha256"),
            "E_EVIDENCE_MISSING_FIELD",
        ),
        (lambda d: d["fields"]["total"].update(status="probably"), "E_EVIDENCE_VALUE"),
        (
            lambda d: d["fields"]["total"]["evidence"][0].update(transform="regex_extract"),
            "E_EVIDENCE_VALUE",
        ),
        (
            lambda d: d["fields"]["total"]["evidence"][0].update(transform="convert_unit"),
            "E_EVIDENCE_VALUE",
        ),
        (
            lambda d: d["fields"]["total"]["evidence"][0].update(source_id="notes.txt"),
            "E_EVIDENCE_VALUE",
        ),
        (
            lambda d: d["fields"]["total"]["evidence"][0].update(quoted_sha256="XYZ"),
            "E_EVIDENCE_VALUE",
        ),
        (lambda d: d["fields"]["total"]["evidence"][0].update(start_byte=-1), "E_EVIDENCE_VALUE"),
        (
            lambda d: d["fields"]["total"]["evidence"][0].update(start_byte=99, end_byte=98),
            "E_EVIDENCE_VALUE",
        ),
        (lambda d: d["fields"]["total"]["evidence"][0].update(end_byte="12"), "E_EVIDENCE_TYPE"),
        (lambda d: d["fields"]["total"]["validation"].update(range_ok="yes"), "E_EVIDENCE_TYPE"),
        (lambda d: d["fields"].update(total=[]), "E_EVIDENCE_TYPE"),
    ],
)
def test_malformed_documents(mutate, code):
    document = json.loads((DATA / "extraction_ok.json").read_text())
    mutate(document)
    with pytest.raises(TrgcError) as info:
        check_evidence(json.dumps(document).encode(), SOURCES)
    assert info.value.code == code


def test_malformed_json_and_limits():
    for text in [b"{", b'{"fields": {}, "fields": {}}', b'{"fields": NaN}', b"\xfe"]:
        with pytest.raises(TrgcError) as info:
            check_evidence(text, SOURCES)
        assert info.value.code == "E_EVIDENCE_JSON"
    with pytest.raises(TrgcError) as info:
        check_evidence(b"[" * 10_000 + b"]" * 10_000, SOURCES)
    assert info.value.code == "E_LIMIT_NESTING"
    with pytest.raises(TrgcError) as info:
        check_evidence(b" " * (2 << 20), SOURCES)
    assert info.value.code == "E_LIMIT_INPUT_BYTES"


def test_source_option():
    assert parse_source_option("doc1=notes.txt") == ("doc1", Path("notes.txt"))
    assert parse_source_option("a=b=c") == ("a", Path("b=c"))
    for bad in ["notes.txt", "=x", "a b=x", "doc1="]:
        with pytest.raises(TrgcError) as info:
            parse_source_option(bad)
        assert info.value.code == "E_EVIDENCE_SOURCE"


runner = CliRunner()


def test_cli_exit_statuses(tmp_path):
    notes = f"notes={DATA / 'notes.txt'}"
    result = runner.invoke(
        app, ["evidence", "check", str(DATA / "extraction_ok.json"), "--source", notes]
    )
    assert result.exit_code == 0, result.output
    assert "5 of 5 fields validate" in result.stdout
    result = runner.invoke(
        app, ["evidence", "check", "--json", str(DATA / "extraction_bad.json"), "--source", notes]
    )
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False and report["protocol"] == "trgc-evidence-check-1"
    bad = tmp_path / "bad.json"
    bad.write_text('{"fields": {"x": {"status": "maybe"}}}')
    result = runner.invoke(app, ["evidence", "check", str(bad), "--source", notes])
    assert result.exit_code == 2 and "E_EVIDENCE_MISSING_FIELD" in result.stderr
    result = runner.invoke(
        app, ["evidence", "check", str(DATA / "extraction_ok.json"), "--source", "notes"]
    )
    assert result.exit_code == 2 and "E_EVIDENCE_SOURCE" in result.stderr


def test_conflict_compares_values_numerically():
    document = b"total 12.50 EUR; total 12.5 EUR; total 13 EUR"
    same = [
        span(b"12.50", "parse_decimal", data=document),
        span(b"12.5", "parse_decimal", data=document),
    ]
    report = check({"x": field("conflict", None, same)}, {"doc": document})
    assert problems(report, "x") == ["conflict_without_disagreement"]
    different = [
        span(b"12.50", "parse_decimal", data=document),
        span(b"13", "parse_integer", data=document),
    ]
    assert check({"x": field("conflict", None, different)}, {"doc": document})["ok"] is True
