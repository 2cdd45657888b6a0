"""trj-1 conformance against the official JSON Schema Test Suite (draft 2020-12), with a ratchet.

Every test case gets a category:
  * `required`: the schema compiles and the artifact must accept the instance's canonical
    serialisation exactly when the suite says it is valid;
  * `outside-profile`: the schema compiles but the profile excludes the valid instance, for a
    named profile rule (closed objects, integer form, ...), or the schema is unsatisfiable;
  * `unsupported`: the schema uses a keyword outside the matrix (named) or is refused with
    another code (named).
An artifact that accepts an instance the suite calls invalid is a soundness failure in any
category. The committed classification is the baseline: a case that moves to a lower
category (required > outside-profile > unsupported) or fails is a regression; a case that
moves up is an improvement, accepted with `update`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from trgc.artifact.check import check
from trgc.compiler.schema import compile_schema
from trgc.errors import TrgcError
from trgc.grammar.schema.canonical import canonical_instance
from trgc.grammar.schema.lower import FAMILY_KEYWORDS, json_type
from trgc.limits import read_file

REQUIRED = "required"
OUTSIDE = "outside-profile"
UNSUPPORTED = "unsupported"
RANK = {REQUIRED: 2, OUTSIDE: 1, UNSUPPORTED: 0}
SUITE_DIR = Path("tests") / "draft2020-12"
UNSUPPORTED_CODES = {
    "E_UNSUPPORTED_KEYWORD": None,
    "E_REMOTE_REF": "$ref (remote)",
    "E_ONEOF_OVERLAP": "oneOf (overlapping branches)",
    "E_UNIQUE_ITEMS": "uniqueItems (unbounded element domain)",
}


@dataclass(frozen=True)
class CaseResult:
    """One suite test case: where it is, what the suite says, and what trgc did."""

    id: str  # "<file>#<group index>/<test index>"
    description: str
    valid: bool
    category: str
    reason: str  # keyword or profile rule or "agrees"
    passed: bool  # required: agreement; others: no invalid instance accepted

    def to_dict(self) -> dict:
        return {"category": self.category, "reason": self.reason, "description": self.description}


def _explain(schema: object, instance: object, accepted_open: bool) -> str:
    """The profile rule that excludes a valid instance the artifact rejects."""
    if accepted_open:
        return "closed-objects"
    if _contains_integral_float(instance):
        return "integer-form"
    if not isinstance(schema, dict):
        return "unexplained"
    if "const" in schema or "enum" in schema:
        return "canonical-constants"
    if "type" not in schema:
        implied = {FAMILY_KEYWORDS[k] for k in schema if k in FAMILY_KEYWORDS}
        kind = json_type(instance)
        kind = "number" if kind == "integer" else kind
        if "$ref" in schema or (implied and kind not in implied):
            return "type-inference"
    if "format" in schema:
        return "format-shape"
    if _has_untyped_subschema(schema):
        return "type-inference"
    return "unexplained"


def _has_untyped_subschema(schema: object) -> bool:
    stack = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "type" not in item and any(k in item for k in FAMILY_KEYWORDS):
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _contains_integral_float(value: object) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and item.is_integer():
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def run_suite(
    path: Path, *, separators: str = "compact", unknown_keywords: str = "error"
) -> list[CaseResult]:
    """Compile every 2020-12 suite schema and check every instance; one result per test case."""
    folder = path / SUITE_DIR if (path / SUITE_DIR).is_dir() else path
    if not folder.is_dir():
        raise TrgcError("E_IO", f"no draft2020-12 test folder under {path}", source=str(path))
    results: list[CaseResult] = []
    for file in sorted(folder.glob("*.json")):
        try:
            groups = json.loads(read_file(file, "benchmark"))
        except (ValueError, RecursionError) as exc:
            raise TrgcError("E_IO", f"cannot read suite file: {exc}", source=str(file)) from None
        for gi, group in enumerate(groups):
            results.extend(_run_group(file.name, gi, group, separators, unknown_keywords))
    return results


def _run_group(
    name: str, gi: int, group: dict, separators: str, unknown_keywords: str = "error"
) -> list[CaseResult]:
    schema = group["schema"]
    out: list[CaseResult] = []

    def case(ti: int, test: dict, category: str, reason: str, passed: bool) -> CaseResult:
        return CaseResult(
            f"{name}#{gi}/{ti}",
            f"{group['description']} / {test['description']}",
            bool(test["valid"]),
            category,
            reason,
            passed,
        )

    try:
        artifact = compile_schema(schema, separators=separators, unknown_keywords=unknown_keywords)
    except TrgcError as error:
        if error.code in UNSUPPORTED_CODES:
            reason = UNSUPPORTED_CODES[error.code] or error.details.get("keyword", "?")
            return [case(ti, t, UNSUPPORTED, reason, True) for ti, t in enumerate(group["tests"])]
        if error.code == "E_UNSATISFIABLE":
            # no value satisfies the schema in the profile: every valid instance must be
            # explained by the profile (open objects admit it), or the refusal is wrong
            try:
                opened = compile_schema(
                    schema,
                    separators=separators,
                    open_objects=True,
                    unknown_keywords=unknown_keywords,
                )
            except TrgcError:
                opened = None
            out = []
            for ti, t in enumerate(group["tests"]):
                if not t["valid"]:
                    out.append(case(ti, t, OUTSIDE, "unsatisfiable", True))
                    continue
                data = canonical_instance(schema, t["data"], separators)
                admitted = opened is not None and check(opened, data).accepted
                reason = _explain(schema, t["data"], admitted)
                out.append(case(ti, t, OUTSIDE, reason, reason != "unexplained"))
            return out
        return [case(ti, t, UNSUPPORTED, error.code, True) for ti, t in enumerate(group["tests"])]
    opened = None
    for ti, test in enumerate(group["tests"]):
        data = canonical_instance(schema, test["data"], separators)
        accepted = check(artifact, data).accepted
        if accepted == test["valid"]:
            out.append(case(ti, test, REQUIRED, "agrees", True))
        elif accepted:
            out.append(case(ti, test, REQUIRED, "accepts an invalid instance", False))
        else:
            if opened is None:
                try:
                    opened = compile_schema(
                        schema,
                        separators=separators,
                        open_objects=True,
                        unknown_keywords=unknown_keywords,
                    )
                except TrgcError:  # e.g. open members make a union unpredictable: no evidence
                    opened = False
            accepted_open = opened is not False and check(opened, data).accepted
            out.append(case(ti, test, OUTSIDE, _explain(schema, test["data"], accepted_open), True))
    return out


@dataclass(frozen=True)
class Ratchet:
    """The comparison of a run with the committed classification."""

    regressions: list[str]
    improvements: list[str]
    failures: list[str]  # required cases that disagree, or invalid instances accepted
    missing: list[str]  # cases in the run that the baseline does not classify
    stale: list[str]  # baseline cases the run no longer has

    @property
    def ok(self) -> bool:
        return not (self.regressions or self.failures or self.missing)


def baseline_document(results: list[CaseResult], revision: str | None = None) -> dict:
    return {
        "suite": "JSON-Schema-Test-Suite draft2020-12",
        "revision": revision,
        "cases": {r.id: r.to_dict() for r in results},
    }


def load_baseline(path: Path, *, missing_ok: bool = False) -> dict:
    """The committed classification, read within its cap; a missing file is `E_IO` unless
    `missing_ok` (when the caller is about to create it), never silently an empty baseline."""
    if not path.exists():
        if missing_ok:
            return {"cases": {}}
        raise TrgcError(
            "E_IO",
            "the classification baseline does not exist",
            source=str(path),
            hint="give --baseline FILE (the repository's is tests/data/jsts-classification.json, "
            "relative to its root), or add --update to create it from this run",
        )
    try:
        return json.loads(read_file(path, "benchmark"))
    except (ValueError, RecursionError) as exc:
        raise TrgcError(
            "E_IO", f"cannot read the classification: {exc}", source=str(path)
        ) from None


def compare(results: list[CaseResult], baseline: dict) -> Ratchet:
    cases = baseline.get("cases", {})
    regressions, improvements, failures, missing = [], [], [], []
    for r in results:
        if not r.passed:
            failures.append(r.id)
        old = cases.get(r.id)
        if old is None:
            missing.append(r.id)
            continue
        if RANK[r.category] < RANK[old["category"]]:
            regressions.append(r.id)
        elif RANK[r.category] > RANK[old["category"]]:
            improvements.append(r.id)
    seen = {r.id for r in results}
    stale = sorted(set(cases) - seen)
    return Ratchet(regressions, improvements, failures, missing, stale)


def summary(results: list[CaseResult]) -> dict:
    """Counts per category and reason, and the required pass rate."""
    by_category: dict[str, int] = {}
    reasons: dict[str, dict[str, int]] = {}
    for r in results:
        by_category[r.category] = by_category.get(r.category, 0) + 1
        bucket = reasons.setdefault(r.category, {})
        bucket[r.reason] = bucket.get(r.reason, 0) + 1
    required = [r for r in results if r.category == REQUIRED]
    return {
        "cases": len(results),
        "categories": dict(sorted(by_category.items())),
        "reasons": {k: dict(sorted(v.items())) for k, v in sorted(reasons.items())},
        "required_passed": sum(r.passed for r in required),
        "required": len(required),
        "invalid_accepted": sum(1 for r in results if not r.passed and not r.valid),
    }
