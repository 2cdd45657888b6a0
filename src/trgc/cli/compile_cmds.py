"""`trgc compile | inspect | diff | check`: the artifact commands (a thin shell over
`trgc.artifact`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from trgc.cli.common import (
    JsonOption,
    LimitOption,
    LimitsFileOption,
    MaxWhitespaceOption,
    UnknownKeywordsOption,
    WhitespaceOption,
    print_json,
    print_table,
    read_input,
    refuse_overwriting_inputs,
    reporting_errors,
    stdout_console,
    warn_annotations,
)
from trgc.cli.schema_cmds import MemberOrderOption
from trgc.errors import EXIT_DIFFERENT, EXIT_OK


@reporting_errors
def compile_command(
    src: Annotated[
        str,
        typer.Argument(
            metavar="SRC",
            help="Grammar source (trg-1, `*.trg`) or JSON Schema (trj-1, `*.json` or content starting "
            "with `{`); `-` reads standard input.",
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            metavar="OUT",
            help="Write the artifact here (zstd file, written atomically). Without it the source is "
            "still compiled and checked and its identity printed, but nothing is written.",
        ),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Also reject unreachable rules.")
    ] = False,
    whitespace: WhitespaceOption = "pretty",
    max_whitespace: MaxWhitespaceOption = 8,
    unknown_keywords: UnknownKeywordsOption = "error",
    open_objects: Annotated[
        bool,
        typer.Option(
            "--open-objects",
            help="JSON Schema only: admit undeclared members (after the declared ones) in objects "
            "whose additionalProperties is not false.",
        ),
    ] = False,
    member_order: MemberOrderOption = "declared",
    ignore_keyword: Annotated[
        list[str] | None,
        typer.Option(
            "--ignore-keyword",
            metavar="KEYWORD",
            help="JSON Schema only: treat this keyword outside the trj-1 matrix as an annotation "
            "(repeatable). Recorded in the artifact, so it changes the identity.",
        ),
    ] = None,
    limit: LimitOption = None,
    limits_file: LimitsFileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Compile a grammar or JSON Schema into a canonical artifact and print its identity.

    Prints `sha256:<64 hex>`, the SHA-256 of the artifact's canonical bytes (the same source,
    limits and trgc version always give the same identity). Exit status: 0 compiled, 2 invalid
    source (with a stable error code, position and hint on stderr), 3 a limit was exceeded.
    """
    from trgc.artifact.codec import compress, encode
    from trgc.artifact.inspect import summary
    from trgc.atomic import atomic_write
    from trgc.compiler.sources import compile_source
    from trgc.limits import resolve_limits

    refuse_overwriting_inputs({"--output": output}, [src, limits_file])
    limits = resolve_limits(limit, limits_file)
    data = read_input(src, limits.input_bytes, "the source")
    artifact = compile_source(
        data,
        source="<stdin>" if src == "-" else src,
        limits=limits,
        strict=strict,
        separators=whitespace,
        max_whitespace=max_whitespace,
        open_objects=open_objects,
        ignore_keywords=tuple(ignore_keyword or ()),
        unknown_keywords=unknown_keywords,
        member_order=member_order,
    )
    warn_annotations(artifact)
    file_bytes = compress(encode(artifact))
    if output is not None:
        atomic_write(output, file_bytes)
    if as_json:
        info = summary(artifact, file_size=len(file_bytes))
        print_json(
            {
                "sha256": info["sha256"],
                "source": "<stdin>" if src == "-" else src,
                "source_sha256": info["source_sha256"],
                "output": None if output is None else str(output),
                "size": info["size"],
                "states": info["states"],
                "transitions": info["transitions"],
                "machines": [m["name"] for m in info["machines"]],
                "features": info["features"],
                "annotations": artifact.metadata.get("options", {}).get("annotations", []),
            }
        )
    else:
        typer.echo(artifact.sha256)


def _size(n: int) -> str:
    return f"{n:,} B" if n < 10_000 else f"{n / 1024:,.1f} KiB"


@reporting_errors
def inspect_command(
    artifact_path: Annotated[
        Path, typer.Argument(metavar="ART", help="An artifact file written by `trgc compile -o`.")
    ],
    classes: Annotated[
        bool, typer.Option("--classes", help="Also list the bytes of every byte class.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Show an artifact's identity, sizes, states, machines, byte classes, specials, limits,
    source hash and features. The file is fully validated first (exit 2 with an
    artifact error code such as E_ARTIFACT_CORRUPT if it is damaged)."""
    from trgc.artifact.check import describe_bytes
    from trgc.artifact.codec import load_artifact
    from trgc.artifact.inspect import byte_class_ranges, summary

    artifact = load_artifact(artifact_path)
    info = summary(artifact, file_size=artifact_path.stat().st_size)
    ranges = byte_class_ranges(artifact)
    if as_json:
        if classes:
            info["byte_class_ranges"] = [[list(span) for span in spans] for spans in ranges]
        print_json(info)
        return
    from rich.table import Table

    console = stdout_console()
    rows = [
        ("identity", info["sha256"]),
        (
            "file",
            f"{artifact_path} ({_size(info['size']['compressed'])} zstd, {_size(info['size']['canonical'])} canonical)",
        ),
        ("format", f"trga version {info['format_version']}"),
        ("compiler", _compiler_text(info["compiler"])),
        ("source", f"{info['source_kind'] or '?'} {info['source_sha256'] or '(none)'}"),
        ("start", info["start"]),
        (
            "states",
            f"{info['states']:,} ({info['transitions']:,} transitions, {info['call_entries']:,} call entries)",
        ),
        ("byte classes", str(info["byte_classes"])),
        ("specials", ", ".join(info["specials"]) or "(none)"),
        ("max_depth", str(info["max_depth"])),
        ("features", ", ".join(info["features"]) or "(none)"),
        (
            "limits",
            ", ".join(f"{k}={v:,}" for k, v in sorted(info["limits"].items())) or "(not recorded)",
        ),
    ]
    if info["options"]:
        rows.append(("options", ", ".join(f"{k}={v}" for k, v in sorted(info["options"].items()))))
    for key, value in rows:
        console.print(f"{key:<13} {value}", markup=False)
    machines = Table(title="machines", title_justify="left")
    for column in ("#", "name", "states", "accepting", "transitions", "call edges"):
        machines.add_column(column, justify="left" if column == "name" else "right")
    for m in info["machines"]:
        machines.add_row(
            str(m["index"]),
            m["name"],
            f"{m['states']:,}",
            f"{m['accepting']:,}",
            f"{m['transitions']:,}",
            f"{m['calls']:,}",
        )
    print_table(machines, console)
    if classes:
        table = Table(title="byte classes", title_justify="left")
        table.add_column("class", justify="right")
        table.add_column("bytes")
        for index, spans in enumerate(ranges):
            table.add_row(
                str(index), describe_bytes(tuple(b for lo, hi in spans for b in range(lo, hi + 1)))
            )
        print_table(table, console)


def _compiler_text(compiler: object) -> str:
    if isinstance(compiler, dict):
        return f"{compiler.get('name', '?')} {compiler.get('version', '?')}"
    return str(compiler) if compiler is not None else "(not recorded)"


@reporting_errors
def diff_command(
    a: Annotated[Path, typer.Argument(metavar="A", help="First artifact file.")],
    b: Annotated[Path, typer.Argument(metavar="B", help="Second artifact file.")],
    max_nodes: Annotated[
        int,
        typer.Option(
            "--max-nodes",
            min=1,
            help="Node budget of the language comparison (pairs of configurations explored).",
        ),
    ] = 200_000,
    max_length: Annotated[
        int,
        typer.Option(
            "--max-length",
            min=0,
            help="Longest distinguishing input searched for, in bytes and special tokens.",
        ),
    ] = 256,
    as_json: JsonOption = False,
) -> None:
    """Compare two artifacts: metadata, machines, state counts, byte classes, specials, and
    their languages (a shortest input accepted by exactly one of them, if one is found within
    the bounds; otherwise "equal" when the search was exhaustive or "unknown" when a bound
    stopped it). Exit status: 0 identical artifacts, 1 different, 2 unreadable input."""
    from trgc.artifact.codec import load_artifact
    from trgc.artifact.diff import diff

    result = diff(load_artifact(a), load_artifact(b), max_nodes=max_nodes, max_length=max_length)
    if as_json:
        print_json(result)
    else:
        _print_diff(result)
    raise typer.Exit(EXIT_OK if result["same"] else EXIT_DIFFERENT)


def _print_diff(result: dict) -> None:
    console = stdout_console()
    if result["same"]:
        console.print(f"same: {result['a']}", markup=False)
        return
    console.print(f"different: {result['a']} vs {result['b']}", markup=False)
    structure = result["structure"]
    for entry in structure["metadata"]:
        console.print(f"  metadata {entry['key']}: {entry['a']!r} -> {entry['b']!r}", markup=False)
    machines = structure["machines"]
    for name in machines["removed"]:
        console.print(f"  machine removed: {name}", markup=False)
    for name in machines["added"]:
        console.print(f"  machine added: {name}", markup=False)
    for entry in machines["changed"]:
        console.print(
            f"  machine changed: {entry['name']} (states {entry['states'][0]} -> {entry['states'][1]}, "
            f"transitions {entry['transitions'][0]} -> {entry['transitions'][1]})",
            markup=False,
        )
    classes = structure["byte_classes"]
    if not classes["same"]:
        console.print(f"  byte classes: {classes['a']} -> {classes['b']}", markup=False)
    specials = structure["specials"]
    for name in specials["removed"]:
        console.print(f"  special removed: {name}", markup=False)
    for name in specials["added"]:
        console.print(f"  special added: {name}", markup=False)
    if structure["max_depth"][0] != structure["max_depth"][1]:
        console.print(
            f"  max_depth: {structure['max_depth'][0]} -> {structure['max_depth'][1]}", markup=False
        )
    language = result["language"]
    if language["status"] == "different":
        side = "A" if language["accepted_by"] == "a" else "B"
        console.print(
            f"  language: different; shortest distinguishing input (accepted only by {side}): {language['witness_text']!r}",
            markup=False,
        )
    elif language["status"] == "equal":
        console.print("  language: equal (exhaustive search)", markup=False)
    else:
        bound = language["bound"]
        console.print(
            f"  language: no distinguishing input found within the bound ({bound['max_nodes']:,} nodes, "
            f"length {bound['max_length']}); the languages may still differ",
            markup=False,
        )


@reporting_errors
def check_command(
    artifact_path: Annotated[
        Path, typer.Argument(metavar="ART", help="An artifact file written by `trgc compile -o`.")
    ],
    input_path: Annotated[
        str, typer.Argument(metavar="FILE", help="The bytes to check; `-` reads standard input.")
    ],
    prefix: Annotated[
        bool,
        typer.Option(
            "--prefix",
            help="Accept any input that can still be completed to a member (a viable prefix).",
        ),
    ] = False,
    limit: LimitOption = None,
    limits_file: LimitsFileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Check whether a file's exact bytes belong to the artifact's language.

    Exit status: 0 accepted, 1 rejected (the byte offset and the bytes allowed there are
    printed), 2 unreadable artifact or input. Only bytes are checked: special tokens have no
    bytes, so where the grammar requires one the input is rejected and the allowed special
    names are listed.
    """
    from trgc.artifact.check import check, describe_bytes
    from trgc.artifact.codec import load_artifact
    from trgc.limits import resolve_limits

    limits = resolve_limits(limit, limits_file)
    artifact = load_artifact(artifact_path)
    data = read_input(input_path, limits.input_bytes, "the checked input")
    result = check(artifact, data, prefix=prefix)
    hint = None
    if not result.accepted and not prefix:
        from trgc.compiler.schema import whitespace_hint

        hint = whitespace_hint(artifact, data)
    if as_json:
        document = result.to_dict()
        document["length"] = len(data)
        document["artifact"] = artifact.sha256
        document["whitespace_hint"] = hint
        print_json(document)
    else:
        console = stdout_console()
        what = "viable prefix" if prefix else "member"
        if result.accepted:
            console.print(
                f"accepted: {len(data):,} bytes form a {what} of the language", markup=False
            )
        else:
            if result.offset < len(data):
                got = data[result.offset]
                console.print(
                    f"rejected at byte {result.offset}: unexpected {describe_bytes((got,))}",
                    markup=False,
                )
            elif result.reason == "dead_end":
                console.print(
                    f"rejected at byte {result.offset}: the input cannot be completed within max_depth",
                    markup=False,
                )
            else:
                console.print(
                    f"rejected at byte {result.offset}: unexpected end of input", markup=False
                )
            allowed = [describe_bytes(result.allowed_bytes)] if result.allowed_bytes else []
            allowed += [f'special("{name}")' for name in result.allowed_specials]
            if result.end_allowed:
                allowed.append("end of input")
            console.print(
                f"  allowed: {', '.join(allowed) if allowed else 'nothing'}", markup=False
            )
            if hint is not None:
                console.print(f"  hint: {hint}", markup=False)
    raise typer.Exit(EXIT_OK if result.accepted else EXIT_DIFFERENT)


def register(app: typer.Typer) -> None:
    app.command("compile")(compile_command)
    app.command("inspect")(inspect_command)
    app.command("diff")(diff_command)
    app.command("check")(check_command)
