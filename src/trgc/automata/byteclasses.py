"""Byte classes: bytes whose column is identical in every final table share one symbol.

Works on the resolved tables over input atoms (`predictive.Resolved`): two atoms belong to
the same class when every (machine, state) does the same thing on them. The byte-atom
columns of all machines are stacked and equal columns grouped at once (`grouping.group_rows`
on the transposed stack); a call's number is per machine, but every row lies in one machine,
so equal numbers in a row mean the same call. Numbering is canonical: classes are numbered in
order of their smallest byte, so byte 0 is in class 0.
"""

from __future__ import annotations

import numpy as np

from trgc.automata.alphabet import Alphabet
from trgc.automata.grouping import group_rows
from trgc.automata.predictive import Resolved
from trgc.limits import Budget


def byte_classes(
    resolved: dict[str, Resolved], alphabet: Alphabet, budget: Budget
) -> tuple[list[int], list[int]]:
    """(class of each byte [256], one representative atom per class)."""
    n_atoms = alphabet.n_byte_atoms
    names = sorted(resolved)
    budget.charge(sum(resolved[name].n_states for name in names) * n_atoms, "byte classes")
    stacked = np.concatenate([resolved[name].next[:, :n_atoms] for name in names], axis=0)
    class_of_atom, first_atom = group_rows(np.ascontiguousarray(stacked.T))
    # atoms ascend with bytes, so classes numbered by first atom are numbered by first byte
    class_of_byte = class_of_atom[np.array(alphabet.atom_of_byte, dtype=np.int64)]
    return class_of_byte.tolist(), first_atom.tolist()
