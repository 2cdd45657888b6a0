"""Aggregating quality runs per arm, and the markdown report with its intervention/accuracy plot.

Rates are fractions of the runs where the metric applies (syntax, schema and profile validity
do not apply to plain tasks; schema validity not to tinycalc expressions). The report holds
aggregates and per-task verdicts only: no prompt or output text (the report's privacy rule for
public aggregate reports).
"""

from __future__ import annotations

import io
from typing import Any

from trgc.evaluation.quality_run import ARMS, Run
from trgc.integrations.deps import require

LIMITATION = (
    "**Read these numbers with the model in mind.** SmolLM2-135M-Instruct is a 135-million-"
    "parameter model: it often does not know the facts asked for, loses track of instructions "
    "and cannot do multi-digit arithmetic. A constraint can only guarantee membership in a "
    'formal language ("JSON complete and profile-valid", never "correct"), so with a model '
    "this small the experiment can show what constraints do to validity and to the intervention "
    "metric I, but accuracy differences between arms are bounded by what the model knows and "
    "are not evidence about larger models. The task set is small (a smoke-sized sealed set); "
    "differences of one or two tasks are noise."
)


def _rate(values: list[Any]) -> float | None:
    applicable = [bool(v) for v in values if v is not None]
    return sum(applicable) / len(applicable) if applicable else None


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    total = 0.0
    for v in present:
        total = total + v
    return total / len(present) if present else None


def summarize(runs: list[Run]) -> dict:
    """Per-arm metrics, and accuracy and mean I per (arm, kind)."""
    arms: dict[str, dict] = {}
    by_kind: dict[str, dict[str, dict]] = {}
    for arm in [a for a in ARMS if any(r.arm == a for r in runs)]:
        rs = [r for r in runs if r.arm == arm]
        tokens = sum(r.tokens for r in rs)
        latency = sum(r.latency_s for r in rs if not r.shared)
        decoded_tokens = sum(r.tokens for r in rs if not r.shared)
        arms[arm] = {
            "runs": len(rs),
            "completion_rate": _rate([r.completed for r in rs]),
            "syntax_valid_rate": _rate([r.syntax for r in rs]),
            "schema_valid_rate": _rate([r.schema for r in rs]),
            "profile_valid_rate": _rate([r.profile for r in rs]),
            "accuracy": _rate([r.correct for r in rs]),
            "field_accuracy": _mean([r.fields for r in rs]),
            "intervention": _mean([r.intervention for r in rs]),
            "tokens_mean": tokens / len(rs),
            "latency_mean_s": _mean([r.latency_s for r in rs]),
            "s_per_token": latency / decoded_tokens if decoded_tokens else None,
        }
        for kind in sorted({r.kind for r in rs}):
            ks = [r for r in rs if r.kind == kind]
            by_kind.setdefault(arm, {})[kind] = {
                "runs": len(ks),
                "accuracy": _rate([r.correct for r in ks]),
                "intervention": _mean([r.intervention for r in ks]),
            }
    return {"arms": arms, "by_kind": by_kind}


def _fmt(value: Any, percent: bool = False, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if percent:
        return f"{100 * value:.0f}%"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def plot_png(summary: dict, runs: list[Run]) -> bytes:
    """PNG bytes: mean intervention I (x) vs accuracy (y), one large marker per arm and a
    small one per (arm, task kind)."""
    matplotlib = require("matplotlib", "plotting the quality report")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"unconstrained": "#4c72b0", "constrained": "#dd8452", "tool": "#55a868"}
    markers = {"extraction": "o", "toolargs": "s", "arithmetic": "^", "plain": "D"}
    fig, ax = plt.subplots(figsize=(8.0, 4.4), dpi=100)
    for arm, kinds in summary["by_kind"].items():
        for kind, m in kinds.items():
            if m["intervention"] is None or m["accuracy"] is None:
                continue
            ax.scatter(
                m["intervention"],
                m["accuracy"],
                s=36,
                alpha=0.6,
                color=colors[arm],
                marker=markers.get(kind, "o"),
            )
    for arm, m in summary["arms"].items():
        if m["intervention"] is None or m["accuracy"] is None:
            continue
        ax.scatter(
            m["intervention"],
            m["accuracy"],
            s=180,
            color=colors[arm],
            edgecolor="black",
            label=f"{arm} (all tasks)",
        )
    for kind, marker in markers.items():
        if any(r.kind == kind for r in runs):
            ax.scatter([], [], marker=marker, color="grey", label=kind)
    ax.set_xlabel("intervention I (mean log p(x*) - log p(x), nats)")
    ax.set_ylabel("semantic accuracy")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title("Intervention vs accuracy (small markers: per task kind; equal runs overlap)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


def markdown(summary: dict, runs: list[Run], facts: dict, plot_name: str | None) -> str:
    """The report text (see the module docstring)."""
    lines = [
        "# trgc quality experiment",
        "",
        LIMITATION,
        "",
        "## Setup",
        "",
        f"- model: `{facts['model']}`; token table `{facts['tokenizer']}` (verified against the "
        "`tokenizers` library before use)",
        f"- tasks: {facts['tasks']} from `{facts['tasks_file']}` (sha256 `{facts['tasks_sha256']}`)",
        f"- sampler: {facts['sampler']}; seed {facts['seed']}; trgc {facts['trgc_version']}",
        f"- {facts['decodes']} decodes for {facts['runs']} (task, arm) runs: a run whose prompt, "
        "constraint and budget equal another arm's is decoded once and shared (plain tasks in "
        "every arm; schema tasks in the constrained and tool arms)",
        f"- model load {facts['load_s']:.1f} s; constraint compilation {facts['compile_s']:.2f} s; "
        f"experiment wall time {facts['wall_s']:.0f} s",
        "",
        "Arms: **unconstrained** (any UTF-8 text; the model's own choices), **constrained** "
        "(trj-1 artifact of the task's schema; plain tasks stay unconstrained), **tool** "
        "(constrained, and arithmetic delegated: the model writes a tinycalc-1 expression under "
        "the task's tool grammar and trgc's tinycalc computes the result).",
        "",
        "## Results per arm",
        "",
        "| arm | runs | completed | syntax valid | schema valid | profile valid | accuracy | "
        "field accuracy | I (mean) | tokens (mean) | latency (mean s) | s/token |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for arm, m in summary["arms"].items():
        lines.append(
            f"| {arm} | {m['runs']} | {_fmt(m['completion_rate'], True)} | "
            f"{_fmt(m['syntax_valid_rate'], True)} | {_fmt(m['schema_valid_rate'], True)} | "
            f"{_fmt(m['profile_valid_rate'], True)} | {_fmt(m['accuracy'], True)} | "
            f"{_fmt(m['field_accuracy'], True)} | {_fmt(m['intervention'], digits=3)} | "
            f"{_fmt(m['tokens_mean'], digits=1)} | {_fmt(m['latency_mean_s'], digits=1)} | "
            f"{_fmt(m['s_per_token'], digits=3)} |"
        )
    lines += [
        "",
        "Completed = stopped by EOS within the token budget. Syntax = one JSON text (tinycalc "
        "expression for the tool arm's arithmetic); schema = valid under the task's JSON Schema "
        "(`jsonschema`); profile = the exact bytes are in the trj-1 language of the schema "
        "(declared member order, canonical number and string forms). Accuracy = all gold values "
        "right (arithmetic: exact decimal; plain: a gold phrase mentioned). I = mean over steps of "
        "log p(x*) - log p(x) under the unmasked distribution (0 when the model's top token is "
        "always taken).",
        "",
        "## Accuracy and I per task kind",
        "",
        "| arm | kind | runs | accuracy | I (mean) |",
        "|---|---|---|---|---|",
    ]
    for arm, kinds in summary["by_kind"].items():
        for kind, m in kinds.items():
            lines.append(
                f"| {arm} | {kind} | {m['runs']} | {_fmt(m['accuracy'], True)} | "
                f"{_fmt(m['intervention'], digits=3)} |"
            )
    if plot_name is not None:
        lines += ["", f"![intervention vs accuracy]({plot_name})"]
    lines += [
        "",
        "## Per task",
        "",
        "| task | kind | arm | constraint | stop | tokens | syntax | schema | profile | correct | I |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        lines.append(
            f"| {r.task} | {r.kind} | {r.arm} | {r.constraint}{' (shared)' if r.shared else ''} | "
            f"{r.stop} | {r.tokens} | {_fmt(r.syntax)} | {_fmt(r.schema)} | {_fmt(r.profile)} | "
            f"{_fmt(r.correct)} | {_fmt(r.intervention, digits=3)} |"
        )
    lines.append("")
    return "\n".join(lines)
