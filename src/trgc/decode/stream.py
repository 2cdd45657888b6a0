"""Display text from raw output bytes: only complete UTF-8 scalars, the rest stays buffered.

Raw token bytes are the authoritative stream (report: "Streaming, stopping, and
cancellation"); a token may end inside a multi-byte scalar, so text shown to a user is cut
at the last complete scalar and the trailing bytes wait for the next token. Invalid
sequences (possible only without a UTF-8 constraint) are shown as U+FFFD.
"""

from __future__ import annotations

import codecs


class Utf8Stream:
    """Feed raw bytes, get back the text of the scalars they complete."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes) -> str:
        return self._decoder.decode(data, final=False)

    def pending(self) -> bytes:
        """The buffered bytes of an incomplete trailing scalar."""
        return self._decoder.getstate()[0]
