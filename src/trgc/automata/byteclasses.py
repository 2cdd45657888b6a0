"""Byte classes: bytes whose column is identical in every final table share one symbol.

Works on the resolved tables over byte atoms (`predictive.Resolved`): two atoms belong to
the same class when every (machine, state) does the same thing on them. Numbering is
canonical: classes are numbered in order of their smallest byte, so byte 0 is in class 0.
"""

from __future__ import annotations

from trgc.automata.alphabet import Alphabet
from trgc.automata.predictive import Resolved
from trgc.limits import Budget


def byte_classes(
    resolved: dict[str, Resolved], alphabet: Alphabet, budget: Budget
) -> tuple[list[int], list[int]]:
    """(class of each byte [256], one representative atom per class)."""
    columns: list[list] = [[] for _ in range(alphabet.n_byte_atoms)]
    for name in sorted(resolved):
        for row in resolved[name].rows:
            budget.charge(alphabet.n_byte_atoms, "byte classes")
            for a in range(alphabet.n_byte_atoms):
                columns[a].append(row.get(a))
    class_of_column: dict[tuple, int] = {}
    representatives: list[int] = []
    class_of_byte: list[int] = []
    for b in range(256):
        atom = alphabet.atom_of_byte[b]
        key = tuple(columns[atom])
        c = class_of_column.get(key)
        if c is None:
            c = class_of_column[key] = len(representatives)
            representatives.append(atom)
        class_of_byte.append(c)
    return class_of_byte, representatives
