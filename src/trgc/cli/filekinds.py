"""Recognise trgc's own file kinds by their bytes, to point a user at the right command.

When a command refuses a file because it is not the kind it reads (a token table given to
`compile`, a trace given to `inspect`), the reader's error says what is wrong with the bytes
("invalid UTF-8", "wrong magic") but not what the file is. `redirect_hint` sniffs the file
named by the error and, when it is another trgc kind, replaces the hint with the command that
reads it. Sniffing reads at most `SNIFF_BYTES` of the file and at most 16 decompressed bytes of
a zstd frame, so it is cheap and bounded; it never changes the error's code or exit status.

Kinds: a zstd frame (or raw bytes) whose content starts with the artifact magic `TRGA`, the
token-table magic `TRGCTOK\\0`, the mask-cache magic `TRGCTRM\\0` or the logits-sidecar magic
`TRGCLGT1`; a JSON line whose `protocol` is `trgc-trace-1` (a trace); a TOML `[lock]` table of
`format = "trgc-lock-1"` (a lock file); text starting with `%trg` (a trg-1 grammar).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from trgc.errors import TrgcError

SNIFF_BYTES = 256 * 1024  # two zstd blocks: enough to reach the first content bytes
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
CONTENT_MAGICS: tuple[tuple[bytes, str], ...] = (
    (b"TRGA", "artifact"),
    (b"TRGCTOK\x00", "token_table"),
    (b"TRGCTRM\x00", "mask_cache"),
    (b"TRGCLGT1", "logits_sidecar"),
)
# kind -> (what it is, the command that reads it); {path} is the file as the user named it
KINDS: dict[str, tuple[str, str]] = {
    "artifact": ("a trgc artifact (.trga)", "read it with trgc inspect {path}, trgc check or trgc generate"),
    "token_table": ("a trgc token table (.trt)", "read it with trgc tokenizer inspect {path}, or pass it as --tokenizer/-t"),
    "mask_cache": ("a trgc mask cache (.trm, written by trgc masks precompute)", "it is read together with its artifact and tokenizer, not on its own"),
    "logits_sidecar": ("the logits sidecar of a trace", "replay the trace beside it: trgc replay {trace}"),
    "trace": ("a trgc decoding trace", "read it with trgc replay {path} or trgc trace stats {path}"),
    "lock": ("a trgc lock file", "check it with trgc verify --lock {path}"),
    "grammar": ("a trg-1 grammar", "compile it with trgc compile {path}"),
}  # fmt: skip
# error code -> the kind(s) the failing reader expected: a file of another trgc kind gets a hint
EXPECTED: dict[str, frozenset[str]] = {
    "E_NOT_AN_ARTIFACT": frozenset({"artifact"}),
    "E_ARTIFACT_MAGIC": frozenset({"artifact"}),
    "E_TOKENIZER_TABLE_MAGIC": frozenset({"token_table"}),
    "E_TOKENIZER_FORMAT": frozenset({"token_table"}),
    "E_TRACE_FORMAT": frozenset({"trace"}),
    "E_LOCK_INVALID": frozenset({"lock"}),
    "E_INVALID_UTF8": frozenset({"grammar"}),
    "E_NUL_BYTE": frozenset({"grammar"}),
    "E_TRG_HEADER": frozenset({"grammar"}),
    "E_SCHEMA_JSON": frozenset({"grammar"}),
    "E_ENVELOPE_JSON": frozenset(),
    "E_EVIDENCE_JSON": frozenset(),
    "E_EVIDENCE_SCHEMA": frozenset(),
    "E_TOOLCALL_JSON": frozenset(),
    "E_QUALITY_TASKS": frozenset(),
}
_LOCK_FORMAT = re.compile(rb'^\s*format\s*=\s*"trgc-lock-1"', re.MULTILINE)


def _content_head(head: bytes) -> bytes:
    """The first bytes inside a zstd frame (or `head` itself when it is not one)."""
    if not head.startswith(ZSTD_MAGIC):
        return head
    import zstandard

    decompressor = zstandard.ZstdDecompressor().decompressobj()
    out = b""
    try:  # small pieces: each yields at most one block (128 KiB), so memory stays bounded
        for start in range(0, len(head), 1024):
            out += decompressor.decompress(head[start : start + 1024])
            if len(out) >= 16:
                break
    except zstandard.ZstdError:
        return b""
    return out[:16]


def sniff(path: Path) -> str | None:
    """The trgc kind of the file at `path` (see the module docstring), or None."""
    try:
        with path.open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError:
        return None
    content = _content_head(head)
    for magic, kind in CONTENT_MAGICS:
        if content.startswith(magic):
            return kind
    if head.startswith(ZSTD_MAGIC):
        return None
    text = head.removeprefix(b"\xef\xbb\xbf")
    if text.lstrip().startswith(b"%trg"):
        return "grammar"
    if b"[lock]" in text and _LOCK_FORMAT.search(text):
        return "lock"
    first = text.split(b"\n", 1)[0]
    if first.startswith(b"{") and b"trgc-trace-" in first:
        try:
            record = json.loads(first)
        except ValueError:
            return None
        if isinstance(record, dict) and str(record.get("protocol", "")).startswith("trgc-trace-"):
            return "trace"
    return None


def redirect_hint(error: TrgcError) -> None:
    """If `error` refused a file that is another trgc kind, say what it is and what reads it."""
    expected = EXPECTED.get(error.code)
    if expected is None or not error.source:
        return
    path = Path(error.source)
    if not path.is_file():
        return
    kind = sniff(path)
    if kind is None or kind in expected:
        return
    what, command = KINDS[kind]
    trace = error.source.removesuffix(".logits.zst")
    error.hint = f"{error.source} is {what}; " + command.format(path=error.source, trace=trace)
    error.details.setdefault("file_kind", kind)
