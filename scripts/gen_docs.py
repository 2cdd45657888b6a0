"""Regenerate the documentation pages that are derived from code.

    python scripts/gen_docs.py          # rewrite them
    python scripts/gen_docs.py --check  # exit 1 if any committed page is stale

Pages: docs/errors.md (from trgc.errors.CODES), docs/trj-1.md (from the trj-1 keyword matrix).
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
        "cancellation record to its trace.",
        "",
        "| code | exit | meaning |",
        "| --- | --- | --- |",
    ]
    for code, meaning in CODES.items():
        lines.append(f"| `{code}` | {exit_status(code)} | {meaning} |")
    return "\n".join(lines) + "\n"


def trj1_page() -> str:
    from trgc.grammar.schema.docs import trj1_page as render

    return render()


PAGES = {"docs/errors.md": errors_page, "docs/trj-1.md": trj1_page}


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
