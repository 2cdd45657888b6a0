"""Regenerate the documentation pages that are derived from code.

    python scripts/gen_docs.py          # rewrite them
    python scripts/gen_docs.py --check  # exit 1 if any committed page is stale

Pages: docs/errors.md (from trgc.errors.CODES), docs/trj-1.md (from the trj-1 keyword matrix),
docs/limits.md (from trgc.limits: the limits and the file caps).
"""

from __future__ import annotations

import sys
from pathlib import Path

from trgc.errors import CODES, exit_status

ROOT = Path(__file__).resolve().parents[1]


def errors_page() -> str:
    lines = [
        "# trgc error codes",
        "",
        "Generated from `src/trgc/errors.py` by `scripts/gen_docs.py`; do not edit by hand.",
        "",
        "Every failure a user can fix carries one of these stable codes. The exit status is 3 for",
        "`E_LIMIT_*`, 70 for `E_INTERNAL` and 2 for every other code; a check that finds a",
        "difference (diff, check rejection, replay divergence, verify mismatch) exits 1 without an",
        "error code. An interrupted command (Ctrl-C) exits 130; `generate` first writes a",
        "cancellation record to its trace. A run whose stdout is closed or whose reader went",
        "away (`| head -c1`) ends quietly with exit 141 ([cli-json.md](cli-json.md)).",
        "",
        "| code | exit | meaning |",
        "| --- | --- | --- |",
    ]
    for code, meaning in CODES.items():
        lines.append(f"| `{code}` | {exit_status(code)} | {meaning} |")
    return "\n".join(lines) + "\n"


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale:,} {unit}"
    return f"{n:,} bytes"


def limits_page() -> str:
    from trgc.limits import DEFAULT_LIMITS, FILE_CAPS, LIMIT_NAMES

    defaults = DEFAULT_LIMITS.to_dict()
    lines = [
        "# trgc limits and file caps",
        "",
        "Generated from `src/trgc/limits.py` by `scripts/gen_docs.py`; do not edit by hand.",
        "",
        "## Limits",
        "",
        "Every stage checks these ceilings before the allocation it guards. Override one with",
        "`--limit NAME=VALUE` (ASCII digits, `_` allowed between them) or a `--limits-file` holding",
        "a `[limits]` table; an unknown name is `E_LIMIT_UNKNOWN`, a value above 2^63 - 1 (what an",
        "artifact's LIMT section can hold) `E_USAGE`. Exceeding one is `E_LIMIT_<NAME>`, exit",
        "status 3.",
        "",
        "| limit | default | error |",
        "| --- | --- | --- |",
    ]
    for name in LIMIT_NAMES:
        value = defaults[name]
        shown = _size(value) if name.endswith("bytes") else f"{value:,}"
        code = f"E_LIMIT_{name.upper()}"
        lines.append(f"| `{name}` | {shown} | `{code}`: {CODES[code]} |")
    lines += [
        "",
        "Projected bounds come before the work they bound. The JSON Schema lowering keeps, per",
        "rule, a lower bound on the NFA states the automaton construction will reserve (a literal",
        "of n bytes n + 1, a class 2, an alternation 2 plus its branches, `x{m,n}` n copies of x,",
        "a shared helper once per use) and stops with `E_LIMIT_STATES` as soon as it passes 4 x",
        "`states`; an enum's members are projected before any node is built; proving n `oneOf`",
        "branches disjoint pairwise is charged n(n-1)/2 x 256 against `operations` before it",
        "starts (branches that are all finite value sets are decided in one pass instead).",
        "",
        "## File caps",
        "",
        "Every file trgc opens is read through one bounded path: the size is checked with `fstat`",
        "before reading (a larger regular file is refused unread) and again while reading, so a",
        "device such as `/dev/zero`, a pipe or a growing file is refused after at most the cap",
        "plus one byte; a reader that knows its kind's magic (an artifact or a `.trm`: a zstd",
        "frame; a `.trt`: a zstd frame or raw `TRGCTOK` bytes; an `npy:` logits file) stops at the",
        "first bytes that lack it, so such a device costs a few bytes, not the cap, and running",
        "out of memory while reading is the kind's error, not an internal one. A cap that",
        "follows a limit moves with it (`--limit`); a zstd container's",
        "cap is the zstd bound of its content cap (content + content/128 + 64 KiB). Files named",
        "inside documents are confined as their formats say: a trace's sidecar is a plain file",
        "name in the trace's directory, artifact and tokenizer paths in a trace header and the",
        "paths in a lock file are relative (an absolute path is `E_TRACE_FORMAT` /",
        "`E_LOCK_INVALID`).",
        "",
        "| kind | cap (default limits) | follows | error | files |",
        "| --- | --- | --- | --- | --- |",
    ]
    for kind, cap in FILE_CAPS.items():
        follows = f"`{cap.limit}`" if cap.limit else "fixed"
        lines.append(
            f"| {kind} | {_size(cap.bytes(DEFAULT_LIMITS))} | {follows} | `{cap.code}` | "
            f"{cap.description} |"
        )
    return "\n".join(lines) + "\n"


def trj1_page() -> str:
    from trgc.grammar.schema.docs import trj1_page as render

    return render()


PAGES = {
    "docs/errors.md": errors_page,
    "docs/trj-1.md": trj1_page,
    "docs/limits.md": limits_page,
}


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for rel, render in PAGES.items():
        path = ROOT / rel
        text = render()
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(rel)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    for rel in stale:
        print(f"stale: {rel} (run python scripts/gen_docs.py)", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
