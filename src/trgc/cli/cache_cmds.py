"""`trgc cache info | prune | clear`: look after the persistent mask-cache directory."""

from __future__ import annotations

from typing import Annotated

import typer

from trgc.cli.common import (
    CacheDirOption,
    JsonOption,
    open_disk_cache,
    print_json,
    reporting_errors,
    stdout_console,
)

cache_app = typer.Typer(
    name="cache",
    help="The persistent mask cache shared by trgc processes: show it, shrink it, empty it. "
    "Entries are hash-verified on every read; a bad one is removed and recomputed. Size bound: "
    "$TRGC_CACHE_MAX_BYTES (default 1 GiB).",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


@cache_app.command("info")
@reporting_errors
def info_command(cache_dir: CacheDirOption = None, as_json: JsonOption = False) -> None:
    """Show where the cache is, how many entries and bytes it holds against its limit, per
    entry kind (frame entries, whole .trm files), and how many temporaries writers left."""
    cache = open_disk_cache(cache_dir)
    info = cache.info()
    if as_json:
        print_json(info.to_dict())
        return
    from rich.table import Table

    console = stdout_console()
    console.print(f"location  {info.location}")
    console.print(
        f"entries   {info.entries:,}, {_size(info.bytes)} ({info.bytes:,} bytes) of a "
        f"{_size(info.limit_bytes)} limit; largest entry allowed {_size(info.max_entry_bytes)}"
    )
    if info.temporaries:
        console.print(
            f"temporaries {info.temporaries} (removed by `trgc cache prune` after an hour)"
        )
    if info.kinds:
        table = Table("kind", "entries", "bytes")
        for kind, row in info.kinds.items():
            table.add_row(kind, f"{row['entries']:,}", f"{row['bytes']:,}")
        console.print(table)


@cache_app.command("prune")
@reporting_errors
def prune_command(
    cache_dir: CacheDirOption = None,
    max_bytes: Annotated[
        int | None,
        typer.Option(
            "--max-bytes",
            metavar="N",
            help="Evict down to N bytes instead of the cache's limit (0 keeps nothing).",
        ),
    ] = None,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Also read every entry and remove those that are corrupted, truncated, "
            "foreign or oversized (counted by error code).",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Evict the least recently used entries until the cache is within its limit (or
    --max-bytes), and remove temporaries of writers that died more than an hour ago."""
    cache = open_disk_cache(cache_dir)
    report = cache.prune(max_bytes, verify=verify)
    if as_json:
        print_json(report.to_dict())
        return
    console = stdout_console()
    console.print(
        f"evicted {report.evicted_entries:,} entries ({_size(report.evicted_bytes)}), removed "
        f"{report.temporaries_removed} stale temporaries; {report.entries:,} entries, "
        f"{_size(report.bytes)} left in {report.location}"
    )
    for code, count in report.refused.items():
        console.print(f"removed {count:,} refused entries: {code}")


@cache_app.command("clear")
@reporting_errors
def clear_command(cache_dir: CacheDirOption = None, as_json: JsonOption = False) -> None:
    """Remove every entry of the cache (processes using it meanwhile recompute what they
    miss)."""
    cache = open_disk_cache(cache_dir)
    entries, removed = cache.clear()
    document = {"location": str(cache.root), "removed_entries": entries, "removed_bytes": removed}
    if as_json:
        print_json(document)
        return
    stdout_console().print(f"removed {entries:,} entries ({_size(removed)}) from {cache.root}")


def register(app: typer.Typer) -> None:
    app.add_typer(cache_app)
