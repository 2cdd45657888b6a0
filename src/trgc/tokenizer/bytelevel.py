"""The GPT-2 byte-level alphabet and its inverse: vocabulary strings back to exact token bytes.

Byte-level BPE vocabularies (GPT-2, Qwen, Llama 3 `tokenizer.json`, DeepSeek) store each token as
the image of its bytes under GPT-2's `bytes_to_unicode`: the 188 printable Latin-1 bytes map to
the character with the same code point, the other 68 bytes map, in ascending byte order, to
U+0100..U+0143. Inverting that map character by character gives the token's bytes.
"""

from __future__ import annotations

from trgc.errors import TrgcError

# bytes whose character stands for itself: '!'..'~', '¡'..'¬', '®'..'ÿ'
_PRINTABLE = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]


def byte_to_char() -> list[str]:
    """GPT-2's `bytes_to_unicode` as a 256-entry list: byte value -> alphabet character."""
    table = [""] * 256
    for b in _PRINTABLE:
        table[b] = chr(b)
    shifted = 0
    for b in range(256):
        if not table[b]:
            table[b] = chr(0x100 + shifted)
            shifted += 1
    return table


_BYTE_TO_CHAR = byte_to_char()
_INVALID = "\uffff"  # never in the alphabet; survives translate() and fails the latin-1 encode
# str.translate table: alphabet character -> the Latin-1 character of its byte;
# the 68 Latin-1 characters that are *not* in the alphabet -> an invalid marker
_TRANSLATE: dict[int, str] = {ord(c): chr(b) for b, c in enumerate(_BYTE_TO_CHAR)}
for _b in range(256):
    _TRANSLATE.setdefault(_b, _INVALID)


def decode_byte_level(
    text: str, *, source: str | None = None, token_id: int | None = None
) -> bytes:
    """The exact bytes of one byte-level vocabulary string; `E_TOKENIZER_BYTE_LEVEL` if impossible."""
    try:
        return text.translate(_TRANSLATE).encode("latin-1")
    except UnicodeEncodeError:
        bad = next(ch for ch in text if ord(ch) > 0x143 or _TRANSLATE.get(ord(ch)) == _INVALID)
        raise TrgcError(
            "E_TOKENIZER_BYTE_LEVEL",
            f"token {text!r}{'' if token_id is None else f' (id {token_id})'} has character "
            f"U+{ord(bad):04X}, which is not in the GPT-2 byte-level alphabet",
            source=source,
            hint="only byte-level BPE vocabularies can be read this way; added tokens belong in added_tokens",
        ) from None


def encode_byte_level(data: bytes) -> str:
    """The byte-level alphabet string of `data` (the inverse of `decode_byte_level`)."""
    return "".join(_BYTE_TO_CHAR[b] for b in data)


def decode_byte_level_many(
    texts: list[str], *, source: str | None = None, ids: list[int] | None = None
) -> list[bytes]:
    """`decode_byte_level` of many strings at once (one translate over their concatenation).

    Every alphabet character is one byte, so the character lengths of the strings slice the
    decoded bytes; any invalid character sends us to the one-by-one path for its error.
    """
    try:
        data = "".join(texts).translate(_TRANSLATE).encode("latin-1")
    except UnicodeEncodeError:
        for k, text in enumerate(texts):
            decode_byte_level(text, source=source, token_id=None if ids is None else ids[k])
        raise AssertionError("unreachable: some string failed as a whole but none alone") from None
    out = []
    pos = 0
    for text in texts:
        end = pos + len(text)
        out.append(data[pos:end])
        pos = end
    return out
