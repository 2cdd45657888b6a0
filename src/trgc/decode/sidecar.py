"""The logits sidecar of a trace: per step, the allowed tokens' raw logits and a summary of the rest.

Replay needs the exact float64 logits the sampler saw, but only for the grammar-allowed tokens
(the others matter only through their NaN count, a +inf flag and their maximum, which the
intervention metric uses). The payload is a sequence of little-endian records:

    magic   b"TRGCLGT1"                      (8 bytes, once)
    record  u32 step, u32 n_allowed, u32 outside_nan, u8 outside_posinf, 3 zero bytes,
            f64 outside_max, n_allowed x f64 allowed logits (ascending token id)

compressed as one zstd frame. The trace's end line records the SHA-256 of the file exactly
as stored, so `sha256sum` checks it too. Writing goes to a temporary file that is renamed
into place on `close`; `discard` removes it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import zstandard

from trgc.atomic import read_bytes
from trgc.decode.sampler import StepLogits
from trgc.errors import TrgcError
from trgc.limits import file_cap, zstd_bound

_SIDECAR_HINT = (
    "the sidecar is larger than its trace's steps can explain; it belongs to another trace"
)

FORMAT = "trgc-logits-1"
MAGIC = b"TRGCLGT1"
_RECORD = struct.Struct("<IIIB3xd")
ZSTD_LEVEL = 6
READ_CHUNK = 1 << 20  # the most one decompression read asks for (its buffer is allocated whole)
EMIT_SLICE = 1 << 16  # bytes of logits compressed per call


class SidecarWriter:
    """Streams records into a zstd frame in a temporary file next to `path`."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        if os.path.islink(self.path):  # write through the link, as atomic_write does
            self.path = Path(os.path.realpath(self.path))
        self._tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
        try:
            self._file = open(self._tmp, "wb")  # noqa: SIM115 - held open across write() calls
        except OSError as exc:
            raise TrgcError(
                "E_IO", f"cannot write: {exc.strerror}", source=str(self.path)
            ) from None
        self._compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL).compressobj()
        self._hash = hashlib.sha256()
        self._emit(MAGIC)
        self.records = 0

    def _emit(self, data: bytes) -> None:
        chunk = self._compressor.compress(data)
        if chunk:
            self._hash.update(chunk)
            self._write(self._file.write, chunk)

    def _write(self, operation, *args) -> None:
        """A file operation whose OS error (a full disk, a quota) is `E_IO` naming the sidecar;
        the caller discards the temporary file, so nothing partial is ever published."""
        try:
            operation(*args)
        except OSError as exc:
            raise TrgcError(
                "E_IO", f"cannot write the logits sidecar: {exc.strerror}", source=str(self.path)
            ) from None

    def write(self, step: int, logits: StepLogits) -> None:
        allowed = np.ascontiguousarray(logits.allowed, dtype="<f8")
        header = _RECORD.pack(
            step,
            allowed.shape[0],
            logits.outside_nan,
            int(logits.outside_posinf),
            logits.outside_max,
        )
        self._emit(header)
        # in slices: compressing a step's megabyte of logits in one call held the interpreter
        # for up to 28 ms, so a Ctrl-C waited that long to be acknowledged; streamed zstd output
        # does not depend on how its input is cut (the golden sidecars' hashes pin that)
        data = memoryview(allowed).cast("B")
        for start in range(0, len(data), EMIT_SLICE):
            self._emit(data[start : start + EMIT_SLICE])
        self.records += 1

    def close(self) -> str:
        """Finish the frame, publish the file atomically and return its SHA-256 (hex)."""
        tail = self._compressor.flush()
        self._hash.update(tail)
        self._write(self._file.write, tail)
        self._write(self._file.flush)
        self._write(os.fsync, self._file.fileno())
        self._write(self._file.close)
        self._write(os.replace, self._tmp, self.path)
        return self._hash.hexdigest()

    def discard(self) -> None:
        with contextlib.suppress(OSError):  # closing flushes, which fails again on a full disk
            self._file.close()
        self._tmp.unlink(missing_ok=True)


def payload_size(allowed_counts: list[int]) -> int:
    """The exact uncompressed size of a sidecar whose steps allow these many tokens."""
    return len(MAGIC) + sum(_RECORD.size + 8 * n for n in allowed_counts)


def read_sidecar(
    path: Path | str, expected_sha256: str, max_payload: int | None = None
) -> Iterator[tuple[int, StepLogits]]:
    """Check the file's SHA-256 against the trace, then yield `(step, StepLogits)` records.

    `max_payload` bounds decompression (replay passes `payload_size` of the trace's steps), so
    a crafted frame cannot expand without limit; the logits-sidecar cap bounds it too (a trace
    can declare any size), and the file itself is capped at the zstd bound of that payload.
    Decompression asks for at most `READ_CHUNK` bytes at a time, so memory follows what the
    sidecar really holds, never a size a trace declares: a trace whose `allowed` counts were
    inflated still reaches replay, which names the step that differs."""
    ceiling = file_cap("logits sidecar")
    limit = ceiling if max_payload is None else min(max_payload, ceiling)
    cap = min(ceiling, zstd_bound(limit))
    data = read_bytes(
        path, cap, code="E_SIDECAR_FORMAT", what="the logits sidecar", hint=_SIDECAR_HINT
    )
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected_sha256:
        raise TrgcError(
            "E_SIDECAR_HASH",
            f"logits sidecar sha256 is {actual}, the trace records {expected_sha256}",
            source=str(path),
            hint="the sidecar was changed or belongs to another trace",
            details={"expected": expected_sha256, "got": actual},
        )
    try:
        chunks: list[bytes] = []
        size = 0
        with zstandard.ZstdDecompressor().stream_reader(data) as reader:
            while size <= limit:
                chunk = reader.read(min(READ_CHUNK, limit + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        payload = b"".join(chunks)
        if len(payload) > limit:
            described = "its trace describes" if limit == max_payload else "a sidecar may hold"
            raise TrgcError(
                "E_SIDECAR_FORMAT",
                f"logits sidecar holds more than the {limit} bytes {described}",
                source=str(path),
            )
    except zstandard.ZstdError as exc:
        raise TrgcError(
            "E_SIDECAR_FORMAT", f"logits sidecar is not a valid zstd frame: {exc}", source=str(path)
        ) from None
    return _records(payload, str(path))


def _records(payload: bytes, source: str) -> Iterator[tuple[int, StepLogits]]:
    if payload[: len(MAGIC)] != MAGIC:
        raise TrgcError("E_SIDECAR_FORMAT", "logits sidecar has the wrong magic", source=source)
    offset = len(MAGIC)
    while offset < len(payload):
        if offset + _RECORD.size > len(payload):
            raise TrgcError(
                "E_SIDECAR_FORMAT",
                f"logits sidecar record truncated at byte {offset}",
                source=source,
            )
        step, n, outside_nan, posinf, outside_max = _RECORD.unpack_from(payload, offset)
        offset += _RECORD.size
        end = offset + 8 * n
        if end > len(payload) or posinf > 1:
            raise TrgcError(
                "E_SIDECAR_FORMAT",
                f"logits sidecar record for step {step} is truncated or invalid",
                source=source,
            )
        allowed = np.frombuffer(payload, dtype="<f8", count=n, offset=offset).astype(np.float64)
        offset = end
        yield (
            step,
            StepLogits(
                allowed=allowed,
                outside_nan=outside_nan,
                outside_posinf=bool(posinf),
                outside_max=outside_max,
            ),
        )
