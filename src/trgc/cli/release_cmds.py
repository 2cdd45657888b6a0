"""`trgc lock` and `trgc verify`: pin artifact hashes in a TOML lock and re-prove them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from trgc.cli.common import (
    JsonOption,
    LimitOption,
    LimitsFileOption,
    print_json,
    refuse_overwriting_inputs,
    reporting_errors,
    stdout_console,
)
from trgc.errors import EXIT_DIFFERENT


@reporting_errors
def lock_command(
    sources: Annotated[
        list[Path],
        typer.Argument(
            metavar="SOURCE",
            help="Grammar (.trg) and JSON Schema (.json) files to compile and pin.",
        ),
    ],
    lock_path: Annotated[
        Path, typer.Option("--lock", metavar="FILE", help="The lock file to write (TOML).")
    ] = Path("trgc.lock"),
    artifacts_dir: Annotated[
        Path | None,
        typer.Option(
            "--artifacts-dir",
            metavar="DIR",
            help="Where to write NAME.trga files (default: beside the lock).",
        ),
    ] = None,
    limit: LimitOption = None,
    limits_file: LimitsFileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Compile every source, write its artifact and pin name -> source hash, artifact hash,
    compiler and limits in a lock file. Nothing is written unless every source compiles."""
    from trgc.limits import resolve_limits
    from trgc.release.lockfile import lock

    out_dir = artifacts_dir or lock_path.parent
    outputs: dict[str, Path | None] = {"--lock": lock_path}
    outputs |= {f"the artifact of {s}": out_dir / f"{s.stem}.trga" for s in sources}
    refuse_overwriting_inputs(outputs, [*sources, limits_file])
    result = lock(
        sources, lock_path, artifacts_dir=artifacts_dir, limits=resolve_limits(limit, limits_file)
    )
    document = {"lock_file": str(lock_path), **result.to_toml()}
    if as_json:
        print_json(document)
        return
    console = stdout_console()
    for name, entry in sorted(result.entries.items()):
        console.print(f"{entry.artifact_sha256}  {name}  ({entry.source} -> {entry.artifact})")
    console.print(f"wrote {lock_path} ({len(result.entries)} entries)")


@reporting_errors
def verify_command(
    sources: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="SOURCE",
            help="Optional: the sources that should be locked; extra or missing ones are reported as added/removed.",
        ),
    ] = None,
    lock_path: Annotated[
        Path | None,
        typer.Option(
            "--lock",
            metavar="FILE",
            help="The lock file to verify (default: trgc.lock or artifacts/trgc.lock in the "
            "current directory or the nearest parent that has one).",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Recompile every locked source and compare hashes with the lock and the committed
    artifacts. Exit 0 when everything matches, 1 listing every added, removed and changed entry."""
    from trgc.release.lockfile import find_lock, verify

    if lock_path is None:
        lock_path = find_lock()
    report = verify(lock_path, sources or None)
    if as_json:
        print_json({"lock_file": str(lock_path), **report.to_dict()})
    else:
        console = stdout_console()
        for name in report.added:
            console.print(f"added    {name}")
        for name in report.removed:
            console.print(f"removed  {name}")
        for name, differences in sorted(report.changed.items()):
            for diff in differences:
                console.print(
                    f"changed  {name}: {diff['field']} locked {diff['locked']} actual {diff['actual']}"
                )
        if report.ok:
            console.print(f"ok: {len(report.checked)} entries reproduce {lock_path}")
    if not report.ok:
        raise typer.Exit(EXIT_DIFFERENT)


def register(app: typer.Typer) -> None:
    app.command("lock")(lock_command)
    app.command("verify")(verify_command)
