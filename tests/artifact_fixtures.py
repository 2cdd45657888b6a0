"""Hand-built artifacts for the artifact-layer tests (no parser or automata involved).

`brackets()` is `start ::= value special("<end>")? ; value ::= "a" | "[" (value ("," value)*)? "]" ;`
written out as two machines with call edges, so that shift, call, return, specials and the
depth bound are all exercised.
"""

from __future__ import annotations

import numpy as np

from trgc.artifact.model import REPEAT, Artifact, Machine, call_action

X = -1  # no action
OTHER, OPEN, CLOSE, A, COMMA = range(5)  # byte classes
END = 5  # the special token <end>


def brackets_byte_class() -> np.ndarray:
    byte_class = np.zeros(256, dtype=np.uint8)
    byte_class[ord("[")] = OPEN
    byte_class[ord("]")] = CLOSE
    byte_class[ord("a")] = A
    byte_class[ord(",")] = COMMA
    return byte_class


def brackets(max_depth: int = 8, metadata: dict | None = None) -> Artifact:
    c = call_action(0)
    #              OTHER OPEN CLOSE  A  COMMA END
    start_next = [
        [X, c, X, c, X, X],  # 0: call value, return to 1
        [X, X, X, X, X, 2],  # 1: accepting; <end> -> 2
        [X, X, X, X, X, X],  # 2: accepting
    ]
    value_next = [
        [X, 2, X, 1, X, X],  # 0: "a" -> 1, "[" -> 2
        [X, X, X, X, X, X],  # 1: accepting (return)
        [X, c, 1, c, X, X],  # 2: after "[": "]" -> 1, or a nested value returning to 3
        [X, X, 1, X, 4, X],  # 3: after a member: "]" or ","
        [X, c, X, c, X, X],  # 4: after ",": a nested value returning to 3
    ]
    start = Machine(
        name="start",
        accepting=np.array([False, True, True]),
        next=np.array(start_next, dtype=np.int32),
        calls=np.array([[1, 1]], dtype=np.int32),
    )
    value = Machine(
        name="value",
        accepting=np.array([False, True, False, False, False]),
        next=np.array(value_next, dtype=np.int32),
        calls=np.array([[1, 3]], dtype=np.int32),
    )
    if metadata is None:
        metadata = {
            "compiler": "trgc test",
            "format": "trga-1",
            "limits": {"max_depth": 1024, "states": 65536},
            "max_depth": max_depth,
            "source_sha256": "sha256:" + "ab" * 32,
            "start": "start",
        }
    return Artifact(
        metadata=metadata,
        byte_class=brackets_byte_class(),
        n_classes=5,
        specials=("<end>",),
        machines=(start, value),
        max_depth=max_depth,
    )


def tiny() -> Artifact:
    """One machine, one byte class, no specials: the language of exactly one byte."""
    return Artifact(
        metadata={"start": "s"},
        byte_class=np.zeros(256, dtype=np.uint8),
        n_classes=1,
        specials=(),
        machines=(
            Machine(
                "s",
                np.array([False, True]),
                np.array([[1], [X]], dtype=np.int32),
                np.zeros((0, 2), np.int32),
            ),
        ),
        max_depth=1,
    )


def literal(text: bytes, name: str = "s") -> Artifact:
    """A single-DFA artifact accepting exactly `text` (one class per distinct byte)."""
    distinct = sorted(set(text))
    byte_class = np.zeros(256, dtype=np.uint8)
    for i, b in enumerate(distinct, start=1):
        byte_class[b] = i
    n_classes = len(distinct) + 1
    table = np.full((len(text) + 1, n_classes), X, dtype=np.int32)
    for i, b in enumerate(text):
        table[i, byte_class[b]] = i + 1
    accepting = np.zeros(len(text) + 1, dtype=bool)
    accepting[-1] = True
    return Artifact(
        metadata={"start": name},
        byte_class=byte_class,
        n_classes=n_classes,
        specials=(),
        machines=(Machine(name, accepting, table, np.zeros((0, 2), np.int32)),),
        max_depth=1,
    )


def counted(rep_min: int = 2, rep_max: int = 3) -> Artifact:
    """`s ::= "a"{rep_min,rep_max} ;` with a counter: machine 0 calls the repeat machine
    `s{}`, whose body is one "a" (class 1), with those bounds; every other byte is class 0."""
    byte_class = np.zeros(256, dtype=np.uint8)
    byte_class[ord("a")] = 1
    c = call_action(0)
    start = Machine(
        "s",
        np.array([False, True]),
        np.array([[X, c], [X, X]], dtype=np.int32),
        np.array([[1, 1]], dtype=np.int32),
        call_bounds=np.array([[rep_min, rep_max]], dtype=np.int32),
    )
    body = Machine(
        "s{}",
        np.array([False, True]),
        np.array([[X, 1], [X, X]], dtype=np.int32),
        np.zeros((0, 2), np.int32),
        kind=REPEAT,
    )
    return Artifact(
        metadata={"start": "s"},
        byte_class=byte_class,
        n_classes=2,
        specials=(),
        machines=(start, body),
        max_depth=1,
    )
