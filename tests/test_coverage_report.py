"""The coverage report's side-by-side part: where trgc and the peer disagree, by schema."""

from __future__ import annotations

from trgc.evaluation.coverage import SchemaResult, report


def _result(
    file: str, outcome: str, keyword: str | None, peer: bool, *, passes: bool
) -> SchemaResult:
    r = SchemaResult("Sub", file, outcome, keyword, 0.001, peer_compiled=peer)
    if outcome == "compiled":
        r.valid = (1, 1) if passes else (0, 1)
    if peer:
        r.peer_valid = (1, 1)
    return r


def test_gaps_name_each_schema_with_trgcs_reason():
    results = [
        _result("both.json", "compiled", None, True, passes=True),
        _result("kw.json", "unsupported", "not", True, passes=False),
        _result("kw2.json", "unsupported", "not", True, passes=False),
        _result("limit.json", "E_LIMIT_STATES", None, True, passes=False),
        _result("ours.json", "compiled", None, False, passes=True),
        _result("misjudged.json", "compiled", None, True, passes=False),
    ]
    peer = report(results)["total"]["peer"]
    assert peer["compiled"] == 5 and peer["passing"] == 5
    assert peer["only_peer_compiled"] == [
        {"file": "Sub/kw.json", "trgc": "not"},
        {"file": "Sub/kw2.json", "trgc": "not"},
        {"file": "Sub/limit.json", "trgc": "E_LIMIT_STATES"},
    ]
    assert list(peer["only_peer_compiled_by_reason"].items()) == [("not", 2), ("E_LIMIT_STATES", 1)]
    assert peer["only_trgc_compiled"] == ["Sub/ours.json"]
    assert [g["file"] for g in peer["only_peer_passing"]] == [
        "Sub/kw.json",
        "Sub/kw2.json",
        "Sub/limit.json",
        "Sub/misjudged.json",
    ]
    assert peer["only_peer_passing"][-1]["trgc"] == "an instance misjudged"


def test_no_peer_no_peer_section():
    assert "peer" not in report([SchemaResult("Sub", "a.json", "compiled", None, 0.001)])["total"]


def test_an_internal_error_is_one_schemas_outcome_and_the_run_goes_on(tmp_path, monkeypatch):
    """A bug met in one schema is recorded as that schema's E_INTERNAL (with the exception) and
    the others are still measured; the CLI prints the report and exits 70."""
    import json

    from typer.testing import CliRunner

    from trgc.cli.app import app
    from trgc.evaluation import coverage

    subset = tmp_path / "bench" / "Sub"
    subset.mkdir(parents=True)
    (subset / "a.json").write_text(json.dumps({"type": "integer"}))
    (subset / "b.json").write_text(json.dumps({"type": "string"}))
    real = coverage.compile_schema

    def flaky(raw, **options):
        if b"string" in raw:
            raise IndexError("tuple index out of range")
        return real(raw, **options)

    monkeypatch.setattr(coverage, "compile_schema", flaky)
    results = coverage.run_coverage(tmp_path / "bench")
    assert [(r.file, r.outcome) for r in results] == [
        ("a.json", "compiled"),
        ("b.json", "E_INTERNAL"),
    ]
    total = report(results)["total"]
    assert total["compiled"] == 1
    assert total["internal_errors"] == ["Sub/b.json: IndexError: tuple index out of range"]
    run = CliRunner().invoke(app, ["coverage", str(tmp_path / "bench"), "--json"])
    assert run.exit_code == 70
    assert json.loads(run.stdout)["total"]["internal_errors"] == total["internal_errors"]
