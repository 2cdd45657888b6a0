"""Property: random tool lists → seeded constrained generation → the family's own output
format parses back to calls of declared tools whose arguments validate with `jsonschema`.

Generation is a random walk over the Matcher's allowed tokens on the synthetic merged-structure
tokenizer (half of the steps prefer a token that closes a string, object or array, so walks
end); the decoded turn is parsed the way serving stacks parse each family's output.
"""

from __future__ import annotations

import jsonschema
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trgc
from toolcall_helpers import ROOT, marker_id, parse_output, random_walk, render, synthetic_table

OPEN = {"qwen": "<tool_call>", "llama3": "<|python_tag|>", "deepseek": "<｜tool▁calls▁begin｜>"}
MARKERS = [
    "<tool_call>",
    "</tool_call>",
    "<|python_tag|>",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁calls▁end｜>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁call▁end｜>",
    "<｜tool▁sep｜>",
]
TABLE = synthetic_table()
SPECIAL_NAMES = {marker_id(TABLE, name): name for name in MARKERS}

names = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True)
leaf = st.one_of(
    st.just({"type": "string"}),
    st.builds(lambda n: {"type": "string", "maxLength": n}, st.integers(0, 4)),
    st.lists(st.sampled_from(["a", "b c", 'q"', "é"]), min_size=1, max_size=3, unique=True).map(
        lambda v: {"enum": v}
    ),
    st.just({"type": "integer"}),
    st.builds(
        lambda lo, w: {"type": "integer", "minimum": lo, "maximum": lo + w},
        st.integers(-5, 5),
        st.integers(0, 20),
    ),
    st.just({"type": "number"}),
    st.just({"type": "boolean"}),
    st.just({"type": "null"}),
    st.just({}),
)


def _object(children):
    return st.dictionaries(names, children, max_size=3).flatmap(
        lambda props: (
            st.lists(st.sampled_from(sorted(props)), unique=True).map(
                lambda req: {"type": "object", "properties": props, "required": req}
            )
            if props
            else st.just({"type": "object", "properties": {}})
        )
    )


value = st.recursive(
    leaf,
    lambda inner: st.one_of(
        _object(inner),
        st.builds(
            lambda s, n: {"type": "array", "items": s, "maxItems": n}, inner, st.integers(0, 3)
        ),
    ),
    max_leaves=5,
)
tool_lists = st.lists(
    st.tuples(names, _object(value)), min_size=1, max_size=3, unique_by=lambda t: t[0]
).map(
    lambda items: [{"type": "function", "function": {"name": n, "parameters": p}} for n, p in items]
)


@pytest.mark.parametrize("family", ["qwen", "llama3", "deepseek"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tools=tool_lists, seed=st.integers(0, 2**32 - 1))
def test_generated_calls_parse_back_and_validate(family, tools, seed):
    artifact = trgc.compile_toolcall(tools, family=family)
    matcher = trgc.Matcher(artifact, TABLE)
    rng = np.random.default_rng(seed)
    ids = random_walk(matcher, TABLE, rng, open_id=marker_id(TABLE, OPEN[family]))
    assert matcher.is_terminated()
    text = render(TABLE, ids, SPECIAL_NAMES)
    calls = parse_output(family, text)
    starts = {
        "qwen": "<tool_call>",
        "llama3": "<|python_tag|>",
        "deepseek": "<｜tool▁call▁begin｜>",
    }
    assert len(calls) == [SPECIAL_NAMES.get(i) for i in ids].count(starts[family]) >= 1, text
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    for name, arguments in calls:
        assert name in schemas, text
        jsonschema.Draft202012Validator(schemas[name]).validate(arguments)


REAL_TABLES: dict = {}
REAL = {"qwen": ("qwen3.trt", "<tool_call>"), "llama3": ("llama3.trt", "<|python_tag|>")}


def real_table(family: str):
    if family not in REAL_TABLES:
        REAL_TABLES[family] = trgc.load_tokenizer(ROOT / "tokenizers" / REAL[family][0])
    return REAL_TABLES[family]


@pytest.mark.parametrize("family", sorted(REAL))
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tools=tool_lists, seed=st.integers(0, 2**32 - 1))
def test_real_vocabulary_generation_parses_back_and_validates(family, tools, seed):
    table = real_table(family)
    marker = REAL[family][1]
    names = {"<tool_call>", "</tool_call>", "<|python_tag|>"}
    specials = {
        table.special_tokens.get(n, table.added_tokens.get(n)): n
        for n in names
        if n in table.special_tokens or n in table.added_tokens
    }
    open_id = table.special_tokens.get(marker, table.added_tokens.get(marker))
    matcher = trgc.Matcher(trgc.compile_toolcall(tools, family=family), table)
    ids = random_walk(matcher, table, np.random.default_rng(seed), open_id=open_id)
    assert matcher.is_terminated()
    text = render(table, ids, specials)
    calls = parse_output(family, text)
    assert len(calls) == [specials.get(i) for i in ids].count(marker) >= 1, text
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    for name, arguments in calls:
        jsonschema.Draft202012Validator(schemas[name]).validate(arguments)
