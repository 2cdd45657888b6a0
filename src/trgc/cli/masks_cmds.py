"""`trgc masks precompute`: build a `.trm` mask-cache file for one artifact and one tokenizer."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from trgc.cli.common import (
    CacheDirOption,
    JsonOption,
    LimitOption,
    LimitsFileOption,
    NoCacheOption,
    open_disk_cache,
    print_json,
    refuse_overwriting_inputs,
    reporting_errors,
    stderr_console,
    stdout_console,
)

masks_app = typer.Typer(
    name="masks",
    help="Token-mask caches: precompute per-state masks for an artifact and a tokenizer.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@masks_app.command("precompute")
@reporting_errors
def precompute_command(
    artifact_path: Annotated[
        Path, typer.Argument(metavar="ARTIFACT", help="Compiled artifact (.trga) to precompute.")
    ],
    tokenizer_path: Annotated[
        Path,
        typer.Option(
            "--tokenizer",
            "-t",
            metavar="PATH",
            help="Token table (.trt) or tokenizer file/folder the masks are over.",
        ),
    ],
    output: Annotated[
        Path,
        typer.Option("--output", "-o", metavar="FILE", help="The .trm cache file to write."),
    ],
    limit: LimitOption = None,
    limits_file: LimitsFileOption = None,
    cache_dir: CacheDirOption = None,
    no_cache: NoCacheOption = False,
    as_json: JsonOption = False,
) -> None:
    """Precompute, for every state of every machine, the tokens accepted and rejected without
    leaving the frame (the whole mask for a regular grammar) and the context-dependent
    remainder checked at run time; write them content-addressed, hashed and zstd-compressed,
    atomically. Each state's entry is first looked up in the persistent mask cache by its
    residual, and new ones are added to it (--cache-dir, --no-cache), so schemas built from
    familiar pieces precompute faster. A matcher refuses the file for any other artifact,
    tokenizer or compiler version (E_CACHE_MISMATCH). Ctrl-C stops it within milliseconds and
    writes nothing."""
    import numpy as np

    from trgc.artifact.codec import load_artifact
    from trgc.engine.precompute import precompute
    from trgc.engine.trm import save_masks
    from trgc.limits import resolve_limits
    from trgc.tokenizer.load import load_tokenizer

    refuse_overwriting_inputs({"--output": output}, [artifact_path, tokenizer_path, limits_file])
    limits = resolve_limits(limit, limits_file)
    artifact = load_artifact(artifact_path, limits=limits)
    tokenizer = load_tokenizer(tokenizer_path)
    disk = open_disk_cache(cache_dir, no_cache)
    started = time.perf_counter()
    if sys.stderr.isatty() and not as_json:
        from rich.progress import Progress

        with Progress(transient=True, console=stderr_console()) as bar:
            task = bar.add_task("precomputing masks", total=None)
            masks = precompute(
                artifact,
                tokenizer,
                limits=limits,
                progress=lambda done, total: bar.update(task, completed=done, total=total),
                disk_cache=disk,
            )
    else:
        masks = precompute(artifact, tokenizer, limits=limits, disk_cache=disk)
    seconds = time.perf_counter() - started
    identity = save_masks(masks, output)
    document = {
        "output": str(output),
        "sha256": identity,
        "artifact": masks.key[0],
        "tokenizer": masks.key[1],
        "compiler": masks.key[2],
        "policy": masks.key[3],
        "trie": masks.key[4],
        "states": masks.n_states,
        "distinct_masks": int(masks.masks.shape[0]),
        "states_with_open_roots": int((np.diff(masks.open_start) > 0).sum()),
        "open_roots": int(masks.open_roots.shape[0]),
        "mask_bytes": int(masks.masks.nbytes),
        "file_bytes": output.stat().st_size,
        "seconds": round(seconds, 3),
        "disk_cache": None if disk is None else disk_document(disk),
    }
    if as_json:
        print_json(document)
        return
    console = stdout_console()
    console.print(f"{identity}  {output}")
    console.print(
        f"{document['states']} states, {document['distinct_masks']} distinct masks "
        f"({document['mask_bytes']:,} bytes, file {document['file_bytes']:,} bytes), "
        f"{document['states_with_open_roots']} states with context-dependent subtrees, "
        f"{seconds:.2f} s"
    )


def disk_document(disk) -> dict:
    """The persistent cache's location and what this run found and added there (after the
    background publisher is done)."""
    disk.flush()
    stats = disk.stats
    return {
        "location": str(disk.root),
        "hits": stats.hits,
        "misses": stats.misses,
        "writes": stats.writes,
        "refused": dict(sorted(stats.refused.items())),
    }


def register(app: typer.Typer) -> None:
    app.add_typer(masks_app)
