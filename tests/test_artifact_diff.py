"""Structural and language diff, and the inspect summary, on hand-built artifacts."""

from __future__ import annotations

import numpy as np
import pytest

from artifact_fixtures import END, brackets, literal, tiny
from trgc.artifact.check import check
from trgc.artifact.diff import compare_languages, diff, structural_diff, witness_text
from trgc.artifact.inspect import byte_class_ranges, summary
from trgc.artifact.model import Artifact, Machine


def _without_end(art: Artifact) -> Artifact:
    """`brackets` whose start machine no longer accepts the special <end>."""
    start = art.machines[0]
    table = start.next.copy()
    table[1, END] = -1
    machines = (Machine(start.name, start.accepting, table, start.calls), *art.machines[1:])
    return Artifact(
        dict(art.metadata), art.byte_class, art.n_classes, art.specials, machines, art.max_depth
    )


def test_identical_artifacts_are_same():
    result = diff(brackets(), brackets())
    assert result["same"] and result["language"]["status"] == "equal"
    assert (
        result["structure"]["metadata"] == [] and result["structure"]["machines"]["changed"] == []
    )


def test_shortest_witness_between_literals():
    lang = compare_languages(literal(b"true"), literal(b"trUe"))
    assert lang.status == "different"
    # both "true" and "trUe" are shortest; "U" < "u", so the smaller is accepted by b
    assert lang.witness == tuple(b"trUe") and lang.accepted_by == "b"


def test_witness_is_shortest_for_depth_bound():
    a, b = brackets(max_depth=8), brackets(max_depth=3)
    lang = compare_languages(a, b)
    assert lang.status == "different"
    assert bytes(lang.witness) == b"[[a]]" and lang.accepted_by == "a"
    assert check(a, bytes(lang.witness)).accepted and not check(b, bytes(lang.witness)).accepted


def test_witness_with_a_special_token():
    lang = compare_languages(brackets(), _without_end(brackets()))
    assert lang.witness == (ord("a"), "<end>") and lang.accepted_by == "a"
    assert witness_text(lang.witness) == "a<<<end>>>"
    assert lang.to_dict()["witness"] == [97, {"special": "<end>"}]


def test_prefers_shorter_over_smaller():
    # "[]" (length 2) distinguishes brackets from the literal "a" before any longer input
    lang = compare_languages(brackets(), literal(b"a"))
    assert bytes(lang.witness) == b"[]" and lang.accepted_by == "a"


def test_equal_languages_with_different_tables():
    # the same language {"ab"} with an extra unreachable state and other class numbering
    a = literal(b"ab")
    table = np.vstack([a.machines[0].next, np.array([[1, -1, -1]], dtype=np.int32)])
    byte_class = a.byte_class.copy()
    byte_class[ord("a")], byte_class[ord("b")] = 2, 1
    table = table[:, [0, 2, 1]]
    accepting = np.append(a.machines[0].accepting, False)
    b = Artifact(
        {"start": "s"},
        byte_class,
        3,
        (),
        (Machine("s", accepting, table, np.zeros((0, 2), np.int32)),),
        1,
    )
    assert check(b, b"ab").accepted
    result = diff(a, b)
    assert not result["same"]
    assert result["language"]["status"] == "equal"
    assert result["structure"]["byte_classes"]["same"] is False
    assert result["structure"]["machines"]["changed"][0]["states"] == [3, 4]


def test_bounds_give_unknown_not_equal():
    a, b = brackets(max_depth=8), brackets(max_depth=3)
    assert compare_languages(a, b, max_nodes=3).status == "unknown"
    assert compare_languages(a, b, max_length=4).status == "unknown"
    assert compare_languages(a, b, max_length=5).status == "different"


def test_structural_diff_reports_machines_and_specials():
    result = structural_diff(brackets(), tiny())
    assert result["machines"]["removed"] == ["start", "value"]
    assert result["machines"]["added"] == ["s"]
    assert result["specials"] == {"removed": ["<end>"], "added": []}
    assert result["max_depth"] == [8, 1]
    keys = [entry["key"] for entry in result["metadata"]]
    assert keys == sorted(keys) and "start" in keys and "limits" in keys


def test_summary():
    art = brackets()
    info = summary(art)
    assert info["sha256"] == art.sha256
    assert info["size"]["canonical"] == len(art.to_bytes())
    assert 0 < info["size"]["compressed"] < info["size"]["canonical"]
    assert info["states"] == 8 and info["byte_classes"] == 5 and info["specials"] == ["<end>"]
    assert [m["name"] for m in info["machines"]] == ["start", "value"]
    assert info["machines"][1] == {
        "index": 1,
        "name": "value",
        "states": 5,
        "accepting": 1,
        "transitions": 5,
        "call_entries": 4,
        "calls": 1,
    }
    assert info["limits"] == {"max_depth": 1024, "states": 65536}
    assert info["source_sha256"] == "sha256:" + "ab" * 32


@pytest.mark.parametrize("make", [brackets, tiny])
def test_byte_class_ranges_cover_every_byte_once(make):
    ranges = byte_class_ranges(make())
    covered = sorted(b for spans in ranges for lo, hi in spans for b in range(lo, hi + 1))
    assert covered == list(range(256))


def test_byte_class_ranges_of_brackets():
    ranges = byte_class_ranges(brackets())
    assert ranges[1] == [(ord("["), ord("["))]
    assert ranges[0][:2] == [(0, ord(",") - 1), (ord(",") + 1, ord("[") - 1)]
