"""`trgc keywords | conformance jsts | coverage`: the trj-1 keyword matrix and its measurements."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from trgc.cli.common import (
    JsonOption,
    UnknownKeywordsOption,
    print_json,
    print_table,
    reporting_errors,
    stderr_console,
    stdout_console,
)
from trgc.errors import EXIT_DIFFERENT, EXIT_INTERNAL

SeparatorsOption = Annotated[
    str,
    typer.Option(
        "--whitespace",
        "--separators",
        metavar="MODE",
        help="Whitespace the artifacts are compiled with and instances are written with: "
        "`compact` (`,` `:`, the default for measurements, as the corpora's canonical form), "
        "`pretty` (`, ` `: `) or `flexible` (instances written compact).",
    ),
]

MemberOrderOption = Annotated[
    str,
    typer.Option(
        "--member-order",
        metavar="ORDER",
        help="JSON Schema only: `declared` (the default: members in declared order, the order a "
        "generator writes) or `any` (the declared members of objects with at most six of them in "
        "any order, each once; additional members still last; larger objects keep declared "
        "order). Recorded in the artifact, so it changes the identity.",
    ),
]

conformance_app = typer.Typer(
    name="conformance",
    help="Measure trj-1 against upstream test suites, with a committed classification as a ratchet.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@reporting_errors
def keywords_command(as_json: JsonOption = False) -> None:
    """Print the trj-1 keyword matrix: every JSON Schema keyword trgc knows, its status
    (supported, normalised, ignored-by-design, unsupported), what it applies to and how the
    profile reads it. Keywords outside the matrix are refused with E_UNSUPPORTED_KEYWORD."""
    from trgc.grammar.schema.keywords import KEYWORDS, PROFILE_RULES, SUPPORTED_FORMATS

    if as_json:
        print_json(
            {
                "keywords": [
                    {"name": k.name, "status": k.status, "applies_to": k.applies_to, "note": k.note}
                    for k in KEYWORDS
                ],
                "formats": list(SUPPORTED_FORMATS),
                "profile_rules": PROFILE_RULES,
            }
        )
        return
    from rich.table import Table

    table = Table(title="trj-1 keyword matrix", title_justify="left")
    for column in ("keyword", "status", "applies to", "note"):
        table.add_column(column)
    for k in KEYWORDS:
        table.add_row(k.name, k.status, k.applies_to, k.note)
    print_table(table)


@reporting_errors
def jsts_command(
    path: Annotated[
        Path,
        typer.Argument(
            metavar="PATH",
            help="A checkout of the JSON Schema Test Suite (its tests/draft2020-12 folder is read) "
            "or the draft2020-12 folder itself.",
        ),
    ],
    baseline: Annotated[
        Path,
        typer.Option(
            "--baseline",
            metavar="FILE",
            help="The committed classification every case is compared with (a missing file is "
            "an error unless --update creates it).",
        ),
    ] = Path("tests/data/jsts-classification.json"),
    update: Annotated[
        bool,
        typer.Option(
            "--update", help="Write this run's classification to --baseline (accepts improvements)."
        ),
    ] = False,
    separators: SeparatorsOption = "compact",
    unknown_keywords: UnknownKeywordsOption = "error",
    as_json: JsonOption = False,
) -> None:
    """Run the official JSON Schema Test Suite (draft 2020-12) against trj-1.

    Every case is classified required, outside-profile (with the profile rule) or unsupported
    (with the keyword). Required cases pass when the artifact accepts the instance's canonical
    serialisation exactly when the suite says it is valid. Exit status 1 when a required case
    fails, an invalid instance is accepted, a case is missing from the baseline, or a case got
    worse than the baseline; improvements are reported and accepted with --update.
    """
    from trgc.atomic import atomic_write
    from trgc.evaluation.conformance import (
        baseline_document,
        compare,
        load_baseline,
        run_suite,
        summary,
    )
    from trgc.limits import read_file

    committed = load_baseline(baseline, missing_ok=update)  # before the long run
    results = run_suite(path, separators=separators, unknown_keywords=unknown_keywords)
    ratchet = compare(results, committed)
    info = summary(results)
    revision_file = path / "REVISION"
    revision = (
        read_file(revision_file, "benchmark").decode("utf-8", "replace").strip()
        if revision_file.is_file()
        else None
    )
    wrote = False
    if update and not ratchet.failures:
        text = (
            json.dumps(
                baseline_document(results, revision), indent=1, sort_keys=True, ensure_ascii=False
            )
            + "\n"
        )
        atomic_write(baseline, text.encode("utf-8"))
        wrote = True
    ok = ratchet.ok or (wrote and not ratchet.failures)
    doc = {
        "ok": ok,
        "summary": info,
        "regressions": ratchet.regressions,
        "improvements": ratchet.improvements,
        "failures": ratchet.failures,
        "missing": ratchet.missing,
        "stale": ratchet.stale,
        "baseline": str(baseline),
        "updated": wrote,
    }
    if as_json:
        print_json(doc)
    else:
        console = stdout_console()
        cats = info["categories"]
        console.print(
            f"{info['cases']} cases: {cats.get('required', 0)} required ({info['required_passed']} pass), "
            f"{cats.get('outside-profile', 0)} outside-profile, {cats.get('unsupported', 0)} unsupported; "
            f"{info['invalid_accepted']} invalid instances accepted",
            markup=False,
        )
        for label, items in (
            ("failure", ratchet.failures),
            ("regression", ratchet.regressions),
            ("missing from baseline", ratchet.missing),
            ("improvement", ratchet.improvements),
        ):
            for item in items[:50]:
                console.print(f"  {label}: {item}", markup=False)
        if wrote:
            console.print(f"wrote {baseline}", markup=False)
    if not ok:
        raise typer.Exit(EXIT_DIFFERENT)


@reporting_errors
def coverage_command(
    path: Annotated[
        Path,
        typer.Argument(
            metavar="PATH",
            help="A JSONSchemaBench folder: one sub-folder of *.json schemas per subset.",
        ),
    ],
    instances: Annotated[
        Path | None,
        typer.Option(
            "--instances",
            metavar="DIR",
            help="Folder of <Subset>.jsonl.gz instance files (default: jsonschemabench-instances beside PATH, if present).",
        ),
    ] = None,
    subset: Annotated[
        list[str] | None,
        typer.Option("--subset", metavar="NAME", help="Only this subset (repeatable)."),
    ] = None,
    per_subset: Annotated[
        int | None,
        typer.Option(
            "--per-subset",
            metavar="N",
            help="Only the first N schemas (by file name) of each subset.",
        ),
    ] = None,
    separators: SeparatorsOption = "compact",
    open_objects: Annotated[
        bool,
        typer.Option(
            "--open-objects",
            help="Compile with open objects (undeclared members admitted after the declared ones).",
        ),
    ] = False,
    ignore_keyword: Annotated[
        list[str] | None,
        typer.Option(
            "--ignore-keyword",
            metavar="NAME",
            help="Treat this keyword outside the matrix as an annotation (repeatable), e.g. the "
            "benchmark's neutralised _format and _uniqueItems. Matrix keywords cannot be ignored.",
        ),
    ] = None,
    unknown_keywords: UnknownKeywordsOption = "error",
    member_order: MemberOrderOption = "declared",
    peer: Annotated[
        str | None,
        typer.Option(
            "--peer",
            metavar="NAME",
            help="Also run a peer on the same schemas and instance bytes: `llguidance` (needs "
            "the llguidance package). Its compiled and passing counts are reported beside trgc's.",
        ),
    ] = None,
    peer_tokenizer: Annotated[
        Path,
        typer.Option(
            "--peer-tokenizer",
            metavar="FILE",
            help="The Hugging Face tokenizer.json (or .json.zst) the peer tokenizes instances with.",
        ),
    ] = Path("tokenizers/qwen3/tokenizer.json.zst"),
    as_json: JsonOption = False,
) -> None:
    """Compile every schema of JSONSchemaBench and check the upstream instances (MaskBench style).

    Reports per subset: compiled, unsupported (by keyword), failed (by code), and for compiled
    schemas with instances how many pass (every valid instance accepted in canonical form,
    every invalid one rejected). Exit status 1 when any invalid instance is accepted; 70 when
    a schema met an internal error (the run goes on, and the report lists each one).
    """
    from trgc.evaluation.coverage import report, run_coverage, subsets_of

    if instances is None:
        beside = path.parent / "jsonschemabench-instances"
        instances = beside if beside.is_dir() else None
    chosen = subset or subsets_of(path)
    peer_runner = None
    if peer is not None:
        from trgc.evaluation.peers import make_peer

        peer_runner = make_peer(peer, peer_tokenizer)
    total = sum(len(sorted((path / s).glob("*.json"))[:per_subset]) for s in chosen)
    if as_json or not sys.stderr.isatty():
        results = run_coverage(
            path,
            instances,
            subsets=chosen,
            per_subset=per_subset,
            separators=separators,
            open_objects=open_objects,
            ignore_keywords=tuple(ignore_keyword or ()),
            unknown_keywords=unknown_keywords,
            member_order=member_order,
            peer=peer_runner,
        )
    else:
        from rich.progress import Progress

        with Progress(transient=True, console=stderr_console()) as bar:
            task = bar.add_task("compiling", total=total)
            results = run_coverage(
                path,
                instances,
                subsets=chosen,
                per_subset=per_subset,
                separators=separators,
                open_objects=open_objects,
                ignore_keywords=tuple(ignore_keyword or ()),
                unknown_keywords=unknown_keywords,
                member_order=member_order,
                peer=peer_runner,
                progress=lambda: bar.advance(task),
            )
    doc = report(results)
    if as_json:
        print_json(doc)
    else:
        from rich.table import Table

        table = Table(title="trj-1 coverage", title_justify="left")
        columns = ["subset", "schemas", "compiled", "%", "unsupported", "failed", "passing"]
        if peer_runner is not None:
            columns += [f"{peer} compiled", f"{peer} passing"]
        for column in columns + ["top unsupported"]:
            table.add_column(
                column, justify="left" if column in ("subset", "top unsupported") else "right"
            )
        for name, s in doc["subsets"].items():
            top = ", ".join(f"{k} {v}" for k, v in list(s["unsupported_by_keyword"].items())[:3])
            row = [
                name,
                str(s["schemas"]),
                str(s["compiled"]),
                f"{s['compiled_pct']:.1f}",
                str(s["unsupported"]),
                str(sum(s["failed_by_code"].values())),
                f"{s['passing']}/{s['with_instances']}",
            ]
            if peer_runner is not None:
                p = s.get("peer", {"compiled": 0, "passing": 0})
                row += [str(p["compiled"]), str(p["passing"])]
            table.add_row(*row, top)
        console = stdout_console()
        print_table(table, console)
        t = doc["total"]
        console.print(
            f"total {t['compiled']}/{t['schemas']} compiled, {t['passing']} passing, {t['wrongly_accepted']} invalid "
            f"instances accepted; {t['order_only_refusals']} valid instances refused only for member order; "
            f"compile ms median {t['compile_ms_median']}, p90 {t['compile_ms_p90']}",
            markup=False,
        )
        if "peer" in t:
            console.print(
                f"{peer}: {t['peer']['compiled']}/{t['schemas']} compiled, {t['peer']['passing']} passing, "
                f"{t['peer']['wrongly_accepted']} invalid instances accepted",
                markup=False,
            )
    if doc["total"]["internal_errors"]:
        stderr_console().print(
            "internal errors (please report): " + "; ".join(doc["total"]["internal_errors"]),
            markup=False,
        )
        raise typer.Exit(EXIT_INTERNAL)
    if doc["total"]["wrongly_accepted"]:
        raise typer.Exit(EXIT_DIFFERENT)


def register(app: typer.Typer) -> None:
    app.command("keywords")(keywords_command)
    conformance_app.command("jsts")(jsts_command)
    app.add_typer(conformance_app)
    app.command("coverage")(coverage_command)
