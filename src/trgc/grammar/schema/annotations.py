"""The unknown-keyword policy: what a name outside the keyword matrix means, in each mode.

The default mode (`error`) is the report's rule: a keyword outside the matrix is an error. The
`annotate` mode reads such names as the specification does (unknown keywords are annotations)
and records each one, so the artifact says exactly what it did not enforce. Three constructs
that look harmless but would silently drop a constraint get the same treatment: a vendor
keyword (`x-*`) whose value is a schema, a `format` name no validator knows, and (draft-04..07)
an assertion beside `$ref` that the target does not repeat. In every mode a name that is one
or two edits away from an assertion keyword (`emum`, `maxLenght`, `requried`, `Required`) is an
error: it is far more likely a typo than an annotation, and reading it as an annotation would
drop the constraint the author meant.

Recorded names, sorted in the artifact's options: the keyword itself (`alias`), `format:NAME`
for an unknown format, `$ref-sibling:KEYWORD` for a draft-07 sibling of `$ref`.
"""

from __future__ import annotations

from trgc.grammar.schema.keywords import ANNOTATION, KEYWORDS, status_of

MODES = ("error", "annotate")

# keywords a typo may be aiming at: every keyword of the matrix that constrains values
ASSERTIONS: tuple[str, ...] = tuple(
    sorted(
        k.name
        for k in KEYWORDS
        if k.status != ANNOTATION
        and not k.name.endswith("*")
        and k.name not in ("$defs", "definitions", "id")
    )
)


def _distance(a: str, b: str, cap: int) -> int:
    """Levenshtein distance of `a` and `b`, or `cap + 1` once it is certainly larger than `cap`."""
    if abs(len(a) - len(b)) > cap:
        return cap + 1
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        if min(current) > cap:
            return cap + 1
        previous = current
    return previous[-1]


def allowed_edits(keyword: str) -> int:
    """How many edits still count as a misspelling of `keyword`: 2 for names of seven or more
    characters, 1 for four to six, none (a different case only) for shorter ones, so that short
    annotations (`note`, `info`, `min`) are not mistaken for `not`, `if` or `id`."""
    return 2 if len(keyword) >= 7 else 1 if len(keyword) >= 4 else 0


def misspelt(name: str) -> str | None:
    """The assertion keyword `name` is probably a misspelling of (ignoring case), or None.

    Names starting with `_` are deliberate (the common way to switch a keyword off, as
    JSONSchemaBench's `_format`), and names the matrix knows are never misspellings.
    """
    if status_of(name) is not None or name.startswith("_"):
        return None
    lowered = name.lower()
    best: tuple[int, str] | None = None
    for keyword in ASSERTIONS:
        cap = allowed_edits(keyword)
        d = _distance(lowered, keyword.lower(), cap)
        if d <= cap and (best is None or d < best[0]):
            best = (d, keyword)
    return None if best is None else best[1]


def holds_schema(value: object) -> bool:
    """A JSON object with at least one assertion keyword of the matrix: it reads as a schema."""
    return isinstance(value, dict) and any(
        isinstance(k, str) and status_of(k) not in (None, ANNOTATION) for k in value
    )
