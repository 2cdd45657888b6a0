"""Structure-aware fuzzing of every input kind trgc reads (issue 17, the fuzzing campaign).

Each input kind has a Hypothesis strategy that builds mostly well-formed inputs — grammars from
a grammar of trg-1, schemas from the keyword matrix, tokenizer folders, traces and lock files
edited field by field, artifacts / token tables / mask caches mutated and then re-digested so
that the mutation reaches the validators behind the checksum — and a target that feeds one
input to the library exactly as the CLI would. The property is the same for all of them:

* the input is accepted, or refused with a `TrgcError` whose code is registered and is not
  `E_INTERNAL` (any other exception would be exit 70 with a traceback at the command line);
* every example ends within `EXAMPLE_CPU_SECONDS` of CPU time (`cpu_guard`) and the process
  stays below `RSS_CEILING` of resident memory.

`tests/test_fuzz.py` runs a few examples of each in the suite; `make fuzz` (scripts/fuzz.py)
runs the same targets for as long as it is given.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import resource
import signal
import struct
import tempfile
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

from hypothesis import strategies as st

from trgc.errors import CODES, TrgcError
from trgc.limits import Limits

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
EXAMPLE_CPU_SECONDS = 20
RSS_CEILING = 3 * 1024 * 1024 * 1024
# small ceilings keep each example fast; exceeding one is a stable code like any other
LIMITS = Limits(
    input_bytes=256 * 1024,
    states=4096,
    transitions=131_072,
    compiled_bytes=4 * 1024 * 1024,
    operations=3_000_000,
    repetition=200,
    max_depth=64,
    nesting=64,
    cache_bytes=8 * 1024 * 1024,
)


class ExampleTimeout(BaseException):
    """Raised by `cpu_guard` when one example runs past its CPU budget (a BaseException, so
    that no `except Exception` in the code under test can swallow it)."""


@contextlib.contextmanager
def cpu_guard(seconds: float = EXAMPLE_CPU_SECONDS) -> Iterator[None]:
    """Fail the example when it uses more than `seconds` of CPU time (ITIMER_PROF counts CPU,
    not wall time, so a loaded machine does not trip it)."""

    def expire(signum, frame):
        raise ExampleTimeout(f"an example ran past {seconds} s of CPU time")

    previous = signal.signal(signal.SIGPROF, expire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


# how the calls of `expect_stable` ended: "accepted" or the refusing code (scripts/fuzz.py reports
# it, so a campaign shows whether its inputs get past the first checks)
OUTCOMES: collections.Counter[str] = collections.Counter()


def expect_stable(run: Callable[[], object]) -> object | None:
    """Run one example: its result, or None after a refusal with a stable, registered code."""
    with cpu_guard():
        try:
            result = run()
            OUTCOMES["accepted"] += 1
        except TrgcError as error:
            assert error.code in CODES and error.code != "E_INTERNAL", str(error)
            assert error.exit_status in (2, 3), str(error)
            str(error).encode("utf-8", "backslashreplace")
            json.dumps(error.to_dict(), ensure_ascii=False)
            OUTCOMES[error.code] += 1
            result = None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    assert peak < RSS_CEILING, f"resident memory reached {peak >> 20} MiB"
    return result


# ------------------------------------------------------------------------------ mutations


HOSTILE_BYTES = b'\x00\xff\xc3\x80"\\[]{}(),:;|?*+%#\n\r\t '


@st.composite
def mutated(draw, data: bytes, max_edits: int = 4) -> bytes:
    """`data` with a few byte-level edits: flips, insertions of hostile bytes, deletions,
    duplicated or truncated spans."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, max_edits))):
        if not out:
            out += draw(st.binary(min_size=1, max_size=4))
            continue
        at = draw(st.integers(0, len(out) - 1))
        kind = draw(st.sampled_from(["flip", "insert", "delete", "repeat", "truncate", "set"]))
        if kind == "flip":
            out[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "insert":
            out[at:at] = draw(
                st.binary(max_size=3)
                | st.sampled_from(list(HOSTILE_BYTES)).map(lambda b: bytes([b]))
            )
        elif kind == "delete":
            del out[at : at + draw(st.integers(1, 8))]
        elif kind == "repeat":
            span = out[at : at + draw(st.integers(1, 16))]
            out[at:at] = span * draw(st.integers(1, 50))
        elif kind == "truncate":
            del out[at:]
        else:
            out[at] = draw(st.sampled_from(list(HOSTILE_BYTES)))
    return bytes(out)


HOSTILE_INTS = st.sampled_from(
    [
        0,
        1,
        -1,
        2,
        255,
        256,
        65535,
        2**31 - 1,
        2**31,
        2**32 - 1,
        2**32,
        2**53,
        2**63 - 1,
        2**63,
        2**64,
        10**30,
    ]
)
HOSTILE_SCALARS = st.one_of(
    HOSTILE_INTS,
    st.sampled_from([True, False, None, "", "x", "\ud800", 1.5, 1e308, -0.0, "sha256:" + "0" * 64]),
    st.text(max_size=8),
)
JSON_VALUES = st.recursive(
    HOSTILE_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


DEEP = "\u2063deep\u2063"  # a placeholder value, replaced by deep nesting after json.dumps


def dumps_with_depth(value: object, depth: int, **options) -> bytes:
    """`json.dumps(value)` in which the string DEEP becomes `depth` nested arrays (deeper than
    json.dumps itself could write)."""
    text = json.dumps(value, **options)
    return text.replace(json.dumps(DEEP), "[" * depth + "]" * depth).encode(
        "utf-8", "surrogatepass"
    )


# ------------------------------------------------------------------------------ trg-1 sources


_NAMES = ["a", "b", "value", "item", "x_1", "special", "start", "Z"]


def _trg_literal(text: str) -> str:
    body = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{body}"'


_ATOM = st.one_of(
    st.text(max_size=5).map(_trg_literal),
    st.sampled_from(['"\\x41"', '"\\u{1F600}"', '"\\u{D800}"', '"\\x80"', '"\\q"', '""']),
    st.sampled_from(
        ["[a-z]", '[^"\\\\]', "[0-9a-fA-F]", "[z-a]", "[]", "[\\u{10FFFF}]", "[^\\x00-\\u{10FFFF}]"]
    ),
    st.sampled_from(_NAMES),
    st.sampled_from(['special("<s>")', 'special("")', 'special("</tool>")']),
)
_SUFFIX = st.one_of(
    st.just(""),
    st.sampled_from(["?", "*", "+"]),
    st.tuples(st.integers(0, 300), st.integers(0, 300)).map(lambda mn: f"{{{mn[0]},{mn[1]}}}"),
    HOSTILE_INTS.map(lambda n: f"{{{n}}}"),
    st.integers(0, 50).map(lambda n: f"{{{n},}}"),
)


@st.composite
def _expression(draw, depth: int = 0) -> str:
    alternatives = []
    for _ in range(draw(st.integers(1, 3))):
        items = []
        for _ in range(draw(st.integers(1, 4))):
            if depth < 3 and draw(st.booleans()) and draw(st.booleans()):
                item = "(" + draw(_expression(depth + 1)) + ")"
            else:
                item = draw(_ATOM)
            items.append(item + draw(_SUFFIX))
        alternatives.append(" ".join(items))
    return " | ".join(alternatives)


@st.composite
def trg_sources(draw) -> bytes:
    """trg-1 text: a header, directives and rules drawn from the language's own grammar, or a
    shipped grammar with byte-level edits."""
    if draw(st.integers(0, 3)) == 0:
        shipped = sorted((ROOT / "grammars").glob("*.trg"))
        return draw(mutated(draw(st.sampled_from(shipped)).read_bytes()))
    lines = [draw(st.sampled_from(["%trg 1", "%trg 1", "%trg 2", "", "%trg 1 # c"]))]
    names = draw(st.lists(st.sampled_from(_NAMES), min_size=1, max_size=5, unique=True))
    lines.append(f"%start {draw(st.sampled_from(names + ['missing']))}")
    if draw(st.booleans()):
        lines.append(f"%max_depth {draw(HOSTILE_INTS)}")
    if draw(st.integers(0, 9)) == 0:
        lines.append(draw(st.sampled_from(["%include x", "%start a", "%max_depth 0"])))
    for name in names:
        lines.append(f"{name} ::= {draw(_expression())} ;")
    text = "\n".join(lines) + "\n"
    if draw(st.integers(0, 4)) == 0:
        return draw(mutated(text.encode("utf-8", "surrogatepass")))
    return text.encode("utf-8", "surrogatepass")


def target_trg(source: bytes) -> None:
    import trgc

    artifact = expect_stable(lambda: trgc.compile_grammar(source, limits=LIMITS))
    if artifact is not None:
        _use_artifact(artifact)


def _use_artifact(artifact) -> None:
    """A compiled artifact works: it round-trips and checks a few inputs."""
    from trgc.artifact import codec
    from trgc.artifact.check import check

    data = codec.encode(artifact)
    assert codec.encode(codec.decode(data)) == data
    for probe in (b"", b"a", b'{"a":[1,2]}', b"\xff", bytes(range(32, 48))):
        expect_stable(lambda probe=probe: check(artifact, probe, prefix=True))


# ------------------------------------------------------------------------------ JSON Schemas


_TYPES = ["null", "boolean", "object", "array", "number", "integer", "string"]
_DRAFTS = [
    "https://json-schema.org/draft/2020-12/schema",
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-04/schema#",
    "http://example.com/unknown",
]


def _schema_nodes(inner):
    number = st.one_of(
        st.integers(-(2**60), 2**60), st.floats(allow_nan=False, allow_infinity=False), HOSTILE_INTS
    )
    keyword = st.one_of(
        st.tuples(
            st.just("type"), st.sampled_from(_TYPES) | st.lists(st.sampled_from(_TYPES), max_size=3)
        ),
        st.tuples(st.just("properties"), st.dictionaries(st.text(max_size=5), inner, max_size=4)),
        st.tuples(st.just("required"), st.lists(st.text(max_size=5), max_size=4)),
        st.tuples(st.just("additionalProperties"), st.booleans() | inner),
        st.tuples(st.just("items"), inner),
        st.tuples(st.just("prefixItems"), st.lists(inner, max_size=3)),
        st.tuples(
            st.sampled_from(["minItems", "maxItems", "minLength", "maxLength"]),
            HOSTILE_INTS | st.integers(0, 40),
        ),
        st.tuples(
            st.sampled_from(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]),
            number | st.booleans(),
        ),
        st.tuples(st.just("enum"), st.lists(JSON_VALUES, max_size=5)),
        st.tuples(st.just("const"), JSON_VALUES),
        st.tuples(st.sampled_from(["anyOf", "oneOf", "allOf"]), st.lists(inner, max_size=3)),
        st.tuples(
            st.just("$ref"),
            st.sampled_from(
                ["#", "#/$defs/a", "#/$defs/b", "#/properties/x", "other.json", "#/$defs/%25"]
            ),
        ),
        st.tuples(
            st.just("pattern"),
            st.sampled_from(["^a+$", "[a-", "(a|b)*c", "\\d{1,3}", "(?=x)", "a{2,1}", ".*"]),
        ),
        st.tuples(
            st.just("format"), st.sampled_from(["date", "email", "uuid", "date-time", "bogus"])
        ),
        st.tuples(
            st.sampled_from(["title", "description", "x-note", "unknownKeyword", "uniqueItems"]),
            JSON_VALUES,
        ),
    )
    return st.lists(keyword, max_size=5).map(dict) | st.booleans()


SCHEMA_VALUES = st.recursive(st.builds(dict) | st.booleans(), _schema_nodes, max_leaves=10)


_HOSTILE_KEYS = st.sampled_from(["", "a", "\ud800", "a/b", "~0", "\u2028", "$ref", "x" * 300])
_NUMBERS = st.one_of(
    HOSTILE_INTS,
    HOSTILE_INTS.map(lambda n: -n),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.1, 1e-400, 5e-324, 1.0, 2.5]),
)
# small satisfiable shapes with a hostile value where the lowering must use it
FOCUSED_SCHEMAS = st.one_of(
    JSON_VALUES.map(lambda v: {"const": v}),
    st.lists(JSON_VALUES, min_size=1, max_size=4).map(lambda vs: {"enum": vs}),
    st.dictionaries(_HOSTILE_KEYS, st.builds(dict), min_size=1, max_size=3).map(
        lambda p: {"type": "object", "properties": p, "required": sorted(p)[:1]}
    ),
    st.tuples(st.sampled_from(["integer", "number"]), _NUMBERS, _NUMBERS).map(
        lambda t: {"type": t[0], "minimum": min(t[1], t[2]), "maximum": max(t[1], t[2])}
    ),
    st.tuples(st.sampled_from(["exclusiveMinimum", "multipleOf", "maximum"]), _NUMBERS).map(
        lambda t: {"type": "number", t[0]: t[1]}
    ),
    st.tuples(HOSTILE_INTS, HOSTILE_INTS).map(
        lambda t: {"type": "string", "minLength": min(t), "maxLength": max(t)}
    ),
    st.tuples(HOSTILE_INTS, HOSTILE_INTS).map(
        lambda t: {
            "type": "array",
            "items": {"type": "integer"},
            "minItems": min(t),
            "maxItems": max(t),
        }
    ),
    st.sampled_from(
        ["^a+$", "[a-", "(a|b)*c", "\\d{1,3}", "(?=x)", "a{2,1}", "\\ud800", "[\\ud800-\\udfff]"]
    ).map(lambda p: {"type": "string", "pattern": p}),
)


@st.composite
def schemas(draw) -> bytes:
    """Schema JSON text: documents from the keyword matrix with hostile values, a `$defs` for
    the references to land on, sometimes a `$schema`; or shipped schemas with byte edits."""
    if draw(st.integers(0, 4)) == 0:
        shipped = sorted((ROOT / "schemas").glob("*.json")) + sorted(
            (ROOT / "benchmarks" / "quality" / "schemas").glob("*.json")
        )
        return draw(mutated(draw(st.sampled_from(shipped)).read_bytes()))
    value = draw(SCHEMA_VALUES if draw(st.booleans()) else FOCUSED_SCHEMAS)
    if isinstance(value, dict):
        if draw(st.booleans()):
            value["$defs"] = {"a": draw(SCHEMA_VALUES), "b": draw(SCHEMA_VALUES)}
        if draw(st.integers(0, 3)) == 0:
            value["$schema"] = draw(st.sampled_from(_DRAFTS))
    # mostly ASCII escapes: raw surrogates would be refused as invalid UTF-8 before anything else
    ascii_only = draw(st.integers(0, 3)) > 0
    text = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 5)) == 0:
        return draw(mutated(text))
    return text


def target_schema(text: bytes) -> None:
    import trgc

    artifact = expect_stable(lambda: trgc.compile_schema(text, limits=LIMITS))
    if artifact is not None:
        _use_artifact(artifact)


# ------------------------------------------------------------------------------ tokenizer files


_BYTE_LEVEL_CHARS = 'abcdefgĠĊ{}[]":,0123456789ĉÿĀ'


@st.composite
def tokenizer_folders(draw) -> dict[str, bytes]:
    """The files of one tokenizer folder: a Hugging Face tokenizer.json (byte-level or
    SentencePiece-style), vocab.json + merges.txt, or a tiktoken rank file with its sidecar."""
    layout = draw(st.sampled_from(["tokenizer.json", "vocab-merges", "tiktoken", "synthetic"]))
    files: dict[str, bytes] = {}
    pieces = draw(
        st.lists(
            st.text(alphabet=_BYTE_LEVEL_CHARS, min_size=1, max_size=4),
            min_size=0,
            max_size=30,
            unique=True,
        )
    )
    ids = draw(
        st.lists(HOSTILE_INTS | st.integers(0, 60), min_size=len(pieces), max_size=len(pieces))
    )
    vocab = (
        dict(zip(pieces, ids, strict=True))
        if draw(st.booleans())
        else {p: i for i, p in enumerate(pieces)}
    )
    merges = draw(
        st.lists(
            st.one_of(
                st.tuples(st.sampled_from(pieces or ["a"]), st.sampled_from(pieces or ["b"])).map(
                    " ".join
                ),
                st.tuples(st.sampled_from(pieces or ["a"]), st.sampled_from(pieces or ["b"])).map(
                    list
                ),
                JSON_VALUES,
            ),
            max_size=6,
        )
    )
    if layout == "synthetic":
        folder = (
            ROOT
            / "tokenizers"
            / "synthetic"
            / draw(st.sampled_from(["json-bytelevel", "sp-bytefallback"]))
        )
        for path in folder.iterdir():
            files[path.name] = path.read_bytes()
        name = draw(st.sampled_from(sorted(files)))
        files[name] = draw(mutated(files[name]))
    elif layout == "tokenizer.json":
        style = draw(st.sampled_from(["ByteLevel", "Metaspace", "junk"]))
        decoder = {"type": style} if style != "junk" else draw(JSON_VALUES)
        doc = {
            "version": "1.0",
            "added_tokens": draw(
                st.lists(
                    st.fixed_dictionaries(
                        {
                            "id": HOSTILE_INTS | st.integers(0, 60),
                            "content": st.text(max_size=6),
                            "special": st.booleans(),
                        }
                    ),
                    max_size=3,
                )
            ),
            "pre_tokenizer": None,
            "decoder": decoder,
            "model": {
                "type": draw(st.sampled_from(["BPE", "BPE", "Unigram", "WordPiece"])),
                "vocab": vocab,
                "merges": merges,
                "byte_fallback": draw(st.booleans()),
            },
        }
        files["tokenizer.json"] = json.dumps(doc, ensure_ascii=False).encode(
            "utf-8", "surrogatepass"
        )
        if draw(st.booleans()):
            files["tokenizer_config.json"] = json.dumps({"eos_token": draw(JSON_VALUES)}).encode()
    elif layout == "vocab-merges":
        files["vocab.json"] = json.dumps(vocab, ensure_ascii=False).encode("utf-8", "surrogatepass")
        lines = ["#version: 0.2"] + [m if isinstance(m, str) else json.dumps(m) for m in merges]
        files["merges.txt"] = "\n".join(lines).encode("utf-8", "surrogatepass")
    else:
        import base64

        rows = [f"{base64.b64encode(p.encode('utf-8')).decode()} {i}" for p, i in vocab.items()]
        if draw(st.booleans()):
            rows.append(draw(st.sampled_from(["!!! 3", "YQ== x", "YQ==", "YQ== 99999999999", ""])))
        files["r.tiktoken"] = "\n".join(rows).encode()
        specials = {"<|endoftext|>": draw(HOSTILE_INTS | st.integers(0, 80))}
        files["special_tokens.json"] = json.dumps({"special_tokens": specials}).encode()
    return files


def target_tokenizer(files: dict[str, bytes]) -> None:
    from trgc.tokenizer.load import build_table

    with tempfile.TemporaryDirectory() as scratch:
        for name, data in files.items():
            (Path(scratch) / name).write_bytes(data)
        table = expect_stable(lambda: build_table(scratch))
        if table is not None:
            from trgc.tokenizer.table import TokenTable

            expect_stable(lambda: table.trie)
            again = TokenTable.from_bytes(table.to_bytes())
            assert again.sha256 == table.sha256


# ------------------------------------------------------------------------------ binary formats


@cache
def seed_artifacts() -> tuple[bytes, ...]:
    """Canonical bytes of artifacts of several shapes (recursion, specials, counters, schema)."""
    import trgc
    from trgc.artifact import codec

    out = []
    for name in ("json.trg", "tinycalc.trg", "toolcall.trg", "csv.trg"):
        artifact = trgc.compile_grammar((ROOT / "grammars" / name).read_bytes())
        out.append(codec.encode(artifact))
    out.append(codec.encode(trgc.compile_schema((ROOT / "schemas" / "person.json").read_bytes())))
    return tuple(out)


def _sections(data: bytes) -> dict[bytes, tuple[int, int]]:
    from trgc.artifact import codec

    return codec._frame_sections(data)


def _reframe(data: bytes, tag: bytes, payload: bytes) -> bytes:
    """`data` with one section's payload replaced and the digest recomputed."""
    from trgc.artifact import codec

    sections = _sections(data)
    out = codec._Writer()
    out.raw(codec.MAGIC)
    out.u32(codec.FORMAT_VERSION)
    for name in codec.SECTIONS[:-1]:
        start, end = sections[name]
        out.section(name, payload if name == tag else data[start:end])
    out.section(b"DGST", hashlib.sha256(out.buf).digest())
    return bytes(out.buf)


@st.composite
def _word_edits(draw, payload: bytes) -> bytes:
    """Overwrite a few aligned 32-bit words with hostile values (counts, ids, depths)."""
    out = bytearray(payload)
    for _ in range(draw(st.integers(1, 3))):
        if len(out) < 4:
            break
        at = 4 * draw(st.integers(0, len(out) // 4 - 1))
        value = draw(
            st.sampled_from([0, 1, 2, 3, 255, 256, 2**31 - 1, 2**31, 2**32 - 1])
            | st.integers(0, 2**32 - 1)
        )
        out[at : at + 4] = struct.pack("<I", value)
    return bytes(out)


@st.composite
def artifacts(draw) -> bytes:
    """Artifact content: a seed with one section rewritten (JSON edits of META, hostile words in
    MACH/LIMT/BCLS/SPEC) and re-digested, or raw byte edits, sometimes inside the zstd frame."""
    from trgc.artifact import codec

    data = draw(st.sampled_from(seed_artifacts()))
    tag = draw(st.sampled_from([b"META", b"SPEC", b"BCLS", b"MACH", b"LIMT", b"SRCH", b"raw"]))
    if tag == b"raw":
        content = draw(mutated(data))
    else:
        start, end = _sections(data)[tag]
        payload = data[start:end]
        if tag == b"META" and draw(st.booleans()):
            meta = json.loads(payload)
            meta[draw(st.sampled_from([*meta, "extra"]))] = draw(JSON_VALUES)
            payload = json.dumps(meta).encode()  # escapes a lone surrogate as \ud800
            if draw(st.booleans()):
                with contextlib.suppress(UnicodeEncodeError):  # canonical JSON is raw UTF-8
                    payload = codec.canonical_json(meta)
        elif draw(st.booleans()):
            payload = draw(_word_edits(payload))
        else:
            payload = draw(mutated(payload))
        content = _reframe(data, tag, payload)
    return codec.compress(content) if draw(st.booleans()) else content


def target_artifact(blob: bytes) -> None:
    from trgc.artifact import codec
    from trgc.artifact.check import check
    from trgc.artifact.inspect import summary
    from trgc.engine.config import flatten

    artifact = expect_stable(lambda: codec.from_file_bytes(blob, limits=LIMITS))
    if artifact is None:
        return
    expect_stable(lambda: summary(artifact))
    data = codec.encode(artifact)
    assert codec.encode(codec.decode(data)) == data
    expect_stable(lambda: flatten(artifact))
    for probe in (b"", b"[1]", b'{"a":1}', b"1+2"):
        expect_stable(lambda probe=probe: check(artifact, probe, prefix=True))


@cache
def seed_table() -> bytes:
    from trgc.tokenizer import codec

    return codec.read_table_bytes(ROOT / "tokenizers" / "gpt2.trt")


@st.composite
def token_tables(draw) -> bytes:
    """`.trt` content: the header JSON edited, hostile words in the arrays, or raw edits; the
    sha256 trailer recomputed unless the edit is raw."""
    from trgc.tokenizer import codec

    blob = seed_table()
    pos = len(codec.MAGIC)
    _, meta_len = struct.unpack_from("<IQ", blob, pos)
    start = pos + 12
    header, body = blob[start : start + meta_len], blob[start + meta_len : -32]
    kind = draw(st.sampled_from(["header", "arrays", "raw", "sizes"]))
    if kind == "raw":
        return draw(mutated(blob))
    if kind == "header":
        doc = json.loads(header)
        field = draw(st.sampled_from([*doc, "extra"]))
        doc[field] = draw(JSON_VALUES | st.just(DEEP))
        compact = {"sort_keys": True, "separators": (",", ":"), "ensure_ascii": False}
        header = dumps_with_depth(
            doc, draw(st.integers(1, 5000)), **(compact if draw(st.booleans()) else {})
        )
    elif kind == "sizes":
        vocab_size, data_len = struct.unpack_from("<QQ", body)
        vocab_size = draw(st.sampled_from([0, 1, vocab_size - 1, vocab_size + 1, 2**40, 2**64 - 1]))
        body = struct.pack("<QQ", vocab_size, data_len) + body[16:]
    else:
        body = body[:16] + draw(_word_edits(body[16 : 16 + 4096])) + body[16 + 4096 :]
    content = codec.MAGIC + struct.pack("<IQ", codec.FORMAT_VERSION, len(header)) + header + body
    content += hashlib.sha256(content).digest()
    return codec.compress(content) if draw(st.booleans()) else content


def target_token_table(blob: bytes) -> None:
    from trgc.tokenizer.table import TokenTable

    table = expect_stable(lambda: TokenTable.from_bytes(blob, source="fuzz.trt"))
    if table is not None:
        expect_stable(lambda: table.trie)
        for i in (0, table.vocab_size - 1):
            if 0 <= i < table.vocab_size:
                table.token_bytes(i)


@cache
def seed_masks():
    """(artifact, table, canonical .trm bytes) for the JSON grammar over the synthetic tokenizer."""
    import trgc
    from trgc.engine import trm
    from trgc.engine.precompute import precompute

    artifact = trgc.compile_grammar((ROOT / "grammars" / "json.trg").read_bytes())
    table = trgc.load_tokenizer(ROOT / "tokenizers" / "synthetic" / "json-bytelevel")
    return artifact, table, trm.to_bytes(precompute(artifact, table))


@cache
def warm_kernel() -> None:
    """Compile the mask kernel (or load it from numba's cache) before the first guarded
    example: a first compile takes about 30 s of CPU, which the example's CPU guard would
    count (a false finding, or an exception raised inside llvmlite's callbacks)."""
    from trgc.engine.matcher import Matcher

    artifact, table, _ = seed_masks()
    matcher = Matcher(artifact, table)
    matcher.advance(int(matcher.allowed_tokens().nonzero()[0][0]))
    matcher.allowed_tokens()


@st.composite
def mask_caches(draw) -> bytes:
    """`.trm` files: header JSON edits, hostile words in the arrays or raw edits, re-digested,
    in one zstd frame (sometimes followed by junk)."""
    import zstandard

    from trgc.engine import trm

    data = seed_masks()[2]
    body = data[:-32]
    (header_len,) = struct.unpack_from("<I", body, len(trm.MAGIC) + 4)
    start = len(trm.MAGIC) + 8
    header = body[start : start + header_len]
    arrays = body[start + header_len + (-(start + header_len) % 4) :]
    kind = draw(st.sampled_from(["header", "arrays", "raw"]))
    if kind == "raw":
        content = draw(mutated(data))
    else:
        if kind == "header":
            doc = json.loads(header)
            doc[draw(st.sampled_from([*doc, "extra"]))] = draw(JSON_VALUES)
            header = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode(
                "utf-8", "surrogatepass"
            )
        else:
            arrays = draw(_word_edits(arrays))
        prefix = trm.MAGIC + struct.pack("<II", trm.VERSION, len(header)) + header
        content = prefix + b"\0" * (-len(prefix) % 4) + arrays
        content += hashlib.sha256(content).digest()
    blob = zstandard.ZstdCompressor(level=1).compress(content)
    if draw(st.integers(0, 5)) == 0:
        blob += draw(st.binary(min_size=1, max_size=8))
    return blob


def target_mask_cache(blob: bytes) -> None:
    from trgc.engine import trm
    from trgc.engine.binding import bind
    from trgc.engine.matcher import Matcher

    artifact, table, _ = seed_masks()
    warm_kernel()
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "fuzz.trm"
        path.write_bytes(blob)
        masks = expect_stable(
            lambda: trm.load_masks(path, binding=bind(artifact, table), limits=LIMITS)
        )
    if masks is not None:
        matcher = Matcher(artifact, table, precomputed=masks)
        expect_stable(matcher.allowed_tokens)


# ------------------------------------------------------------------------------ traces, locks


TRACES = ("sampled", "greedy", "cancelled", "filters", "max-tokens")


@st.composite
def traces(draw) -> tuple[str, bytes]:
    """A golden trace with edits: a field of a line replaced (hostile values, nesting), a field
    added or removed, lines deleted, repeated or swapped, line ends changed; or byte edits."""
    name = draw(st.sampled_from(TRACES))
    lines = (GOLDEN / f"{name}.jsonl").read_bytes().split(b"\n")[:-1]
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(
            st.sampled_from(["same type", "field", "nested field", "drop field", "line", "bytes"])
        )
        index = draw(st.integers(0, len(lines) - 1))
        try:
            record = json.loads(lines[index])
        except ValueError:  # an earlier edit left no JSON object here: edit its bytes instead
            record = None
        if not isinstance(record, dict) or not record:
            kind = "bytes" if kind != "line" else kind
        if kind in ("same type", "field", "nested field", "drop field"):
            key = draw(st.sampled_from(sorted(record)))
            if kind == "same type":  # still well-formed: replay must find the divergence
                old = record[key]
                if isinstance(old, bool):
                    record[key] = not old
                elif isinstance(old, int):
                    record[key] = draw(st.integers(0, max(2 * old, 4)))
                elif isinstance(old, float):
                    record[key] = draw(st.floats(0, 100))
                elif isinstance(old, str):
                    record[key] = draw(st.sampled_from([old[:-1], old + "0", old.upper(), "eos"]))
            elif kind == "drop field":
                del record[key]
            elif kind == "nested field" and isinstance(record[key], dict) and record[key]:
                record[key][draw(st.sampled_from(sorted(record[key])))] = draw(JSON_VALUES)
            else:
                record[key] = draw(JSON_VALUES | st.just(DEEP))
            lines[index] = dumps_with_depth(
                record,
                draw(st.integers(1, 3000)),
                sort_keys=True,
                separators=(",", ":"),
                ensure_ascii=False,
            )
        elif kind == "line":
            action = draw(st.sampled_from(["delete", "repeat", "swap", "crlf", "blank"]))
            if action == "delete" and len(lines) > 1:
                del lines[index]
            elif action == "repeat":
                lines.insert(index, lines[index])
            elif action == "swap" and index + 1 < len(lines):
                lines[index], lines[index + 1] = lines[index + 1], lines[index]
            elif action == "crlf":
                lines[index] += b"\r"
            else:
                lines.insert(index, b"")
        else:
            lines[index] = draw(mutated(lines[index]))
    return name, b"\n".join(lines) + (b"\n" if draw(st.integers(0, 5)) else b"")


def target_trace(case: tuple[str, bytes]) -> None:
    import shutil

    from trgc.decode.session import replay_file
    from trgc.decode.stats import trace_stats
    from trgc.decode.trace import parse_trace

    name, data = case
    warm_kernel()
    parsed = expect_stable(lambda: parse_trace(data, source="fuzz.jsonl"))
    if parsed is not None:
        expect_stable(lambda: trace_stats([parsed]))
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for file in (f"{name}.jsonl.logits.zst", "json.trga", "json-bytelevel.trt", "steps.npy"):
            shutil.copy(GOLDEN / file, folder / file)
        (folder / f"{name}.jsonl").write_bytes(data)
        report = expect_stable(lambda: replay_file(folder / f"{name}.jsonl"))
        if parsed is None:
            assert report is None, "replay accepted a trace that parse_trace refuses"


GRAMMAR = b'%trg 1\n%start a\na ::= "x" [0-9]{1,3} ;\n'


@st.composite
def lock_files(draw) -> bytes:
    """A valid lock (for GRAMMAR as g.trg) with TOML-level edits: values of other types, other
    hashes, paths outside the lock's folder, missing or extra keys, deep nesting; or byte edits."""
    lines = [
        "[lock]",
        'format = "trgc-lock-1"',
        'compiler = "trgc 0.1.0"',
        "",
        "[lock.limits]",
        *(f"{k} = {v}" for k, v in sorted(LIMITS.to_dict().items())),
        "",
        "[entries.g]",
        'source = "g.trg"',
        'source_sha256 = "sha256:' + hashlib.sha256(GRAMMAR).hexdigest() + '"',
        'artifact = "g.trga"',
        'artifact_sha256 = "sha256:' + "0" * 64 + '"',
    ]
    values = st.one_of(
        st.sampled_from(
            [
                '"/dev/zero"',
                '"../../etc/passwd"',
                '"C:/x"',
                '""',
                "5",
                "true",
                "[]",
                "{}",
                '"sha256:zz"',
                "-1",
                str(2**64),
            ]
        ),
        st.integers(1, 20000).map(lambda n: "[" * n + "]" * n),
        st.text(alphabet="abc\"'[]{}=.\\ ", max_size=10).map(json.dumps),
    )
    for _ in range(draw(st.integers(1, 3))):
        index = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(["value", "drop", "extra", "bytes"]))
        if kind == "value" and " = " in lines[index]:
            key = lines[index].split(" = ")[0]
            lines[index] = f"{key} = {draw(values)}"
        elif kind == "drop":
            del lines[index]
        elif kind == "extra":
            lines.insert(
                index, f"{draw(st.sampled_from(['bogus', 'x', 'limits']))} = {draw(values)}"
            )
        else:
            lines[index] = draw(mutated(lines[index].encode())).decode("utf-8", "replace")
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


def target_lock(data: bytes) -> None:
    from trgc.release.lockfile import verify

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "g.trg").write_bytes(GRAMMAR)
        (folder / "trgc.lock").write_bytes(data)
        expect_stable(lambda: verify(folder / "trgc.lock"))


# kind -> (strategy, target), in the order `make fuzz` runs them
KINDS: dict[str, tuple[st.SearchStrategy, Callable]] = {
    "trg": (trg_sources(), target_trg),
    "schema": (schemas(), target_schema),
    "tokenizer": (tokenizer_folders(), target_tokenizer),
    "artifact": (artifacts(), target_artifact),
    "token-table": (token_tables(), target_token_table),
    "mask-cache": (mask_caches(), target_mask_cache),
    "trace": (traces(), target_trace),
    "lock": (lock_files(), target_lock),
}
