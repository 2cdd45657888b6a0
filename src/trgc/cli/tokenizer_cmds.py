"""`trgc tokenizer build | inspect | verify`: token-byte tables from real vocabularies."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from trgc.cli.common import (
    JsonOption,
    print_json,
    print_table,
    refuse_overwriting_inputs,
    reporting_errors,
    stderr_console,
    stdout_console,
)

tokenizer_app = typer.Typer(
    name="tokenizer",
    help="Token-byte tables: build one from a tokenizer, inspect it, verify it against an "
    "independent implementation.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

SOURCE_HELP = (
    "A tokenizer folder (detected by its files) or file: tokenizer.json, vocab.json or encoder.json "
    "(with merges.txt / vocab.bpe beside it), *.tiktoken or a tiktoken tokenizer.model (with "
    "special_tokens.json), or a SentencePiece *.model. Files may be zstd-compressed (*.zst)."
)
EOS_HELP = "Use this EOS/EOG id instead of the configured ones (repeat for several)."
SPECIALS_HELP = (
    "Special-token sidecar for a tiktoken rank file (default: special_tokens.json beside it)."
)


def _source_files(source: Path, specials: Path | None) -> list[Path | None]:
    """The files a build reads: the source (or every file of a source folder) and --specials."""
    files: list[Path | None] = [source, specials]
    if os.path.isdir(source):
        files.extend(path for path in sorted(source.iterdir()) if os.path.isfile(path))
    return files


def _build(source: Path, eos: list[int] | None, vocab_size: int | None, specials: Path | None):
    from trgc.tokenizer.load import build_table

    return build_table(source, eos=eos or None, vocab_size=vocab_size, specials=specials)


@tokenizer_app.command("build")
@reporting_errors
def build_command(
    source: Annotated[Path, typer.Argument(metavar="SOURCE", help=SOURCE_HELP)],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Write the table here (.trt, zstd, atomic). Without it, only report.",
        ),
    ] = None,
    eos: Annotated[list[int] | None, typer.Option("--eos", metavar="ID", help=EOS_HELP)] = None,
    vocab_size: Annotated[
        int | None,
        typer.Option(
            "--vocab-size",
            metavar="N",
            help="Pad the table to N ids with unused entries (e.g. the model's embedding size, 151936 for Qwen3).",
        ),
    ] = None,
    specials: Annotated[
        Path | None, typer.Option("--specials", metavar="FILE", help=SPECIALS_HELP)
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Build the token-byte table of a tokenizer and print its sha256 identity.

    Every id gets its exact bytes and a kind (normal, byte fallback, special, unused). Special
    tokens have no bytes and are matched by name; added tokens that are not special keep their
    bytes. Duplicate byte sequences, tokens that are not valid UTF-8 alone and empty tokens are
    reported. An unknown or ambiguous layout is an error naming what is missing, never a guess."""
    refuse_overwriting_inputs({"--output": output}, _source_files(source, specials))
    table = _build(source, eos, vocab_size, specials)
    if output is not None:
        table.save(output)
    counts = table.counts()
    if as_json:
        print_json(
            {
                "sha256": table.sha256,
                "output": str(output) if output is not None else None,
                "vocab_size": table.vocab_size,
                "counts": counts,
                "eos_ids": list(table.eos_ids),
                "family": table.metadata.get("family"),
                "source_format": table.metadata.get("source_format"),
            }
        )
        return
    console = stdout_console()
    console.print(table.sha256, markup=False)
    if output is not None:
        sys.stderr.write(
            f"wrote {output}: {table.vocab_size:,} ids ({counts['normal']:,} normal, {counts['byte']:,} byte, "
            f"{counts['special']:,} special, {counts['unused']:,} unused), EOS {list(table.eos_ids)}\n"
        )


@tokenizer_app.command("inspect")
@reporting_errors
def inspect_command(
    path: Annotated[
        Path,
        typer.Argument(
            metavar="PATH", help="A built table (.trt) or a tokenizer SOURCE (built in memory)."
        ),
    ],
    token: Annotated[
        list[int] | None,
        typer.Option(
            "--token", metavar="ID", help="Also show this token's kind and bytes (repeatable)."
        ),
    ] = None,
    no_trie: Annotated[
        bool, typer.Option("--no-trie", help="Skip building the trie for its statistics.")
    ] = False,
    specials: Annotated[
        Path | None, typer.Option("--specials", metavar="FILE", help=SPECIALS_HELP)
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Show a token table: identity, counts by kind, special tokens, EOS ids, trie statistics
    (nodes, max depth, branching) and the reports (duplicates, non-UTF-8 tokens, empty tokens)."""
    from trgc.errors import TrgcError
    from trgc.tokenizer.load import load_tokenizer
    from trgc.tokenizer.summary import describe, show_token

    table = load_tokenizer(path, **({"specials": specials} if specials is not None else {}))
    info = describe(table, with_trie=not no_trie)
    for i in token or []:
        if not 0 <= i < table.vocab_size:
            raise TrgcError("E_USAGE", f"--token {i} is outside 0..{table.vocab_size - 1}")
    info["tokens"] = [show_token(table, i) for i in token or []]
    if as_json:
        print_json(info)
        return
    _render_inspect(info)


def _render_inspect(info: dict) -> None:
    from rich.table import Table

    console = stdout_console()
    meta = info["metadata"]
    console.print(f"[bold]{info['sha256']}[/]")
    console.print(
        f"family {meta.get('family')}, source {meta.get('source_format')}, {info['vocab_size']:,} ids",
        markup=False,
    )
    counts = Table(title="ids by kind", show_header=True)
    for kind in info["counts"]:
        counts.add_column(kind, justify="right")
    counts.add_row(*(f"{v:,}" for v in info["counts"].values()))
    print_table(counts, console)
    eos = ", ".join(f"{e['id']} {e['name'] or e['bytes']}" for e in info["eos"]) or "none"
    console.print(f"EOS/EOG: {eos}  ({meta.get('eos_source')})", markup=False)
    specials = list(info["special_tokens"].items())
    shown = ", ".join(f"{n}={i}" for n, i in specials[:12]) + (
        f", … ({len(specials)} in all)" if len(specials) > 12 else ""
    )
    console.print(f"special tokens: {shown or 'none'}", markup=False)
    added = list(info["added_not_special"].items())
    if added:
        console.print(
            "added, not special (keep bytes): " + ", ".join(f"{n}={i}" for n, i in added[:12]),
            markup=False,
        )
    rep = info["reports"]
    console.print(
        f"reports: {rep.get('duplicate_groups', 0)} duplicate byte sequences, {rep.get('non_utf8_count', 0):,} tokens "
        f"not valid UTF-8 alone, {rep.get('empty_count', 0)} empty tokens",
        markup=False,
    )
    if "trie" in info:
        t = info["trie"]
        console.print(
            f"trie: {t['nodes']:,} nodes, {t['leaves']:,} leaves, max depth {t['max_depth']}, root children "
            f"{t['root_children']}, mean children of internal nodes {t['mean_children_internal']}",
            markup=False,
        )
    for tok in info["tokens"]:
        console.print(
            f"token {tok['id']}: {tok['kind']} {tok['name'] or ''} hex={tok['hex']} text={tok['text']!r}",
            markup=False,
        )


@tokenizer_app.command("verify")
@reporting_errors
def verify_command(
    source: Annotated[Path, typer.Argument(metavar="SOURCE", help=SOURCE_HELP)],
    probe: Annotated[
        Path | None,
        typer.Option(
            "--probe",
            "-p",
            metavar="FILE",
            help="Probe corpus (UTF-8); each line is a document, and the whole file one more. "
            "Default: the corpus shipped with trgc (ASCII, code, JSON, tool-call tags, CJK, "
            "emoji, combining marks, other scripts, whitespace runs).",
        ),
    ] = None,
    table_path: Annotated[
        Path | None,
        typer.Option(
            "--table",
            metavar="FILE",
            help="Verify this built .trt instead of building from SOURCE.",
        ),
    ] = None,
    eos: Annotated[list[int] | None, typer.Option("--eos", metavar="ID", help=EOS_HELP)] = None,
    specials: Annotated[
        Path | None, typer.Option("--specials", metavar="FILE", help=SPECIALS_HELP)
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Check the token table against an independent implementation (tokenizers, tiktoken or
    sentencepiece reading the original files): encode every probe document, concatenate the
    table's bytes for the ids, compare with the text. Also compares vocabulary size, special
    ids and every token's bytes with what the library yields for that id (for tokenizer.json:
    its vocabulary string through the library's byte alphabet or decoder), and reports the
    count. Exit 1 on any mismatch."""
    from trgc.errors import TrgcError
    from trgc.limits import read_file
    from trgc.tokenizer.load import load_tokenizer
    from trgc.tokenizer.verify import default_probe, verify_table

    if probe is None:
        text, probe_name = default_probe()
    else:
        probe_name = str(probe)
        try:
            text = read_file(probe, "probe").decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TrgcError(
                "E_USAGE", f"probe corpus is not UTF-8 at byte {exc.start}", source=str(probe)
            ) from None
    table = (
        load_tokenizer(table_path)
        if table_path is not None
        else _build(source, eos, None, specials)
    )
    report = _with_progress(
        lambda progress: verify_table(source, table, text, specials=specials, progress=progress),
        as_json,
    )
    doc = {"sha256": table.sha256, "source": str(source), "probe": probe_name, **report.to_dict()}
    if as_json:
        print_json(doc)
    else:
        _render_verify(doc)
    if not report.ok:
        raise typer.Exit(1)


def _with_progress(run, as_json: bool):
    if as_json or not sys.stderr.isatty():
        return run(None)
    from rich.progress import Progress

    with Progress(transient=True, console=stderr_console()) as bar:
        task = bar.add_task("probing", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        return run(progress)


def _render_verify(doc: dict) -> None:
    console = stdout_console()
    status = "[bold green]ok[/]" if doc["ok"] else "[bold red]MISMATCH[/]"
    console.print(
        f"{status} {doc['sha256']} vs {doc['implementation']}: {doc['documents']} documents, {doc['tokens']:,} tokens, "
        f"{doc['normalized_documents']} changed by normalisation, {doc['checked_token_bytes']:,} token byte strings compared"
        + (
            f" ({doc['inferred_token_bytes']:,} through the 13 bytes no library call yields alone)"
            if doc["inferred_token_bytes"]
            else ""
        )
    )
    for problem in doc["problems"]:
        console.print(f"  problem: {problem}", markup=False)
    for m in doc["mismatches"]:
        console.print(
            f"  document {m['document']}: first difference at byte {m['first_diff']}, token #{m['token_index']} "
            f"id {m['token_id']} ours={m['ours']} expected={m['expected']}; ids {m['ids']}",
            markup=False,
        )


def register(app: typer.Typer) -> None:
    app.add_typer(tokenizer_app)
