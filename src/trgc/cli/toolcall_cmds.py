"""`trgc toolcall`: compile an OpenAI-format tool list into a tool-call envelope artifact for
one model family, and optionally check it against a tokenizer (a thin shell over
`trgc.compiler.toolcall` and `trgc.engine.toolcall_check`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from trgc.cli.common import (
    JsonOption,
    LimitOption,
    LimitsFileOption,
    print_json,
    print_table,
    read_input,
    refuse_overwriting_inputs,
    reporting_errors,
    stderr_console,
    stdout_console,
)
from trgc.errors import EXIT_DIFFERENT, TrgcError


@reporting_errors
def toolcall_command(
    tools: Annotated[
        str,
        typer.Argument(
            metavar="TOOLS.json",
            help='A JSON array of tools in the OpenAI function format ({"type": "function", '
            '"function": {"name", "description", "parameters"}} or the bare {"name", '
            '"description", "parameters"}); `-` reads standard input.',
        ),
    ],
    family: Annotated[
        str,
        typer.Option(
            "--family",
            metavar="FAMILY",
            help="The envelope to constrain: `qwen` (<tool_call> JSON </tool_call>), `llama3` "
            "(Llama 3.1 JSON, optionally after <|python_tag|>) or `deepseek` "
            "(<｜tool▁calls▁begin｜> … NAME ```json … ```). See docs/toolcall.md.",
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            metavar="OUT.trga",
            help="Write the artifact here (zstd file, written atomically). Without it the tools "
            "are still compiled and the identity printed.",
        ),
    ] = None,
    separators: Annotated[
        str | None,
        typer.Option(
            "--whitespace",
            "--separators",
            metavar="MODE",
            help="JSON whitespace inside the arguments, as for `trgc compile`: `pretty` (`, ` `: `, "
            "what every family's template writes; the default), `compact` (`,` `:`) or "
            "`flexible` (bounded JSON whitespace). `--separators` is its older name.",
        ),
    ] = None,
    open_objects: Annotated[
        bool,
        typer.Option(
            "--open-objects",
            help="Admit argument members the schemas do not declare (objects are closed by default).",
        ),
    ] = False,
    tokenizer: Annotated[
        Path | None,
        typer.Option(
            "--tokenizer",
            "-t",
            metavar="T",
            help="A token table (.trt) or tokenizer folder to bind the artifact to; fails with "
            "E_SPECIAL_TOKEN_MISSING if an envelope marker is not in its vocabulary.",
        ),
    ] = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="With --tokenizer: check where the constraint engages (markers are tokens, the "
            "open marker is allowed in free text, no EOS inside the envelope, at each tool's "
            "arguments only `{`-tokens and the merged `{}` exactly when no argument is "
            "required). Exit status 1 if a check fails.",
        ),
    ] = False,
    unconstrained_arguments: Annotated[
        list[str] | None,
        typer.Option(
            "--unconstrained-arguments",
            metavar="NAME",
            help="Leave this tool's arguments unconstrained: any JSON object inside the envelope "
            "instead of its schema (repeatable). For a schema outside trj-1, which is otherwise an "
            "error for the whole list; recorded in the artifact and reported, never silent.",
        ),
    ] = None,
    limit: LimitOption = None,
    limits_file: LimitsFileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Compile a tool list into a tool-call constraint for one model family.

    Free text is allowed until the family's open marker; from there the envelope is matched
    byte for byte as the family's chat template writes it, the tool name selects the
    argument schema (lowered through trj-1), and EOS is impossible until the envelope is
    complete. Prints the artifact's identity `sha256:<hex>`. Exit status: 0 compiled (and
    checked), 1 --check found a problem, 2 invalid input (with a stable error code), 3 a
    limit was exceeded.
    """
    from trgc.artifact.codec import compress, encode
    from trgc.atomic import atomic_write
    from trgc.compiler.toolcall import compile_toolcall
    from trgc.grammar.toolcall import load_tool_json, parse_tools
    from trgc.limits import resolve_limits

    if check and tokenizer is None:
        raise TrgcError("E_USAGE", "--check needs --tokenizer")
    refuse_overwriting_inputs({"--output": output}, [tools, tokenizer, limits_file])
    limits = resolve_limits(limit, limits_file)
    source = "<stdin>" if tools == "-" else tools
    data = read_input(tools, limits.input_bytes, "the tool list")
    try:
        value = load_tool_json(data, limits)
    except TrgcError as error:
        error.source = error.source or source
        raise
    artifact = compile_toolcall(
        value if isinstance(value, list) else data,
        family=family,
        separators=separators,
        open_objects=open_objects,
        limits=limits,
        source=source,
        unconstrained_arguments=tuple(unconstrained_arguments or ()),
    )
    parsed = parse_tools(value, limits)
    file_bytes = compress(encode(artifact))
    if output is not None:
        atomic_write(output, file_bytes)
    report = None
    if tokenizer is not None:
        from trgc.engine.matcher import Matcher
        from trgc.engine.toolcall_check import check_toolcall
        from trgc.tokenizer.load import load_tokenizer

        table = load_tokenizer(tokenizer)
        if check:
            report = check_toolcall(artifact, table, parsed)
        else:
            Matcher(artifact, table)
    options = artifact.metadata["options"]
    free = options.get("unconstrained_arguments", [])
    if free and not as_json:
        stderr_console().print(
            "note: the arguments of "
            + ", ".join(free)
            + " are unconstrained (any JSON object, not checked against their schemas)",
            markup=False,
        )
    if as_json:
        document = {
            "sha256": artifact.sha256,
            "source": source,
            "family": options["family"],
            "tools": options["tools"],
            "unconstrained_arguments": free,
            "markers": options["markers"],
            "output": None if output is None else str(output),
            "size": len(file_bytes),
            "states": sum(m.n_states for m in artifact.machines),
        }
        if report is not None:
            document["check"] = report.to_dict()
        print_json(document)
    else:
        typer.echo(artifact.sha256)
        if report is not None:
            _render(report)
    if report is not None and not report.ok:
        raise typer.Exit(EXIT_DIFFERENT)


def _render(report) -> None:
    from rich.table import Table

    console = stdout_console()
    markers = ", ".join(f"{m['name']} = {m['id']} ({m['kind']})" for m in report.markers)
    console.print(f"markers: {markers}", markup=False)
    if report.start:
        console.print(
            f"free text: {report.start['allowed']:,} tokens allowed, open marker allowed: "
            f"{report.start['open_marker_allowed']}, EOS allowed: {report.start['eos_allowed']}",
            markup=False,
        )
    if report.region:
        console.print(
            f"after the open marker: {report.region['allowed']:,} tokens allowed, EOS allowed: "
            f"{report.region['eos_allowed']}, forced bytes {report.region['forced']!r}",
            markup=False,
        )
    if report.tools:
        table = Table(title="at the arguments", title_justify="left")
        for column in ("tool", "envelope tokens", "allowed", "EOS", "only {", "{}", '{"'):
            table.add_column(column)
        for t in report.tools:
            table.add_row(
                t["name"],
                str(t["prefix_tokens"]),
                f"{t['allowed']:,}",
                str(t["eos_allowed"]),
                str(t["only_open_brace"]),
                str(t["merged_empty_object_allowed"]),
                str(t["merged_brace_quote_allowed"]),
            )
        print_table(table, console)
    for problem in report.problems:
        console.print(f"problem: {problem['message']}", markup=False)
    console.print("check: ok" if report.ok else "check: FAILED", markup=False)


def register(app: typer.Typer) -> None:
    app.command("toolcall")(toolcall_command)
