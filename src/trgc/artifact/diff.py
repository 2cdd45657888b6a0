"""Compare two artifacts: structure (metadata, machines, classes, specials) and language.

The language comparison is a breadth-first search over pairs of configurations (one per
artifact, a rejected side becomes "dead"), on the joint alphabet: one representative byte
per pair of byte classes, then every special token named by either artifact. The first pair
whose acceptance differs gives a shortest distinguishing input, and among the shortest the
smallest in (byte, then special name) order. Configurations are bounded by `max_depth`, so the
search space is finite: when it is exhausted the languages are equal; when the node budget or
the length bound stops it first, the result says so ("unknown"), never "equal".
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from trgc.artifact.codec import identity
from trgc.artifact.inspect import machine_summary
from trgc.artifact.model import Artifact
from trgc.artifact.stepper import Frames, initial, is_accepting, is_viable, step

DEFAULT_MAX_NODES = 200_000
DEFAULT_MAX_LENGTH = 256

Item = int | str  # a byte, or the name of a special token


@dataclass(frozen=True)
class LanguageDiff:
    status: str  # "equal", "different" or "unknown"
    witness: tuple[Item, ...] | None  # a shortest input accepted by exactly one side
    accepted_by: str | None  # "a" or "b"
    explored: int
    bound: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "status": self.status,
            "witness": None if self.witness is None else witness_json(self.witness),
            "witness_text": None if self.witness is None else witness_text(self.witness),
            "accepted_by": self.accepted_by,
            "explored": self.explored,
            "bound": self.bound,
        }


def witness_json(witness: tuple[Item, ...]) -> list:
    """Bytes as integers, special tokens as {"special": name}."""
    return [item if isinstance(item, int) else {"special": item} for item in witness]


def witness_text(witness: tuple[Item, ...]) -> str:
    """Printable ASCII as is, other bytes as \\xHH, specials as <<name>>."""
    parts = []
    for item in witness:
        if isinstance(item, str):
            parts.append(f"<<{item}>>")
        elif item == 0x5C:
            parts.append("\\\\")
        elif 0x20 <= item < 0x7F:
            parts.append(chr(item))
        else:
            parts.append(f"\\x{item:02x}")
    return "".join(parts)


def _alphabet(a: Artifact, b: Artifact) -> list[tuple[Item, int | None, int | None]]:
    """(item, symbol in a, symbol in b): one byte per pair of classes, then the specials."""
    seen: set[tuple[int, int]] = set()
    out: list[tuple[Item, int | None, int | None]] = []
    class_a, class_b = a.byte_class.tolist(), b.byte_class.tolist()
    for byte in range(256):
        pair = (class_a[byte], class_b[byte])
        if pair not in seen:
            seen.add(pair)
            out.append((byte, pair[0], pair[1]))
    for name in sorted(set(a.specials) | set(b.specials)):
        out.append((name, a.special_symbol(name), b.special_symbol(name)))
    return out


def _accepts(art: Artifact, frames: Frames | None) -> bool:
    return frames is not None and is_accepting(art, frames)


def _live(art: Artifact, frames: Frames | None) -> Frames | None:
    return frames if frames is not None and is_viable(art, frames) else None


def compare_languages(
    a: Artifact,
    b: Artifact,
    *,
    max_nodes: int = DEFAULT_MAX_NODES,
    max_length: int = DEFAULT_MAX_LENGTH,
) -> LanguageDiff:
    """Search for a shortest input accepted by exactly one of `a` and `b`."""
    bound = {"max_nodes": max_nodes, "max_length": max_length}
    alphabet = _alphabet(a, b)
    start = (_live(a, initial(a)), _live(b, initial(b)))
    parent: dict[tuple, tuple | None] = {start: None}
    queue: deque[tuple[tuple, int]] = deque([(start, 0)])
    exhausted = True
    while queue:
        node, length = queue.popleft()
        fa, fb = node
        if _accepts(a, fa) != _accepts(b, fb):
            return LanguageDiff(
                "different",
                _path(parent, node),
                "a" if _accepts(a, fa) else "b",
                len(parent),
                bound,
            )
        if length >= max_length:
            exhausted = False
            continue
        for item, sym_a, sym_b in alphabet:
            na = None if fa is None or sym_a is None else _live(a, step(a, fa, sym_a))
            nb = None if fb is None or sym_b is None else _live(b, step(b, fb, sym_b))
            child = (na, nb)
            if child == (None, None) or child in parent:
                continue
            if len(parent) >= max_nodes:
                return LanguageDiff("unknown", None, None, len(parent), bound)
            parent[child] = (node, item)
            queue.append((child, length + 1))
    return LanguageDiff("equal" if exhausted else "unknown", None, None, len(parent), bound)


def _path(parent: dict, node: tuple) -> tuple[Item, ...]:
    items: list[Item] = []
    link = parent[node]
    while link is not None:
        node, item = link
        items.append(item)
        link = parent[node]
    return tuple(reversed(items))


def structural_diff(a: Artifact, b: Artifact) -> dict:
    """Differences in metadata keys, machines, byte classes, specials and max_depth."""
    meta_a, meta_b = a.metadata, b.metadata
    metadata = [
        {"key": key, "a": meta_a.get(key), "b": meta_b.get(key)}
        for key in sorted(set(meta_a) | set(meta_b))
        if meta_a.get(key) != meta_b.get(key) or (key in meta_a) != (key in meta_b)
    ]
    by_name_a = {m["name"]: m for m in machine_summary(a)}
    by_name_b = {m["name"]: m for m in machine_summary(b)}
    tables_a = {m.name: m for m in a.machines}
    tables_b = {m.name: m for m in b.machines}
    changed = []
    for name in sorted(set(by_name_a) & set(by_name_b)):
        sa, sb = by_name_a[name], by_name_b[name]
        ma, mb = tables_a[name], tables_b[name]
        same_tables = (
            sa["index"] == sb["index"]
            and np.array_equal(ma.accepting, mb.accepting)
            and np.array_equal(ma.next, mb.next)
            and np.array_equal(ma.calls, mb.calls)
        )
        if not same_tables:
            changed.append(
                {
                    "name": name,
                    "states": [sa["states"], sb["states"]],
                    "transitions": [sa["transitions"], sb["transitions"]],
                    "calls": [sa["calls"], sb["calls"]],
                    "index": [sa["index"], sb["index"]],
                }
            )
    return {
        "metadata": metadata,
        "machines": {
            "removed": sorted(set(by_name_a) - set(by_name_b)),
            "added": sorted(set(by_name_b) - set(by_name_a)),
            "changed": changed,
        },
        "byte_classes": {
            "a": a.n_classes,
            "b": b.n_classes,
            "same": a.n_classes == b.n_classes and bool(np.array_equal(a.byte_class, b.byte_class)),
        },
        "specials": {
            "removed": sorted(set(a.specials) - set(b.specials)),
            "added": sorted(set(b.specials) - set(a.specials)),
        },
        "max_depth": [a.max_depth, b.max_depth],
        "states": [sum(m.n_states for m in a.machines), sum(m.n_states for m in b.machines)],
    }


def diff(
    a: Artifact,
    b: Artifact,
    *,
    max_nodes: int = DEFAULT_MAX_NODES,
    max_length: int = DEFAULT_MAX_LENGTH,
) -> dict:
    """The full comparison `trgc diff` prints: `same` is identity equality."""
    id_a, id_b = identity(a), identity(b)
    same = id_a == id_b
    language = (
        LanguageDiff("equal", None, None, 0, {})
        if same
        else compare_languages(a, b, max_nodes=max_nodes, max_length=max_length)
    )
    return {
        "same": same,
        "a": id_a,
        "b": id_b,
        "structure": structural_diff(a, b),
        "language": language.to_dict(),
    }
