"""`trgc audit`: check a serving engine's audit record (trgc.integrations.audit) afterwards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from trgc.cli.common import JsonOption, print_json, reporting_errors, stdout_console


@reporting_errors
def audit_command(
    record_path: Annotated[
        Path,
        typer.Argument(
            metavar="RECORD", help="Audit record (JSONL) written by the vLLM logits processor."
        ),
    ],
    artifact_path: Annotated[
        Path | None,
        typer.Option(
            "--artifact",
            metavar="PATH",
            help="Artifact to check against (default: the record's identity in the cache directory).",
        ),
    ] = None,
    tokenizer_path: Annotated[
        Path | None,
        typer.Option(
            "--tokenizer",
            "-t",
            metavar="PATH",
            help="Token table or tokenizer to check against (default: the record's identity in the cache directory).",
        ),
    ] = None,
    tokens: Annotated[
        str | None,
        typer.Option(
            "--tokens",
            metavar="JSON",
            help="The engine's output token ids as a JSON list; the record must cover exactly these.",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Recompute the mask of every step of an audit record with a fresh matcher and check that
    each emitted token was allowed there and that the recorded mask hash is trgc's. Exit 0 when
    every step checks; exit 1 printing the problems; exit 2 when the record is malformed
    (E_AUDIT_RECORD) or the artifact or tokenizer is not the recorded one
    (E_COMPOSITION_MISMATCH)."""
    from trgc.errors import TrgcError
    from trgc.integrations.audit import check_audit

    ids = None
    if tokens is not None:
        try:
            ids = json.loads(tokens)
        except ValueError as exc:
            raise TrgcError("E_USAGE", f"--tokens is not JSON: {exc}") from None
        if not isinstance(ids, list) or not all(type(t) is int for t in ids):
            raise TrgcError("E_USAGE", "--tokens must be a JSON list of token ids")
    report = check_audit(record_path, artifact=artifact_path, tokenizer=tokenizer_path, tokens=ids)
    if as_json:
        print_json(report.to_dict())
    elif report.ok:
        stdout_console().print(f"ok: {report.steps} steps, every token allowed", markup=False)
    else:
        for problem in report.problems:
            where = "record" if problem["step"] is None else f"step {problem['step']}"
            stdout_console().print(f"{where}: {problem['problem']}", markup=False)
    if not report.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("audit")(audit_command)
