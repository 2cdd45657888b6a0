"""A summary of an artifact for `trgc inspect`: identity, sizes, states, machines, limits.

Counts are taken from the tables themselves (not from the metadata), so they describe what
the artifact actually contains.
"""

from __future__ import annotations

import numpy as np

from trgc.artifact.codec import FORMAT_VERSION, compress, encode, identity
from trgc.artifact.model import Artifact


def machine_summary(artifact: Artifact) -> list[dict]:
    out = []
    for index, machine in enumerate(artifact.machines):
        table = np.asarray(machine.next)
        out.append(
            {
                "index": index,
                "name": machine.name,
                "states": machine.n_states,
                "accepting": int(np.count_nonzero(machine.accepting)),
                "transitions": int(np.count_nonzero(table >= 0)),
                "call_entries": int(np.count_nonzero(table <= -2)),
                "calls": int(np.asarray(machine.calls).size // 2),
            }
        )
    return out


def summary(artifact: Artifact, *, file_size: int | None = None) -> dict:
    """Everything `trgc inspect` shows, as a JSON-able dict with deterministic content.

    `file_size` is the size of the file the artifact came from; without it the compressed size
    is what `save` would write.
    """
    canonical = encode(artifact)
    metadata = artifact.metadata
    machines = machine_summary(artifact)
    return {
        "sha256": identity(artifact),
        "format_version": FORMAT_VERSION,
        "size": {
            "canonical": len(canonical),
            "compressed": file_size if file_size is not None else len(compress(canonical)),
        },
        "start": metadata.get("start", artifact.machines[0].name),
        "states": sum(m["states"] for m in machines),
        "transitions": sum(m["transitions"] for m in machines),
        "call_entries": sum(m["call_entries"] for m in machines),
        "machines": machines,
        "byte_classes": artifact.n_classes,
        "symbols": artifact.n_symbols,
        "specials": list(artifact.specials),
        "max_depth": artifact.max_depth,
        "limits": metadata.get("limits", {}),
        "source_kind": metadata.get("source_kind"),
        "source_sha256": metadata.get("source_sha256"),
        "features": metadata.get("features", []),
        "compiler": metadata.get("compiler"),
        "options": metadata.get("options", {}),
    }


def byte_class_ranges(artifact: Artifact) -> list[list[tuple[int, int]]]:
    """For each class, its bytes as sorted inclusive ranges (for human display)."""
    ranges: list[list[tuple[int, int]]] = [[] for _ in range(artifact.n_classes)]
    byte_class = artifact.byte_class.tolist()
    for b, c in enumerate(byte_class):
        spans = ranges[c]
        if spans and spans[-1][1] == b - 1:
            spans[-1] = (spans[-1][0], b)
        else:
            spans.append((b, b))
    return ranges
