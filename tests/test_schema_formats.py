"""The formats added for 2020-12 (duration, ipv6, json-pointer, relative-json-pointer,
uri-template, idn-*): every walk is a valid instance for an independent checker, known valid
and invalid examples, and format together with pattern or lengths by intersection."""

from __future__ import annotations

import ipaddress
import json
import random
import re

import pytest

import trgc
from schema_helpers import accepts
from trgc.evaluation.walk import sample

DURATION = re.compile(
    r"^P(?:(?:\d+D|\d+M(?:\d+D)?|\d+Y(?:\d+M(?:\d+D)?)?)(?:T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S))?"
    r"|T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S)|\d+W)$"
)


def _json_pointer(text: str) -> bool:
    return text == "" or (
        text.startswith("/") and re.fullmatch(r"(/([^/~]|~[01])*)*", text) is not None
    )


CHECKS = {
    "duration": lambda t: DURATION.match(t) is not None,
    "ipv6": lambda t: _ipv6(t),
    "json-pointer": _json_pointer,
    "relative-json-pointer": lambda t: (
        (m := re.match(r"^(0|[1-9][0-9]*)", t)) is not None
        and (t[m.end() :] == "#" or _json_pointer(t[m.end() :]))
    ),
    "uri-template": lambda t: (
        re.fullmatch(
            r"([^\x00-\x20\"'%<>\\^`{|}]|%[0-9A-Fa-f]{2}|\{[+#./;?&=,!@|]?[A-Za-z0-9_%.:*,]+\})*", t
        )
        is not None
    ),
    "idn-hostname": lambda t: all(
        re.fullmatch(r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?", p) for p in t.split(".")
    ),
}


def _ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("fmt", sorted(CHECKS))
def test_every_walk_has_the_format(fmt):
    art = trgc.compile_schema({"type": "string", "format": fmt})
    rng = random.Random(fmt)
    seen = 0
    for _ in range(80):
        data = sample(art, rng)
        if data is None:
            continue
        seen += 1
        text = json.loads(data)
        assert CHECKS[fmt](text), (fmt, text)
    assert seen > 20


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        (
            "duration",
            ["P1Y", "P3DT12H", "PT5M", "P2W", "P1Y2M3DT4H5M6S"],
            ["P", "PT", "1Y", "P1S", "P1W2D", "PT1D"],
        ),
        (
            "ipv6",
            ["::", "::1", "fe80::1", "1:2:3:4:5:6:7:8", "::ffff:10.0.0.1"],
            ["1:2:3", "1::2::3", "g::", ":::", "1:2:3:4:5:6:7:8:9"],
        ),
        ("json-pointer", ["", "/", "/a/b", "/a~0b~1c"], ["a", "/a~2", "/~"]),
        ("relative-json-pointer", ["0", "1#", "2/a/b"], ["", "-1", "01", "a"]),
        (
            "uri-template",
            ["", "http://x/{id}", "{+path}/here", "{?q,lang:2}"],
            ["{}", "a{b", "a b"],
        ),
    ],
)
def test_known_examples(fmt, good, bad):
    schema = {"type": "string", "format": fmt}
    for text in good:
        assert accepts(schema, json.dumps(text)), (fmt, text)
    for text in bad:
        assert not accepts(schema, json.dumps(text)), (fmt, text)


def test_format_with_pattern_and_lengths_is_an_intersection():
    both = {"type": "string", "format": "date", "pattern": "^2024-"}
    assert accepts(both, '"2024-02-29"') and not accepts(both, '"2023-02-28"')
    assert not accepts(both, '"2024-13-01"')
    short = {"type": "string", "format": "ipv6", "maxLength": 4}
    assert accepts(short, '"::1"') and not accepts(short, '"fe80::1"')


def test_regex_format_stays_unsupported():
    with pytest.raises(trgc.TrgcError) as info:
        trgc.compile_schema({"type": "string", "format": "regex"})
    assert info.value.code == "E_UNSUPPORTED_KEYWORD" and info.value.details["keyword"] == "format"
