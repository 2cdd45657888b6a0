"""Claim labels: what a finished run guarantees about its output, said exactly.

A constraint guarantees membership in a formal language, never truth (DESIGN.md principle 1),
and only when the run completed. Each run ends with one claim: a stable `id` for pipelines
and a `label` for people, chosen from the stop reason and the kind of language the artifact
defines (`artifact_kind`). The labels follow the report's vocabulary ("JSON complete and
profile-valid", "generation cancelled with partial raw output"); docs/sampling.md lists them.
"""

from __future__ import annotations

from dataclasses import dataclass

from trgc.decode.sampler import (
    STOP_CANCELLED,
    STOP_EMPTY_SET,
    STOP_EOS,
    STOP_EOS_FORCED,
    STOP_MAX_TOKENS,
    STOP_POSITIVE_INFINITY,
    STOP_SAMPLING_FAILURE,
)

KIND_JSON = "json"  # a trj-1 JSON Schema artifact
KIND_TOOLCALL = "toolcall"  # a tool-call envelope artifact
KIND_GRAMMAR = "grammar"  # any other trg-1 grammar
KINDS = (KIND_JSON, KIND_TOOLCALL, KIND_GRAMMAR)

TOOLCALL_FORMAT = "trgc-toolcall-1"


@dataclass(frozen=True)
class Claim:
    id: str
    label: str

    def to_dict(self) -> dict:
        return {"id": self.id, "label": self.label}


_COMPLETE = {
    KIND_JSON: Claim("json_complete_profile_valid", "JSON complete and profile-valid"),
    KIND_TOOLCALL: Claim(
        "toolcall_complete_envelope_valid", "tool-call turn complete and envelope-valid"
    ),
    KIND_GRAMMAR: Claim("complete_in_language", "output complete and in the grammar's language"),
}
_STOPPED = {
    STOP_MAX_TOKENS: Claim(
        "incomplete_max_tokens",
        "generation stopped at max_tokens with partial raw output (incomplete, not valid)",
    ),
    STOP_CANCELLED: Claim("cancelled_partial", "generation cancelled with partial raw output"),
    STOP_EMPTY_SET: Claim(
        "failed_constraint_empty_set",
        "generation failed: the constraint allowed no token (partial raw output)",
    ),
    STOP_SAMPLING_FAILURE: Claim(
        "failed_sampling",
        "generation failed: sampling removed all probability mass (partial raw output)",
    ),
    STOP_POSITIVE_INFINITY: Claim(
        "failed_logit_positive_infinity",
        "generation failed: a logit was +inf (partial raw output)",
    ),
}


def artifact_kind(metadata: dict) -> str:
    """The kind of language an artifact's metadata describes."""
    if metadata.get("options", {}).get("format") == TOOLCALL_FORMAT:
        return KIND_TOOLCALL
    if metadata.get("source_kind") == "trj":
        return KIND_JSON
    return KIND_GRAMMAR


def claim(stop: str, kind: str) -> Claim:
    """The claim of a run that ended with `stop` under an artifact of `kind`."""
    if stop in (STOP_EOS, STOP_EOS_FORCED):
        return _COMPLETE[kind]
    return _STOPPED[stop]
