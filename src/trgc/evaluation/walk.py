"""Seeded random walks over an artifact: sample accepted byte strings for soundness tests.

From the start configuration the walk picks an allowed symbol (uniformly, or, with a
probability that grows with the length, the one that gets closest to acceptance) and a random
byte of that symbol's class; it stops at an accepting configuration with a probability that
also grows with the length. Walks that exceed `max_bytes` are dropped. Every sampled string is
in the artifact's language by construction; soundness tests then validate it with an
independent JSON Schema validator.
"""

from __future__ import annotations

import random

from trgc.artifact import stepper
from trgc.artifact.model import Artifact


def _distances(artifact: Artifact) -> tuple[list[float], ...]:
    """Fewest symbols from each (machine, state) to an accepting state of that machine."""
    inf = float("inf")
    rows = [m.next.tolist() for m in artifact.machines]
    calls = [m.calls.tolist() for m in artifact.machines]
    dist = tuple([0.0 if acc else inf for acc in m.accepting.tolist()] for m in artifact.machines)
    changed = True
    while changed:  # values only decrease and are integers or inf: this terminates
        changed = False
        for m, table in enumerate(rows):
            for s in range(len(table) - 1, -1, -1):
                best = dist[m][s]
                for action in sorted(set(table[s]) - {-1}):
                    if action >= 0:
                        candidate = 1 + dist[m][action]
                    else:
                        callee, ret = calls[m][-2 - action]
                        candidate = dist[callee][0] + dist[m][ret]
                    if candidate < best:
                        best = candidate
                if best < dist[m][s]:
                    dist[m][s] = best
                    changed = True
    return dist


def _remaining(dist: tuple[list[float], ...], frames: stepper.Frames) -> float:
    """Fewest symbols to finish every frame, the iterations a repeat frame still needs included."""
    return sum(dist[m][s] + needed * dist[m][0] for m, s, _, needed in frames)


def sample(artifact: Artifact, rng: random.Random, *, max_bytes: int = 400) -> bytes | None:
    """One accepted byte string of at most `max_bytes` bytes, or None if the walk ran too long."""
    dist = artifact._cache.get("walk_distances")
    if dist is None:
        dist = _distances(artifact)
        artifact._cache["walk_distances"] = dist
    classes: dict[int, list[int]] = {}
    for byte, cls in enumerate(artifact.byte_class.tolist()):
        classes.setdefault(cls, []).append(byte)
    frames = stepper.initial(artifact)
    out = bytearray()
    while len(out) <= max_bytes:
        pressure = len(out) / max_bytes
        if stepper.is_accepting(artifact, frames) and rng.random() < 0.15 + pressure:
            return bytes(out)
        options: list[tuple[float, int, stepper.Frames]] = []
        for symbol in range(artifact.n_classes):
            nxt = stepper.step(artifact, frames, symbol)
            if nxt is not None and stepper.is_viable(artifact, nxt):
                options.append((_remaining(dist, nxt), symbol, nxt))
        if not options:
            return bytes(out) if stepper.is_accepting(artifact, frames) else None
        if rng.random() < 0.2 + pressure:
            best = min(o[0] for o in options)
            options = [o for o in options if o[0] == best]
        _, symbol, frames = options[rng.randrange(len(options))]
        out.append(rng.choice(classes[symbol]))
    return None
