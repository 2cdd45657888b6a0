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


def read_bytes(path: Path | str) -> bytes:
    """Read a whole file, turning OS errors into `E_IO` naming the file."""
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise TrgcError("E_IO", f"cannot read: {exc.strerror}", source=str(path)) from None
