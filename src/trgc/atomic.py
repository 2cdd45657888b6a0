"""Atomic publication of files (DESIGN.md principle 7) and bounded reading with coded errors.

A file is written to a uniquely named temporary file in the same directory, flushed and
fsynced, then renamed over the target; a failure removes the temporary file, so no partial
file is ever visible under the target name.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from trgc.errors import TrgcError

_CHUNK = 1 << 20  # reads of unknown length (devices, pipes) grow one MiB at a time


def atomic_write(path: Path | str, data: bytes) -> None:
    """Write `data` to `path` atomically; raise `E_IO` and leave nothing behind on failure.

    A path that is a symbolic link is written through: the link's final target is replaced
    atomically and the link stays a link (renaming over the link itself would turn it into a
    plain file and leave its target unchanged)."""
    path = Path(path)
    if os.path.islink(path):
        path = Path(os.path.realpath(path))
    directory = path.parent if str(path.parent) else Path(".")
    import tempfile  # only when writing: most commands only read, and it costs start-up

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


def read_bytes(
    path: Path | str,
    max_bytes: int,
    *,
    code: str = "E_LIMIT_INPUT_BYTES",
    what: str = "the input",
    hint: str | None = "raise it with --limit input_bytes=N if this is intended",
    magic: bytes | tuple[bytes, ...] = b"",
) -> bytes:
    """Read a whole file of at most `max_bytes` bytes, turning OS errors into `E_IO`.

    The size is checked with `fstat` before reading (a regular file larger than the cap is
    refused without reading it) and again while reading, in chunks, so a device such as
    /dev/zero, a pipe or a file that grows is refused after at most `max_bytes + 1` bytes. A
    larger file is `code` (by default `E_LIMIT_INPUT_BYTES`, exit 3) naming the cap.

    With a `magic` (or a tuple of them, for kinds stored raw or as a zstd frame), reading stops
    as soon as the bytes read so far show that the file starts with none of them: the caller's parser refuses the short prefix returned, so a device that is
    no file of the kind costs a few bytes instead of the cap. Running out of memory while
    reading is `code` as well (a cap can exceed the memory a machine has to spare)."""

    def too_large(size: str) -> TrgcError:
        return TrgcError(
            code,
            f"{what} is {size} than the ceiling of {max_bytes:,} bytes",
            source=str(path),
            hint=hint,
        )

    chunks: list[bytes] = []
    try:
        with open(path, "rb", buffering=0) as handle:
            info = os.fstat(handle.fileno())
            if stat.S_ISREG(info.st_mode) and info.st_size > max_bytes:
                raise too_large(f"{info.st_size:,} bytes, larger")
            size = 0
            while size <= max_bytes:
                want = max_bytes + 1 - size
                if stat.S_ISREG(info.st_mode):
                    want = min(want, max(info.st_size - size, 0) + 1)
                chunk = handle.read(min(want, _CHUNK))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if magic and not _may_start_with(chunks, magic):
                    break
        if size > max_bytes:
            raise too_large("larger")
        return b"".join(chunks)
    except MemoryError:
        chunks.clear()
        raise TrgcError(
            code,
            f"not enough memory to read {what} (at most {max_bytes:,} bytes)",
            source=str(path),
            hint=hint,
        ) from None
    except IsADirectoryError:
        raise TrgcError("E_IO", "cannot read: it is a directory", source=str(path)) from None
    except OSError as exc:
        raise TrgcError("E_IO", f"cannot read: {exc.strerror}", source=str(path)) from None


def _may_start_with(chunks: list[bytes], magic: bytes | tuple[bytes, ...]) -> bool:
    """Whether the bytes in `chunks` are consistent with a file starting with `magic` (one of
    them, for a tuple)."""
    magics = (magic,) if isinstance(magic, bytes) else magic
    longest = max(len(m) for m in magics)
    head = chunks[0][:longest]
    if len(head) < longest:  # a pipe may deliver the first bytes in several reads
        head = b"".join(chunks)[:longest]
    return any(m[: len(head)] == head[: len(m)] for m in magics)
