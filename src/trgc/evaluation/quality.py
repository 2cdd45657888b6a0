"""`trgc quality`: load the tasks and the model, run the arms, write report, plot and runs."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path

from trgc import __version__
from trgc.atomic import atomic_write
from trgc.decode.sampler import SamplerSettings
from trgc.evaluation.quality_report import markdown, plot_png, summarize
from trgc.evaluation.quality_run import HFModel, QualityModel, run_quality
from trgc.evaluation.quality_tasks import load_tasks
from trgc.limits import read_file


def run_experiment(
    tasks_path: Path | str,
    arms: list[str],
    model: str | QualityModel,
    *,
    out: Path | str,
    settings: SamplerSettings,
    seed: int = 0,
    plot: bool = True,
    runs_path: Path | str | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> dict:
    """Run the experiment and write `out` (markdown), `out` with suffix .png (the plot, unless
    `plot` is False) and optionally `runs_path` (one JSON line per run, outputs included: a
    private diagnostic, unlike the report). Returns the summary document."""
    out = Path(out)
    tasks = load_tasks(tasks_path)
    load_s = 0.0
    if isinstance(model, str):
        from trgc.integrations.smollm2 import load_model

        loaded = load_model(model)
        load_s = loaded.load_seconds
        model = HFModel(loaded)
    start = time.perf_counter()
    runs, facts = run_quality(tasks, arms, model, settings=settings, seed=seed, progress=progress)
    facts.update(
        model=model.name,
        tokenizer=str(model.table.sha256),
        tasks=len(tasks),
        tasks_file=Path(tasks_path).as_posix(),
        tasks_sha256=hashlib.sha256(read_file(tasks_path, "benchmark")).hexdigest(),
        sampler=json.dumps(settings.to_dict(), sort_keys=True, separators=(",", ":")),
        seed=seed,
        trgc_version=__version__,
        load_s=load_s,
        wall_s=time.perf_counter() - start,
    )
    summary = summarize(runs)
    plot_path = out.with_suffix(".png") if plot else None
    if plot_path is not None:
        atomic_write(plot_path, plot_png(summary, runs))
    text = markdown(summary, runs, facts, None if plot_path is None else plot_path.name)
    atomic_write(out, text.encode("utf-8"))
    if runs_path is not None:
        lines = [
            json.dumps(r.__dict__, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            for r in runs
        ]
        atomic_write(runs_path, ("\n".join(lines) + "\n").encode("utf-8"))
    return {
        "report": str(out),
        "plot": None if plot_path is None else str(plot_path),
        "facts": facts,
        **summary,
        "runs": [r.public() for r in runs],
    }
