"""The one exception type of trgc and the registry of its stable error codes.

Every user-fixable failure is a `TrgcError` whose `code` is listed in `CODES`; the CLI maps
the code to an exit status in one place (`exit_status`). `docs/errors.md` is generated from
this registry by `scripts/gen_docs.py`, and a test checks that it is fresh.
"""

from __future__ import annotations

from dataclasses import dataclass

# code -> one-line meaning. Grouped by the layer that raises it; keep each group sorted.
CODES: dict[str, str] = {
    # general / CLI
    "E_USAGE": "invalid command-line usage (bad option value, missing file)",
    "E_IO": "a file could not be read or written",
    "E_INTERNAL": "an internal invariant failed; this is a bug in trgc",
    # limits (exit status 3); `E_LIMIT_<NAME>` for every limit in trgc.limits.LIMITS
    "E_LIMIT_INPUT_BYTES": "the input is larger than the input_bytes limit",
    "E_LIMIT_STATES": "the automaton would exceed the states limit",
    "E_LIMIT_TRANSITIONS": "the automaton would exceed the transitions limit",
    "E_LIMIT_COMPILED_BYTES": "the compiled artifact would exceed the compiled_bytes limit",
    "E_LIMIT_OPERATIONS": "compilation exceeded its operation budget",
    "E_LIMIT_REPETITION": "a repetition bound exceeds the repetition limit",
    "E_LIMIT_MAX_DEPTH": "a max_depth value exceeds the max_depth limit",
    "E_LIMIT_NESTING": "the source nests deeper than the nesting limit",
    "E_LIMIT_UNKNOWN": "a --limit or limits file names a limit that does not exist",
    # grammar front end (trg-1)
    # grammar analysis
    # automata
    # artifact
    # tokenizer
    # engine
    # decode
    "E_COMPOSITION_MISMATCH": "a trace names an artifact or tokenizer other than the one given",
    "E_CONSTRAINT_EMPTY_SET": "decoding stopped: the constraint allowed no token",
    "E_LOGIT_POSITIVE_INFINITY": "decoding stopped: a logit was +inf",
    "E_LOGITS_EXHAUSTED": "the logits file has fewer rows than the decoding needed",
    "E_LOGITS_SOURCE": "a logits source is malformed (bad --logits value, shape or dtype)",
    "E_SAMPLER_SETTINGS": "a sampler setting is out of range",
    "E_SAMPLING_FAILURE": "decoding stopped: the sampling filters removed all probability mass",
    "E_SIDECAR_FORMAT": "a trace's logits sidecar is malformed",
    "E_SIDECAR_HASH": "a trace's logits sidecar does not match the SHA-256 recorded in the trace",
    "E_TRACE_FORMAT": "a trace line is malformed, or has an unknown field, type or version",
    "E_TRACE_TRUNCATED": "a trace ends before its final line",
    # tools
}

# Exit statuses from DESIGN.md ("CLI conventions").
EXIT_OK = 0
EXIT_DIFFERENT = 1
EXIT_INVALID = 2
EXIT_LIMIT = 3
EXIT_INTERNAL = 70


@dataclass(frozen=True)
class Span:
    """Where in a source a problem is: 1-based line and column, 0-based byte offset."""

    line: int | None = None
    column: int | None = None
    offset: int | None = None

    def __str__(self) -> str:
        if self.line is not None:
            return f"{self.line}:{self.column}"
        if self.offset is not None:
            return f"byte {self.offset}"
        return ""


class TrgcError(Exception):
    """A failure with a stable `code`, a message naming the offending value, a position and a hint.

    `pointer` is a JSON pointer for errors in JSON inputs (schemas, traces, envelopes);
    `details` carries extra machine-readable fields for `--json` output.
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        span: Span | None = None,
        pointer: str | None = None,
        hint: str | None = None,
        source: str | None = None,
        details: dict | None = None,
    ) -> None:
        if code not in CODES:
            raise ValueError(f"unregistered trgc error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.span = span
        self.pointer = pointer
        self.hint = hint
        self.source = source
        self.details = details or {}

    @property
    def exit_status(self) -> int:
        return exit_status(self.code)

    def location(self) -> str:
        """`file:line:col`, `file:byte N`, `file#/json/pointer` or '' as far as known."""
        parts = [self.source or ""]
        if self.span is not None and str(self.span):
            parts.append(str(self.span))
        where = ":".join(p for p in parts if p)
        if self.pointer is not None:
            where += f"#{self.pointer}"
        return where

    def to_dict(self) -> dict:
        """The machine-readable form printed by `--json` on failure."""
        out: dict = {"code": self.code, "message": self.message}
        if self.source is not None:
            out["source"] = self.source
        if self.span is not None:
            for key in ("line", "column", "offset"):
                value = getattr(self.span, key)
                if value is not None:
                    out[key] = value
        if self.pointer is not None:
            out["pointer"] = self.pointer
        if self.hint is not None:
            out["hint"] = self.hint
        if self.details:
            out["details"] = self.details
        return out

    def __str__(self) -> str:
        where = self.location()
        return f"{self.code}: {where + ': ' if where else ''}{self.message}"


def exit_status(code: str) -> int:
    """The process exit status for an error code: 3 for limits, 70 internal, 2 otherwise."""
    if code.startswith("E_LIMIT_"):
        return EXIT_LIMIT
    if code == "E_INTERNAL":
        return EXIT_INTERNAL
    return EXIT_INVALID
