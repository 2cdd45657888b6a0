"""`trgc keywords | conformance jsts | coverage` and `trgc compile` of JSON Schemas: output and exit statuses."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from schema_helpers import CORPORA
from trgc.cli.app import app


def run(*args: str, input: bytes | str | None = None):
    return CliRunner().invoke(app, list(args), input=input)


def test_keywords_json_lists_the_matrix():
    result = run("keywords", "--json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    by_name = {k["name"]: k["status"] for k in doc["keywords"]}
    assert by_name["properties"] == "supported"
    assert by_name["definitions"] == "normalised"
    assert by_name["title"] == "ignored-by-design"
    assert by_name["$dynamicRef"] == "unsupported"
    assert "closed-objects" in doc["profile_rules"]
    human = run("keywords")
    assert human.exit_code == 0 and "additionalProperties" in human.stdout


def test_compile_detects_a_schema_and_reports_errors(tmp_path):
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}}))
    result = run("compile", str(schema), "-o", str(tmp_path / "s.trga"))
    assert result.exit_code == 0 and result.stdout.startswith("sha256:")
    bad = tmp_path / "bad.json"
    bad.write_text('{"type": "object", "$dynamicRef": "#x"}')
    result = run("compile", str(bad), "--json")
    assert result.exit_code == 2
    err = json.loads(result.stderr)["error"]
    assert err["code"] == "E_UNSUPPORTED_KEYWORD" and err["pointer"] == "/$dynamicRef"
    unsat = tmp_path / "unsat.json"
    unsat.write_text('{"enum": []}')
    assert run("compile", str(unsat)).exit_code == 2


SUITE = CORPORA / "json-schema-test-suite"


@pytest.mark.skipif(
    not SUITE.is_dir(), reason=f"the JSON Schema Test Suite corpus is missing: {SUITE}"
)
def test_conformance_ratchet_update_and_regression(tmp_path):
    suite = tmp_path / "suite"
    (suite / "tests" / "draft2020-12").mkdir(parents=True)
    for name in ("enum.json", "properties.json", "uniqueItems.json"):
        shutil.copy(
            SUITE / "tests" / "draft2020-12" / name, suite / "tests" / "draft2020-12" / name
        )
    baseline = tmp_path / "classification.json"
    absent = run("conformance", "jsts", str(suite), "--baseline", str(baseline), "--json")
    assert absent.exit_code == 2 and json.loads(absent.stderr)["error"]["code"] == "E_IO"
    baseline.write_text('{"cases": {}}')
    first = run("conformance", "jsts", str(suite), "--baseline", str(baseline), "--json")
    assert first.exit_code == 1  # every case is missing from an empty baseline
    assert json.loads(first.stdout)["missing"]
    updated = run(
        "conformance", "jsts", str(suite), "--baseline", str(baseline), "--update", "--json"
    )
    assert updated.exit_code == 0 and json.loads(updated.stdout)["updated"] is True
    again = run("conformance", "jsts", str(suite), "--baseline", str(baseline))
    assert again.exit_code == 0 and "0 invalid instances accepted" in again.stdout
    # pretend a case used to be better: the run must report a regression
    doc = json.loads(baseline.read_text())
    victim = next(k for k, v in sorted(doc["cases"].items()) if v["category"] == "unsupported")
    doc["cases"][victim]["category"] = "required"
    baseline.write_text(json.dumps(doc))
    worse = run("conformance", "jsts", str(suite), "--baseline", str(baseline), "--json")
    assert worse.exit_code == 1 and json.loads(worse.stdout)["regressions"] == [victim]


BENCH = CORPORA / "jsonschemabench"


@pytest.mark.skipif(not BENCH.is_dir(), reason=f"the JSONSchemaBench corpus is missing: {BENCH}")
def test_coverage_on_a_small_sample(tmp_path):
    sample = tmp_path / "jsonschemabench"
    (sample / "Glaiveai2K").mkdir(parents=True)
    for path in sorted((BENCH / "Glaiveai2K").glob("*.json"))[:5]:
        shutil.copy(path, sample / "Glaiveai2K" / path.name)
    result = run(
        "coverage", str(sample), "--instances", str(CORPORA / "jsonschemabench-instances"), "--json"
    )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    sub = doc["subsets"]["Glaiveai2K"]
    assert (
        sub["schemas"] == 5
        and sub["compiled"] + sub["unsupported"] + sum(sub["failed_by_code"].values()) == 5
    )
    assert doc["total"]["wrongly_accepted"] == 0
    opened = run(
        "coverage",
        str(sample),
        "--instances",
        str(CORPORA / "jsonschemabench-instances"),
        "--open-objects",
        "--json",
    )
    assert opened.exit_code == 0 and json.loads(opened.stdout)["total"]["wrongly_accepted"] == 0
    human = run("coverage", str(sample), "--instances", str(CORPORA / "jsonschemabench-instances"))
    assert human.exit_code == 0 and "total 5/5 compiled" in human.stdout


def test_compile_separators_and_open_objects_options(tmp_path):
    schema = tmp_path / "s.json"
    schema.write_text(
        json.dumps(
            {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}}
        )
    )
    pretty = tmp_path / "pretty.trga"
    assert run("compile", str(schema), "-o", str(pretty), "--separators", "pretty").exit_code == 0
    assert run("check", str(pretty), "-", input=b'{"a": [1, 2]}').exit_code == 0
    assert run("check", str(pretty), "-", input=b'{"a":[1,2]}').exit_code == 1
    opened = tmp_path / "open.trga"
    assert (
        run(
            "compile", str(schema), "-o", str(opened), "--open-objects", "--whitespace", "compact"
        ).exit_code
        == 0
    )
    assert run("check", str(opened), "-", input=b'{"a":[1],"b":{"c":null}}').exit_code == 0
    flexible = tmp_path / "flexible.trga"
    assert (
        run("compile", str(schema), "-o", str(flexible), "--whitespace", "flexible").exit_code == 0
    )
    assert run("check", str(flexible), "-", input=b'{ "a" : [\n 1 ] }\n').exit_code == 0
    assert run("check", str(pretty), "-", input=b'{"a": [1], "b": 2}').exit_code == 1
    bad = run("compile", str(schema), "--separators", "wide")
    assert bad.exit_code == 2 and "E_USAGE" in bad.stderr
