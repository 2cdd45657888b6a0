"""Artifact identities of a JSONSchemaBench sample, recorded once and compared after a change.

A compiler change meant to be invisible (a faster algorithm, a different data structure) must
leave every artifact byte for byte as it was. This compiles the first `--per-subset` schemas of
every subset (sorted by file name) in each `--whitespace` mode, unknown keywords read as
annotations (`unknown_keywords="annotate"`, so that more schemas reach the automata), and records, per (mode, schema),
the artifact's `sha256:` identity or, for a refusal, its error code and message (a conflict's
message names the rule, path and byte, so a changed refusal shows too).

    .venv/bin/python benchmarks/schema_identities.py --write before.json   # on the old code
    .venv/bin/python benchmarks/schema_identities.py --check before.json   # on the new code

`--check` exits 1 and lists the first differences when any outcome differs, 0 when all match.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT.parent / "shared" / "corpora" / "jsonschemabench"
MODES = ("compact", "pretty")


def sample(per_subset: int) -> list[Path]:
    """The first `per_subset` schemas (by name) of every subset, subsets sorted."""
    out: list[Path] = []
    for subset in sorted(p for p in BENCH.iterdir() if p.is_dir()):
        out.extend(sorted(subset.glob("*.json"))[:per_subset])
    return out


def outcome(raw: bytes, mode: str) -> str:
    """`sha256:...` of the compiled artifact, or `CODE: message` of the refusal."""
    from trgc import TrgcError, compile_schema

    try:
        return compile_schema(raw, whitespace=mode, unknown_keywords="annotate").sha256
    except TrgcError as error:
        return f"{error.code}: {error.message}"


def outcomes(per_subset: int, modes: tuple[str, ...], progress: bool) -> dict[str, str]:
    paths = sample(per_subset)
    found: dict[str, str] = {}
    start = time.perf_counter()
    for index, path in enumerate(paths):
        raw = path.read_bytes()
        name = f"{path.parent.name}/{path.name}"
        for mode in modes:
            found[f"{mode} {name}"] = outcome(raw, mode)
        if progress and (index + 1) % 50 == 0:
            sys.stderr.write(
                f"{index + 1}/{len(paths)} schemas, {time.perf_counter() - start:.0f} s\n"
            )
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--per-subset", type=int, default=40, help="schemas per subset (default 40)"
    )
    parser.add_argument("--whitespace", choices=MODES, action="append", help="modes (default both)")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path, help="record the outcomes in this JSON file")
    group.add_argument("--check", type=Path, help="compare with outcomes recorded by --write")
    args = parser.parse_args(argv)
    if args.check is not None:
        recorded = json.loads(args.check.read_text(encoding="utf-8"))
        modes, per_subset = tuple(recorded["modes"]), recorded["per_subset"]
    else:
        modes, per_subset = tuple(args.whitespace or MODES), args.per_subset
    found = outcomes(per_subset, modes, sys.stderr.isatty())
    schemas = len(found) // len(modes)
    compiled = sum(v.startswith("sha256:") for v in found.values())
    if args.write is not None:
        document = {"per_subset": per_subset, "modes": list(modes), "outcomes": found}
        args.write.write_text(
            json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8"
        )
        print(
            f"{schemas} schemas x {len(modes)} modes: {compiled} artifacts, "
            f"{len(found) - compiled} refusals recorded in {args.write}"
        )
        return 0
    expected = recorded["outcomes"]
    differ = sorted(k for k in expected.keys() | found.keys() if expected.get(k) != found.get(k))
    for key in differ[:20]:
        print(f"{key}\n  recorded: {expected.get(key)}\n  now:      {found.get(key)}")
    print(
        f"{schemas} schemas x {len(modes)} modes: {compiled} artifacts, "
        f"{len(found) - compiled} refusals; {len(differ)} outcomes differ"
    )
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
