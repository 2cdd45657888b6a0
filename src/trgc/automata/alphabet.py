"""The working alphabet of the automata stage: byte atoms, then special tokens, then calls.

Subset construction and minimisation run over *atoms* instead of 256 single bytes: an atom is
a maximal byte interval that no literal or class of the grammar splits, so every byte range
the grammar uses is a contiguous run of atoms. Specials (sorted by name) and one call symbol
per recursive rule (in rule order) follow the byte atoms. The final byte classes
(`byteclasses.py`) are a coarsening of the byte atoms computed from the finished tables.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from trgc.automata.utf8 import utf8_sequences
from trgc.grammar.ast import Grammar, Kind


@dataclass(frozen=True)
class Alphabet:
    """Atom numbering shared by every machine of one grammar."""

    atom_of_byte: tuple[int, ...]  # byte -> atom
    atom_lo: tuple[int, ...]  # atom -> its smallest byte
    specials: tuple[str, ...]  # sorted special-token names
    calls: tuple[str, ...]  # recursive rule names, one call symbol each
    class_seqs: dict[int, tuple]  # CLASS node index -> its UTF-8 byte-range sequences

    @property
    def n_byte_atoms(self) -> int:
        return len(self.atom_lo)

    @property
    def n_input(self) -> int:
        """Atoms that are input symbols (bytes and specials); calls come after."""
        return len(self.atom_lo) + len(self.specials)

    @property
    def n_atoms(self) -> int:
        return self.n_input + len(self.calls)

    def special_atom(self, name: str) -> int:
        return self.n_byte_atoms + self.specials.index(name)

    def call_atom(self, rule: str) -> int:
        return self.n_input + self.calls.index(rule)

    def describe(self, atom: int) -> str:
        """A readable name: `0x22 '"'` for a byte, `0x61 'a'..0x7a 'z'` for a byte range,
        `special("x")`, `call r`."""
        if atom < self.n_byte_atoms:
            lo = self.atom_lo[atom]
            hi = self.atom_lo[atom + 1] - 1 if atom + 1 < self.n_byte_atoms else 255
            return describe_byte(lo) if lo == hi else f"{describe_byte(lo)}..{describe_byte(hi)}"
        if atom < self.n_input:
            return f'special("{self.specials[atom - self.n_byte_atoms]}")'
        return f"call {self.calls[atom - self.n_input]}"


def describe_byte(b: int) -> str:
    """`0x22 '"'` for printable ASCII, `0x0a` otherwise."""
    if 0x20 <= b < 0x7F:
        return f"0x{b:02x} {chr(b)!r}" if b != 0x27 else f'0x{b:02x} "\'"'
    return f"0x{b:02x}"


@functools.lru_cache(maxsize=1024)
def _class_sequences(ranges: tuple[tuple[int, int], ...]) -> tuple[tuple, frozenset[int]]:
    """A class's UTF-8 byte-range sequences and the atom boundaries they need (every range's
    first byte and the byte after its last), memoised for the process: the schemas a server
    compiles use the same few classes (digits, hex, a string's raw characters) again and
    again. Bounded; both values are immutable."""
    seqs = tuple(utf8_sequences(ranges))
    bounds = frozenset(b for seq in seqs for lo, hi in seq for b in (lo, hi + 1))
    return seqs, bounds


def build_alphabet(grammar: Grammar, recursive_rules: tuple[str, ...]) -> Alphabet:
    """Collect every byte boundary, special name and call symbol of the grammar's arena."""
    starts = {0}
    literal_bytes: set[int] = set()  # each is a boundary, and so is the byte after it
    specials: set[str] = set()
    class_seqs: dict[int, tuple] = {}
    literal, char_class, special = Kind.LITERAL, Kind.CLASS, Kind.SPECIAL  # read once
    for index, (kind, _, _, _, payload) in enumerate(grammar.nodes):
        if kind == literal:
            literal_bytes.update(payload)
        elif kind == char_class:
            class_seqs[index], bounds = _class_sequences(tuple(payload))
            starts.update(bounds)
        elif kind == special:
            specials.add(payload)
    starts.update(literal_bytes)
    starts.update(b + 1 for b in literal_bytes)
    starts.discard(256)
    atom_lo = tuple(sorted(starts))
    atom_of_byte: list[int] = []
    for atom, (lo, hi) in enumerate(zip(atom_lo, (*atom_lo[1:], 256), strict=True)):
        atom_of_byte.extend([atom] * (hi - lo))
    return Alphabet(
        tuple(atom_of_byte), atom_lo, tuple(sorted(specials)), recursive_rules, class_seqs
    )
