"""A minimal protobuf wire-format reader: enough to walk a SentencePiece `ModelProto`.

Reading the wire format directly keeps `sentencepiece`/`protobuf` out of trgc's runtime
dependencies (they stay the independent implementation used by `verify`). Only the four wire
types protobuf 3 still emits are accepted; groups and truncated fields are errors.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from trgc.errors import Span, TrgcError

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5


def _fail(message: str, offset: int, source: str | None) -> TrgcError:
    return TrgcError("E_TOKENIZER_PROTOBUF", message, source=source, span=Span(offset=offset))


def read_varint(buf: bytes, pos: int, end: int, source: str | None) -> tuple[int, int]:
    value = shift = 0
    start = pos
    while True:
        if pos >= end:
            raise _fail("truncated varint", start, source)
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise _fail("varint longer than 10 bytes", start, source)


def fields(
    buf: bytes, start: int = 0, end: int | None = None, source: str | None = None
) -> Iterator[tuple[int, int, object]]:
    """Yield (field number, wire type, value) where a LEN value is the (start, end) slice of `buf`."""
    pos = start
    end = len(buf) if end is None else end
    while pos < end:
        key, pos = read_varint(buf, pos, end, source)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise _fail("field number 0", pos, source)
        if wire == VARINT:
            value, pos = read_varint(buf, pos, end, source)
            yield number, wire, value
        elif wire == LEN:
            length, pos = read_varint(buf, pos, end, source)
            if pos + length > end:
                raise _fail(
                    f"field {number} runs {pos + length - end} bytes past its message", pos, source
                )
            yield number, wire, (pos, pos + length)
            pos += length
        elif wire in (FIXED32, FIXED64):
            size = 4 if wire == FIXED32 else 8
            if pos + size > end:
                raise _fail(f"truncated fixed-width field {number}", pos, source)
            value = struct.unpack_from("<f" if size == 4 else "<d", buf, pos)[0]
            yield number, wire, value
            pos += size
        else:
            raise _fail(f"unsupported wire type {wire} in field {number}", pos, source)


def as_int32(value: int) -> int:
    """A varint read as a (possibly negative) int32 field."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value
