"""Validation flags recomputed from the application schema: enum_member, range_ok and
cross_field_ok are never taken as the model wrote them; a disagreement is a finding, and the
result is never rewritten."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from test_evidence import field, span
from trgc.cli.app import app
from trgc.errors import TrgcError
from trgc.tools.evidence import check_evidence
from trgc.tools.evidence_schema import parse_app_schema

DATA = Path(__file__).resolve().parent / "data" / "tools"
SCHEMA_FILE = DATA / "invoice.schema.json"
SCHEMA = parse_app_schema(SCHEMA_FILE.read_bytes(), str(SCHEMA_FILE))
DOC = b"Invoice 2024-117\nTotal: 12.50 EUR\nPaid: 20.00 EUR\nStatus: PAID\nQuantity: 0\n"
SOURCES = {"doc": DOC}


def claims(**overrides) -> dict:
    """A result whose claimed flags are the true ones, unless overridden per field."""
    fields = {
        "invoice_id": field("supported", "2024-117", [span(b"2024-117", "exact", DOC)]),
        "total": field(
            "supported", "12.50", [span(b"12.50", "parse_decimal", DOC)],
            range_ok=True, cross_field_ok=False,
        ),
        "paid": field(
            "supported", "20.00", [span(b"20.00", "parse_decimal", DOC)],
            range_ok=True, cross_field_ok=False,
        ),
        "status": field("supported", "paid", [span(b"PAID", "casefold", DOC)], enum_member=True),
        "quantity": field("unsupported", None, [span(b"0", "exact", DOC)]),
        "due_date": field("unknown", None, []),
    }  # fmt: skip
    for name, flags in overrides.items():
        fields[name]["validation"].update(flags)
    return fields


def run(fields: dict, schema=SCHEMA) -> dict:
    return check_evidence(json.dumps({"fields": fields}).encode(), SOURCES, schema=schema)


def findings(report: dict) -> dict[str, list[tuple[str, str]]]:
    return {
        f["field"]: [(p["check"], p["pointer"].rsplit("/", 1)[-1]) for p in f["problems"]]
        for f in report["fields"]
        if f["problems"]
    }


def test_true_claims_agree_with_the_recomputation():
    report = run(claims())
    assert findings(report) == {"paid": [("validation_failed", "validation")],
                                "total": [("validation_failed", "validation")]}  # fmt: skip
    # paid 20.00 > total 12.50 breaks `paid <= total`: both fields fail cross_field_ok,
    # honestly claimed as false, so they cannot be `supported`
    (total,) = [f for f in report["fields"] if f["field"] == "total"]
    assert total["validation"]["recomputed"] == {
        "enum_member": None,
        "range_ok": True,
        "cross_field_ok": False,
    }
    assert report["summary"]["validation"] == "recomputed"
    assert report["schema"] == {"sha256": SCHEMA.sha256, "problems": []}


def test_a_claimed_flag_that_the_schema_contradicts_is_a_finding():
    fields = claims(total={"cross_field_ok": True}, status={"enum_member": False})
    report = run(fields)
    assert ("validation_mismatch", "cross_field_ok") in findings(report)["total"]
    assert findings(report)["status"] == [("validation_mismatch", "enum_member")]
    (status,) = [f for f in report["fields"] if f["field"] == "status"]
    (problem,) = status["problems"]
    assert problem["pointer"] == "/fields/status/validation/enum_member"
    assert problem["message"] == "claimed false, recomputed true: 'paid' is in the enum"


def test_values_outside_the_enum_and_the_range_are_caught_even_if_claimed_true():
    doc = b"Total: 20000 EUR\nStatus: LATE\n"
    fields = {
        "total": field("supported", 20000, [span(b"20000", "parse_integer", doc)], range_ok=True),
        "status": field("supported", "late", [span(b"LATE", "casefold", doc)], enum_member=True),
    }
    report = check_evidence(json.dumps({"fields": fields}).encode(), {"doc": doc}, schema=SCHEMA)
    found = findings(report)
    assert ("validation_mismatch", "range_ok") in found["total"]
    assert ("validation_failed", "validation") in found["total"]  # recomputed false: not supported
    assert ("validation_mismatch", "enum_member") in found["status"]
    assert report["schema"]["problems"] == [
        {
            "check": "missing_field",
            "pointer": f"/fields/{name}",
            "message": f"the application schema declares {name!r}; the result has no such field",
        }
        for name in ("due_date", "invoice_id", "paid", "quantity")
    ]
    assert report["ok"] is False


def test_flags_of_fields_without_a_value_are_not_applicable():
    report = run(claims(quantity={"range_ok": True}, due_date={"cross_field_ok": False}))
    assert findings(report)["quantity"] == [("validation_mismatch", "range_ok")]
    assert findings(report)["due_date"] == [("validation_mismatch", "cross_field_ok")]


def test_undeclared_fields_are_findings():
    fields = claims()
    fields["extra"] = field("unknown", None, [])
    assert findings(run(fields))["extra"] == [("undeclared_field", "extra")]


def test_the_result_is_never_rewritten():
    fields = claims(total={"cross_field_ok": True})
    before = copy.deepcopy(fields)
    report = run(fields)
    assert fields == before
    (total,) = [f for f in report["fields"] if f["field"] == "total"]
    assert total["validation"]["claimed"]["cross_field_ok"] is True


def test_without_a_schema_the_flags_are_reported_as_claimed():
    report = run(claims(total={"cross_field_ok": True}), schema=None)
    assert report["summary"]["validation"] == "claimed" and report["schema"] is None
    (total,) = [f for f in report["fields"] if f["field"] == "total"]
    assert total["validation"]["recomputed"] is None


@pytest.mark.parametrize(
    ("text", "pointer"),
    [
        ("[]", "/"),
        ('{"protocol": "x", "fields": {}, "cross_field": []}', "/protocol"),
        ('{"protocol": "trgc-evidence-schema-1", "fields": {}}', "/cross_field"),
        ('{"protocol": "trgc-evidence-schema-1", "fields": {"a": {"pattern": "x"}}, "cross_field": []}', "/fields/a/pattern"),
        ('{"protocol": "trgc-evidence-schema-1", "fields": {"a": {"enum": []}}, "cross_field": []}', "/fields/a/enum"),
        ('{"protocol": "trgc-evidence-schema-1", "fields": {"a": {"enum": [1, 1.0]}}, "cross_field": []}', "/fields/a/enum/1"),
        ('{"protocol": "trgc-evidence-schema-1", "fields": {"a": {"minimum": "1"}}, "cross_field": []}', "/fields/a/minimum"),
        ('{"protocol": "trgc-evidence-schema-1", "fields": {"a": {"minimum": 2, "maximum": 1}}, "cross_field": []}', "/fields/a"),
        ('{"protocol": "trgc-evidence-schema-1", "fields": {"a": {}}, "cross_field": [{"left": "a", "op": "<", "right": "b"}]}', "/cross_field/0"),
        ('{"protocol": "trgc-evidence-schema-1", "fields": {"a": {}, "b": {}}, "cross_field": [{"left": "a", "op": "=~", "right": "b"}]}', "/cross_field/0/op"),
        ('{"protocol": "trgc-evidence-schema-1", "fields": {"a": {}}, "cross_field": [], "x": 1}', "/x"),
        ('{"protocol": "trgc-evidence-schema-1", "protocol": "trgc-evidence-schema-1", "fields": {}, "cross_field": []}', None),
    ],
)  # fmt: skip
def test_malformed_schemas_are_refused(text, pointer):
    with pytest.raises(TrgcError) as info:
        parse_app_schema(text.encode(), "app.json")
    assert info.value.code == "E_EVIDENCE_SCHEMA"
    assert info.value.source == "app.json"
    if pointer is not None:
        assert info.value.pointer == pointer


def test_cli_recomputes_with_schema(tmp_path):
    runner = CliRunner()
    source = f"doc={tmp_path / 'doc.txt'}"
    (tmp_path / "doc.txt").write_bytes(DOC)
    result_file = tmp_path / "result.json"
    result_file.write_text(json.dumps({"fields": claims(total={"cross_field_ok": True})}))
    args = ["evidence", "check", str(result_file), "--source", source]
    plain = runner.invoke(app, args)
    assert "validation flags taken as claimed (no --schema)" in plain.stdout
    checked = runner.invoke(app, [*args, "--schema", str(SCHEMA_FILE)])
    assert checked.exit_code == 1
    assert "validation_mismatch at /fields/total/validation/cross_field_ok" in checked.stdout
    assert f"validation flags recomputed from {SCHEMA_FILE}" in checked.stdout
    bad = tmp_path / "bad.schema.json"
    bad.write_text("{}")
    refused = runner.invoke(app, [*args, "--schema", str(bad), "--json"])
    assert refused.exit_code == 2
    assert json.loads(refused.stderr)["error"]["code"] == "E_EVIDENCE_SCHEMA"
