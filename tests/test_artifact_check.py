"""Reference stepper and `check` on hand-built machines with calls, returns and specials."""

from __future__ import annotations

import numpy as np
import pytest

from artifact_fixtures import COMMA, END, OPEN, A, brackets, literal
from trgc.artifact import stepper
from trgc.artifact.check import check
from trgc.artifact.model import Artifact, Machine, call_action
from trgc.errors import TrgcError

X = -1


def test_initial_configuration():
    art = brackets()
    assert stepper.initial(art) == ((0, 0, 0, 0),)
    assert not stepper.is_accepting(art, stepper.initial(art))


def test_step_calls_shifts_and_returns():
    art = brackets()
    frames = stepper.initial(art)
    frames = stepper.step(art, frames, OPEN)  # start calls value, value shifts "["
    assert frames == ((0, 1, 0, 0), (1, 2, 0, 0))
    frames = stepper.step(art, frames, A)  # nested call of value, which shifts "a"
    assert frames == ((0, 1, 0, 0), (1, 3, 0, 0), (1, 1, 0, 0))
    frames = stepper.step(art, frames, COMMA)  # inner value returns, outer shifts ","
    assert frames == ((0, 1, 0, 0), (1, 4, 0, 0))
    assert stepper.step(art, frames, COMMA) is None
    assert stepper.step(art, ((0, 1, 0, 0),), END) == ((0, 2, 0, 0),)
    assert stepper.is_accepting(art, ((0, 1, 0, 0),)) and not stepper.is_accepting(
        art, ((0, 1, 0, 0), (1, 3, 0, 0))
    )


def test_return_needs_an_accepting_top_frame():
    art = brackets()
    # value state 3 is not accepting: "," cannot pop it even though the caller could use it
    assert stepper.step(art, ((0, 1, 0, 0), (1, 3, 0, 0), (1, 3, 0, 0)), END) is None


def test_allowed_symbols():
    art = brackets()
    assert stepper.allowed_symbols(art, stepper.initial(art)) == [OPEN, A]
    assert stepper.allowed_symbols(art, ((0, 1, 0, 0),)) == [END]


@pytest.mark.parametrize(
    "data,accepted",
    [
        (b"a", True),
        (b"[]", True),
        (b"[a]", True),
        (b"[a,a,[a,[]]]", True),
        (b"", False),
        (b"[", False),
        (b"[a,]", False),
        (b"a,", False),
        (b"[a]]", False),
        (b"b", False),
    ],
)
def test_membership(data, accepted):
    assert check(brackets(), data).accepted is accepted


def test_rejection_reports_offset_and_allowed_bytes():
    result = check(brackets(), b"[a,]")
    assert not result.accepted
    assert result.offset == 3 and result.reason == "unexpected_byte"
    assert result.allowed_bytes == (ord("["), ord("a"))
    assert result.allowed_specials == ()
    assert not result.end_allowed


def test_early_end_reports_len_and_allowed_bytes():
    result = check(brackets(), b"[a")
    assert (result.accepted, result.offset, result.reason) == (False, 2, "unexpected_end")
    assert result.allowed_bytes == (ord(","), ord("]"))


def test_special_tokens_are_reported_never_consumed():
    # after a complete value the grammar allows the special <end>, which no byte can match
    result = check(brackets(), b"a!")
    assert (result.offset, result.allowed_bytes, result.allowed_specials) == (1, (), ("<end>",))
    assert result.end_allowed
    accepted = check(brackets(), b"[a]")
    assert accepted.accepted and accepted.offset is None and accepted.allowed_specials == ("<end>",)


def test_depth_bound_rejects_the_call_beyond_max_depth():
    art = brackets(max_depth=3)  # start + two values
    assert check(art, b"[[]]").accepted
    result = check(art, b"[[a]]")
    assert (result.accepted, result.offset) == (False, 2)
    assert result.allowed_bytes == (ord("]"),)  # "]" needs no call; "a" and "[" would
    assert check(brackets(max_depth=4), b"[[a]]").accepted


def test_prefix_mode():
    art = brackets()
    assert check(art, b"[a,[", prefix=True).accepted
    assert check(art, b"", prefix=True).accepted
    assert not check(art, b"[a,[", prefix=False).accepted
    result = check(art, b"[a]]", prefix=True)
    assert (result.accepted, result.offset) == (False, 3)


def _needs_call_after_a(max_depth: int) -> Artifact:
    """s ::= "a" t ; t ::= "a" — with t kept as a machine, so completing "a" needs one call."""
    s = Machine(
        "s",
        np.array([False, False, True]),
        np.array([[1], [call_action(0)], [X]], dtype=np.int32),
        np.array([[1, 2]], dtype=np.int32),
    )
    t = Machine(
        "t",
        np.array([False, True]),
        np.array([[1], [X]], dtype=np.int32),
        np.zeros((0, 2), np.int32),
    )
    return Artifact({}, np.zeros(256, dtype=np.uint8), 1, (), (s, t), max_depth)


def test_prefix_that_cannot_complete_within_max_depth_is_a_dead_end():
    assert check(_needs_call_after_a(2), b"a", prefix=True).accepted
    result = check(_needs_call_after_a(1), b"a", prefix=True)
    assert (result.accepted, result.offset, result.reason) == (False, 1, "dead_end")
    assert check(_needs_call_after_a(2), b"aa").accepted
    assert not check(_needs_call_after_a(1), b"aa").accepted


def test_call_return_loop_is_reported_as_corrupt():
    # machine 0 calls machine 1, which is accepting at its start with no action: it returns at
    # once and the caller's return state calls again, forever, without consuming
    s = Machine(
        "s",
        np.array([True]),
        np.array([[call_action(0)]], dtype=np.int32),
        np.array([[1, 0]], dtype=np.int32),
    )
    t = Machine("t", np.array([True]), np.array([[X]], dtype=np.int32), np.zeros((0, 2), np.int32))
    art = Artifact({}, np.zeros(256, dtype=np.uint8), 1, (), (s, t), 8)
    with pytest.raises(TrgcError) as excinfo:
        check(art, b"x")
    assert excinfo.value.code == "E_ARTIFACT_CORRUPT"


def test_literal_fixture():
    art = literal(b"true")
    assert check(art, b"true").accepted
    assert check(art, b"tru").offset == 3
    assert check(art, b"trUe").offset == 2
