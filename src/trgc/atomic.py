"""Atomic publication of files (DESIGN.md principle 7) and reading files with coded errors.

A file is written to a uniquely named temporary file in the same directory, flushed and
fsynced, then renamed over the target; a failure removes the temporary file, so no partial
file is ever visible under the target name.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from trgc.errors import TrgcError


def atomic_write(path: Path | str, data: bytes) -> None:
    """Write `data` to `path` atomically; raise `E_IO` and leave nothing behind on failure."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise TrgcError(
            "E_IO", f"cannot create a file in {directory}: {exc.strerror}", source=str(path)
        ) from None
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.fchmod(fd, 0o666 & ~mask)  # mkstemp creates 0600; publish with the usual permissions
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise TrgcError("E_IO", f"cannot write: {exc.strerror}", source=str(path)) from None
        raise


def read_bytes(path: Path | str, max_bytes: int | None = None) -> bytes:
    """Read a whole file, turning OS errors into `E_IO` naming the file. With `max_bytes`, read
    at most one byte more and refuse a larger file with `E_LIMIT_INPUT_BYTES` (exit 3)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
    except OSError as exc:
        raise TrgcError("E_IO", f"cannot read: {exc.strerror}", source=str(path)) from None
    if max_bytes is not None and len(data) > max_bytes:
        raise TrgcError(
            "E_LIMIT_INPUT_BYTES",
            f"the input is larger than the input_bytes limit of {max_bytes:,} bytes",
            source=str(path),
            hint="raise it with --limit input_bytes=N if this is intended",
        )
    return data
