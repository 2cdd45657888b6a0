"""`trgc calc`, `trgc tool run` and `trgc evidence check`: the deterministic local tools."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from trgc.cli.common import (
    JsonOption,
    print_json,
    read_input,
    read_stdin,
    reporting_errors,
    stdout_console,
)
from trgc.errors import exit_status


@reporting_errors
def calc_command(
    expression: Annotated[
        str,
        typer.Argument(
            metavar="EXPR",
            help="A tinycalc-1 expression, e.g. '1 / 3' or '(2 + 3) * -4.5'. Use '-' to read it "
            "from stdin; put '--' before an expression that starts with '-'.",
        ),
    ],
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the tinycalc-1 result record on stdout (also for errors, with "
            'status "error"; the exit status still reports the failure).',
        ),
    ] = False,
) -> None:
    """Evaluate a tinycalc-1 expression: decimal fixed point at scale 18 in checked signed
    128-bit integers, half-even rounding, no binary floating point (docs/tinycalc.md).

    Prints the canonical value (no trailing zeros). Exit 2 on a syntax, division-by-zero or
    overflow error, 3 when a tinycalc-1 limit (4,096 bytes, 10,000 operations, 256 nested
    parentheses) is exceeded."""
    from trgc.tools import tinycalc

    # the argument's original bytes (argv that is not UTF-8 arrives surrogate-escaped)
    if expression == "-":
        text = read_stdin(tinycalc.DEFAULT_CALC_LIMITS.input_bytes)
    else:
        text = os.fsencode(expression)
    if as_json:
        record = tinycalc.calc_record(text)
        print_json(record)
        if record["status"] != "ok":
            raise typer.Exit(exit_status(record["error"]["code"]))
        return
    result = tinycalc.evaluate(text)
    stdout_console().print(result.value, markup=False)


@reporting_errors
def tool_run_command(
    request: Annotated[
        Path,
        typer.Argument(
            metavar="REQUEST",
            help="A tinyrust-tool-1 request (JSON file; '-' reads stdin).",
        ),
    ],
    as_json: JsonOption = False,
) -> None:
    """Validate a tinyrust-tool-1 request against the compiled tool registry, run the tool
    under its operation budget and print the result record and the reinsertion record.

    Every field is checked (unknown fields are errors); the tool name is only compared with
    the registry, never resolved. Exit 0 when the request was valid and the tool ran (its
    status may still be "error", e.g. division by zero), 2 when the request is rejected
    (envelope, registry and authorization codes), 3 when the input exceeds a limit."""
    from trgc.limits import DEFAULT_LIMITS
    from trgc.tools.envelope import run_request

    data = read_input(request, DEFAULT_LIMITS.input_bytes, "the tool request")
    run = run_request(data, source=str(request))
    if as_json:
        print_json(run.to_dict())
        return
    console = stdout_console()
    result = run.result
    console.print(
        f"{result['tool']}  request {result['request_id']}  status {result['status']}"
        + ("  (truncated)" if result["truncated"] else ""),
        markup=False,
    )
    provenance = result["provenance"]
    console.print(
        f"operations {provenance['operations']:,} of {provenance['operation_budget']:,}"
        f"  stop {provenance['stop_reason']}  result sha256 {result['result_sha256']}",
        markup=False,
    )
    console.print(
        f"implementation {provenance['implementation']} {provenance['implementation_hash']}",
        markup=False,
    )
    console.print("reinsertion record:", markup=False)
    console.print(run.reinsertion_text, markup=False)


@reporting_errors
def tool_list_command(
    as_json: JsonOption = False,
) -> None:
    """List the tools compiled into trgc: name@version, capability, authority class, schema
    hashes (the values a request's `schemas` block must carry), implementation label and
    implementation_hash (SHA-256 over the source files that define it) and limit ceilings."""
    from trgc.tools.registry import REGISTRY

    tools = [definition.describe() for definition in REGISTRY.values()]
    if as_json:
        print_json({"tools": tools})
        return
    console = stdout_console()
    for tool in tools:
        console.print(
            f"{tool['tool']}  {tool['capability']}  authority {tool['authority']}", markup=False
        )
        console.print(f"  input_sha256   {tool['input_sha256']}", markup=False)
        console.print(f"  output_sha256  {tool['output_sha256']}", markup=False)
        console.print(
            f"  implementation {tool['implementation']} {tool['implementation_hash']}",
            markup=False,
        )


@reporting_errors
def tool_template_command(
    tool: Annotated[
        str,
        typer.Argument(
            metavar="NAME@VERSION", help="A registered tool, e.g. calculator.evaluate@1.0.0."
        ),
    ],
    as_json: Annotated[
        bool, typer.Option("--json", help="Accepted for uniformity: the template is always JSON.")
    ] = False,
) -> None:
    """Print a valid request skeleton for a registered tool (schema hashes filled in, input
    fields empty, zero composition ids) to edit into a real request."""
    from trgc.tools.envelope import request_template

    print_json(request_template(tool))


@reporting_errors
def evidence_check_command(
    result: Annotated[
        Path, typer.Argument(metavar="RESULT", help="Extraction result JSON ('-' reads stdin).")
    ],
    source: Annotated[
        list[str] | None,
        typer.Option(
            "--source",
            metavar="NAME=PATH",
            help="A source document; evidence spans name it by the SHA-256 of its bytes (repeatable).",
        ),
    ] = None,
    schema: Annotated[
        Path | None,
        typer.Option(
            "--schema",
            metavar="APP.json",
            help="The application schema (trgc-evidence-schema-1: per-field enum, minimum, "
            "maximum and cross-field rules). The validation flags enum_member, range_ok and "
            "cross_field_ok are recomputed from it and every disagreement is reported; "
            "without it they are taken as claimed (and the report says so).",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Validate an extraction result against its evidence: spans are byte ranges of the
    named sources, `quoted_sha256` must match those bytes, the listed transform of the quote
    must reproduce `value`, and the status rules (supported / unknown / unsupported /
    conflict) must hold. With --schema the validation flags are recomputed from the
    application's rules. Failures are reported, never rewritten.

    Exit 0 when every field validates, 1 when a check found a problem, 2 for malformed input."""
    from trgc.errors import EXIT_DIFFERENT, TrgcError
    from trgc.tools.evidence import (
        MAX_RESULT_BYTES,
        MAX_SOURCE_BYTES,
        check_evidence,
        parse_source_option,
    )
    from trgc.tools.evidence_schema import MAX_SCHEMA_BYTES, parse_app_schema

    sources = {}
    for option in source or []:
        name, path = parse_source_option(option)
        if name in sources:
            raise TrgcError(
                "E_EVIDENCE_SOURCE",
                f"--source names {name!r} twice",
                hint="give every source document its own NAME",
            )
        sources[name] = read_input(path, MAX_SOURCE_BYTES, f"evidence source {name}")
    app_schema = (
        None
        if schema is None
        else parse_app_schema(
            read_input(schema, MAX_SCHEMA_BYTES, "the application schema"), source=str(schema)
        )
    )
    data = read_input(result, MAX_RESULT_BYTES, "the extraction result")
    report = check_evidence(data, sources, source=str(result), schema=app_schema)
    if as_json:
        print_json(report)
    else:
        console = stdout_console()
        for field in report["fields"]:
            mark = "ok  " if field["ok"] else "FAIL"
            console.print(f"{mark}  {field['field']}  ({field['status']})", markup=False)
            for problem in field["problems"]:
                console.print(
                    f"      {problem['check']} at {problem['pointer']}: {problem['message']}",
                    markup=False,
                )
        if report["schema"] is not None:
            for problem in report["schema"]["problems"]:
                console.print(
                    f"FAIL  {problem['check']} at {problem['pointer']}: {problem['message']}",
                    markup=False,
                )
        validation = (
            f"validation flags recomputed from {schema}"
            if report["schema"] is not None
            else "validation flags taken as claimed (no --schema)"
        )
        console.print(
            f"{report['summary']['ok']} of {report['summary']['fields']} fields validate; "
            + validation,
            markup=False,
        )
    if not report["ok"]:
        raise typer.Exit(EXIT_DIFFERENT)


def register(app: typer.Typer) -> None:
    app.command("calc")(calc_command)
    tool_app = typer.Typer(
        help="Run deterministic local tools through validated tinyrust-tool-1 envelopes.",
        no_args_is_help=True,
    )
    tool_app.command("run")(tool_run_command)
    tool_app.command("list")(tool_list_command)
    tool_app.command("template")(tool_template_command)
    app.add_typer(tool_app, name="tool")
    evidence_app = typer.Typer(
        help="Validate extraction results against their source evidence.", no_args_is_help=True
    )
    evidence_app.command("check")(evidence_check_command)
    app.add_typer(evidence_app, name="evidence")
