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
