"""`pattern`: the ECMA-262 subset, never wider than Python's `re.search` (the validators' reading)."""

from __future__ import annotations

import itertools
import json
import random
import re

import pytest

import trgc
from schema_helpers import accepts
from test_schema_soundness import check_samples
from trgc.errors import TrgcError

PATTERNS = [
    "^[a-z]+$",
    "^[A-Z]{2}-\\d{3,5}$",
    "ab",
    "^(foo|bar)?baz$",
    "^[^\\s]+$",
    "\\.json$",
    "^\\S+@\\S+\\.\\S+$",
    "^https?://",
    "^[a-zA-Z0-9_.-]*$",
    "^(\\([0-9]{3}\\))?[0-9]{3}-[0-9]{4}$",
    "^[\\w-]+$",
    "^.{1,3}$",
    "^a|b$",
    "^[^a-c\\d]*$",
    "x*?y+?",
    '^["\\\\]$',
    "^\\u00e9\\x41\\t$",
]
ALPHABET = [
    "a",
    "b",
    "c",
    "z",
    "A",
    "Z",
    "0",
    "5",
    "-",
    ".",
    "_",
    " ",
    "@",
    "/",
    ":",
    "(",
    ")",
    "é",
    "\n",
    "\t",
    '"',
    "\\",
    "٣",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_pattern_agrees_with_python_re_on_short_strings(pattern):
    schema = {"type": "string", "pattern": pattern}
    rng = random.Random(pattern)
    candidates = ["".join(p) for n in range(3) for p in itertools.product(ALPHABET[:8], repeat=n)]
    candidates += [
        "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(1, 12))) for _ in range(300)
    ]
    candidates += [
        "foobaz",
        "baz",
        "AB-123",
        "AB-12345",
        "x.json",
        "a@b.cd",
        "http://x",
        "https://",
        "(555)123-4567",
        "é\tA",
        "éA\t",
        '"',
        "\\",
    ]
    for text in candidates:
        data = json.dumps(text, ensure_ascii=False)
        if accepts(schema, data):
            assert re.search(pattern, text), (pattern, text)
    assert check_samples(schema, trgc.compile_schema(schema), seed=1, count=30) > 0


@pytest.mark.parametrize(
    ("pattern", "good", "bad"),
    [
        ("^[a-z]+$", ["abc"], ["", "aBc", "abc\n"]),
        ("^[A-Z]{2}-\\d{3,5}$", ["AB-123", "ZZ-00000"], ["AB-12", "AB-123456", "ab-123", "AB-١٢٣"]),
        ("ab", ["ab", "xxabyy"], ["a", "ba"]),
        ("^(foo|bar)?baz$", ["baz", "foobaz", "barbaz"], ["fbaz", "foobarbaz"]),
        ("^\\S+$", ["a.b", "é"], ["a b", "a\u3000b", ""]),
        ("^[^\\s]+$", ["a.b"], ["a b", "a\u00a0b"]),
        ("^\\D$", ["a"], ["1", "٣"]),
        ("^.$", ["a", "é"], ["\n", "\r", "\u2028", "ab"]),
        ('^["\\\\]$', ['"', "\\"], ["a"]),
    ],
)
def test_pattern_accepts_and_rejects(pattern, good, bad):
    schema = {"type": "string", "pattern": pattern}
    for text in good:
        assert accepts(schema, json.dumps(text, ensure_ascii=False)), text
    for text in bad:
        assert not accepts(schema, json.dumps(text, ensure_ascii=False)), text


def test_pattern_with_lengths():
    """Exact in both forms: a repeated class takes the bounds, other patterns are intersected."""
    schema = {"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 3}
    assert accepts(schema, '"ab"') and accepts(schema, '"abc"')
    assert (
        not accepts(schema, '"a"') and not accepts(schema, '"abcd"') and not accepts(schema, '"AB"')
    )
    implied = {"type": "string", "pattern": "^[0-9]{4}$", "maxLength": 10}
    assert accepts(implied, '"2024"')
    # any other pattern is intersected with the strings of the allowed length (a product)
    general = {"type": "string", "pattern": "^a.*b$", "maxLength": 5}
    assert accepts(general, '"ab"') and accepts(general, '"axyzb"')
    assert not accepts(general, '"axyzzb"') and not accepts(general, '"axyz"')
    assert accepts(general, '"a\u00e9b"')  # one code point, two UTF-8 bytes
    with pytest.raises(TrgcError) as info:
        trgc.compile_schema({"type": "string", "pattern": "^[a-z]{2}$", "minLength": 3})
    assert info.value.code == "E_UNSATISFIABLE"


@pytest.mark.parametrize(
    "pattern",
    [
        "(a)\\1",
        "a(?=b)",
        "(?<n>a)",
        "\\bword",
        "a^b",
        "^(a($|b))*$",  # an anchor under a quantifier (a real schema's path pattern)
        "^(x|^y)+$",
        "\\p{L}",
        "[[:alpha:]]",
        "(a",
        "a{2,1}",
        "*a",
    ],
)
def test_unsupported_regex_constructs(pattern):
    with pytest.raises(TrgcError) as info:
        trgc.compile_schema({"type": "string", "pattern": pattern})
    assert info.value.code == "E_UNSUPPORTED_KEYWORD" and info.value.pointer == "/pattern"


def test_nullable_group_repetition():
    schema = {"type": "string", "pattern": "^a([b-c]*)*$"}
    assert accepts(schema, '"abcbc"') and accepts(schema, '"a"') and not accepts(schema, '"ad"')
    with pytest.raises(TrgcError) as info:
        trgc.compile_schema({"type": "string", "pattern": "^(a?b?)+$"})
    assert info.value.code == "E_UNSUPPORTED_KEYWORD"


def test_wide_digit_and_word_classes_are_those_of_python_re_and_unicodedata():
    """The wide `\\d` and `\\w` (what either engine may count) are found by `re` over one
    string of every scalar; each agrees with the per-scalar definition: category Nd, or
    alphanumeric or `_`."""
    import unicodedata

    from trgc.grammar.charclass import MAX_SCALAR
    from trgc.grammar.schema.regex import _unicode_ranges

    for kind, test in (
        ("d", lambda c: unicodedata.category(c) == "Nd"),
        ("w", lambda c: c.isalnum() or c == "_"),
    ):
        ranges = _unicode_ranges(kind)
        inside = [False] * (MAX_SCALAR + 1)
        for lo, hi in ranges:
            inside[lo : hi + 1] = [True] * (hi - lo + 1)
        wrong = [
            cp
            for cp in range(MAX_SCALAR + 1)
            if not 0xD800 <= cp <= 0xDFFF and inside[cp] != test(chr(cp))
        ]
        assert not wrong, (kind, wrong[:5])
        assert all(a[1] + 1 < b[0] for a, b in zip(ranges, ranges[1:], strict=False))
        assert all(hi < 0xD800 or lo > 0xDFFF for lo, hi in ranges)  # no surrogate
        assert len(ranges) > 50  # far beyond ASCII
