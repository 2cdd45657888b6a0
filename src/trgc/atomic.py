"""Atomic publication of files (DESIGN.md principle 7) and reading files with coded errors.

A file is written to a temporary file in the same directory, flushed and fsynced, then renamed
over the target; a failure removes the temporary file, so no partial file is ever visible.
"""

from __future__ import annotations

import os
from pathlib import Path

from trgc.errors import TrgcError


def atomic_write(path: Path | str, data: bytes) -> None:
    """Write `data` to `path` atomically; raise `E_IO` and leave nothing behind on failure."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise TrgcError("E_IO", f"cannot write: {exc.strerror}", source=str(path)) from None
        raise


def read_bytes(path: Path | str) -> bytes:
    """Read a whole file, turning OS errors into `E_IO` naming the file."""
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise TrgcError("E_IO", f"cannot read: {exc.strerror}", source=str(path)) from None
