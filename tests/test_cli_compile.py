"""`trgc compile | inspect | diff | check`: output, JSON shape and exit statuses."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from artifact_fixtures import brackets, literal
from trgc.artifact.codec import load_artifact
from trgc.cli.app import app
from trgc.compiler.build import compile_grammar

SHA_LINE = re.compile(r"^sha256:[0-9a-f]{64}\n$")
GRAMMAR = """%trg 1
%start list
list ::= "[" ( item ( "," item )* )? "]" ;
item ::= [0-9]+ | list ;
"""


def run(*args: str, input: bytes | str | None = None):
    return CliRunner().invoke(app, list(args), input=input)


@pytest.fixture
def grammar(tmp_path):
    path = tmp_path / "list.trg"
    path.write_text(GRAMMAR, encoding="utf-8")
    return path


@pytest.fixture
def compiled(tmp_path, grammar):
    out = tmp_path / "list.trga"
    assert run("compile", str(grammar), "-o", str(out)).exit_code == 0
    return out


# ------------------------------------------------------------------ compile


def test_compile_prints_identity_and_writes_file(tmp_path, grammar):
    out = tmp_path / "out.trga"
    result = run("compile", str(grammar), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert SHA_LINE.match(result.stdout)
    expected = compile_grammar(GRAMMAR).sha256
    assert result.stdout.strip() == expected
    assert load_artifact(out).sha256 == expected


def test_compile_without_output_writes_nothing(tmp_path, grammar, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    result = run("compile", str(grammar))
    assert result.exit_code == 0
    assert SHA_LINE.match(result.stdout)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_compile_from_stdin():
    result = run("compile", "-", input=GRAMMAR)
    assert result.exit_code == 0
    assert result.stdout.strip() == compile_grammar(GRAMMAR).sha256


def test_compile_json(tmp_path, grammar):
    out = tmp_path / "out.trga"
    result = run("compile", str(grammar), "-o", str(out), "--json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["annotations"] == []  # a grammar has none; see test_schema_annotate
    assert set(doc) == {
        "annotations",
        "sha256",
        "source",
        "source_sha256",
        "output",
        "size",
        "states",
        "transitions",
        "machines",
        "features",
    }
    assert doc["output"] == str(out) and doc["source"] == str(grammar)
    assert doc["size"]["compressed"] == out.stat().st_size
    assert doc["machines"] == ["list", "item"]
    assert "recursion" in doc["features"]


def test_compile_error_has_code_position_and_no_traceback(tmp_path):
    bad = tmp_path / "bad.trg"
    bad.write_text('%trg 1\na ::= "x" b ;\n', encoding="utf-8")
    result = run("compile", str(bad), "-o", str(tmp_path / "bad.trga"))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "E_" in result.stderr and str(bad) in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "bad.trga").exists()


def test_compile_error_json_goes_to_stderr(tmp_path):
    bad = tmp_path / "bad.trg"
    bad.write_text('%trg 1\na ::= "x ;\n', encoding="utf-8")
    result = run("compile", str(bad), "--json")
    assert result.exit_code == 2 and result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert error["code"].startswith("E_") and error["line"] == 2


def test_compile_limit_option(grammar):
    result = run("compile", str(grammar), "--limit", "states=2")
    assert result.exit_code == 3
    assert "E_LIMIT_STATES" in result.stderr


def test_compile_refuses_a_tiled_operand_over_the_limit_and_writes_nothing(tmp_path):
    """A pattern beside a maxLength: its length operand is tiled (`automata/chains.py`) and
    checked against the state limit before it is built; the refusal names the schema place."""
    schema = tmp_path / "s.json"
    schema.write_text('{"type":"string","pattern":"^a.*b$","maxLength":100}', encoding="utf-8")
    out = tmp_path / "s.trga"
    result = run("compile", str(schema), "-o", str(out), "--limit", "states=1000")
    assert result.exit_code == 3 and not out.exists()
    assert "E_LIMIT_STATES" in result.stderr and "/pattern" in result.stderr
    assert "--limit states=N" in result.stderr and "Traceback" not in result.stderr


def test_compile_limits_file_and_unknown_limit(tmp_path, grammar):
    limits = tmp_path / "limits.toml"
    limits.write_text("[limits]\nstates = 2\n", encoding="utf-8")
    assert run("compile", str(grammar), "--limits-file", str(limits)).exit_code == 3
    # a --limit after the file wins
    assert (
        run(
            "compile", str(grammar), "--limits-file", str(limits), "--limit", "states=1000"
        ).exit_code
        == 0
    )
    result = run("compile", str(grammar), "--limit", "stats=5")
    assert result.exit_code == 3 and "E_LIMIT_UNKNOWN" in result.stderr
    result = run("compile", str(grammar), "--limit", "states")
    assert result.exit_code == 2 and "E_USAGE" in result.stderr


def test_limits_are_recorded_and_change_identity(grammar):
    default = run("compile", str(grammar)).stdout
    raised = run("compile", str(grammar), "--limit", "states=70000").stdout
    assert default != raised


def test_compile_missing_source(tmp_path):
    result = run("compile", str(tmp_path / "absent.trg"))
    assert result.exit_code == 2 and "E_IO" in result.stderr


def test_json_source_dispatches_to_schema_compiler(tmp_path):
    from trgc.compiler.schema import compile_schema

    schema = tmp_path / "s.json"
    schema.write_text('{"type": "integer"}', encoding="utf-8")
    result = run("compile", str(schema))
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == compile_schema('{"type": "integer"}').sha256
    result = run("compile", "-", input='  {"type": "string"}')
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == compile_schema('  {"type": "string"}').sha256
    pretty = run("compile", str(schema), "--separators", "pretty")
    assert pretty.exit_code == 0


# ------------------------------------------------------------------ inspect


def test_inspect_human(compiled):
    result = run("inspect", str(compiled))
    assert result.exit_code == 0
    identity = load_artifact(compiled).sha256
    assert identity in result.stdout
    for word in (
        "states",
        "machines",
        "byte classes",
        "specials",
        "limits",
        "source",
        "list",
        "item",
    ):
        assert word in result.stdout


def test_inspect_json(compiled):
    result = run("inspect", str(compiled), "--json", "--classes")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    art = load_artifact(compiled)
    assert doc["sha256"] == art.sha256
    assert doc["size"]["compressed"] == compiled.stat().st_size
    assert doc["size"]["canonical"] == len(art.to_bytes())
    assert [m["name"] for m in doc["machines"]] == ["list", "item"]
    assert doc["start"] == "list" and doc["max_depth"] == 32
    assert doc["limits"]["states"] == 65536
    assert doc["source_sha256"].startswith("sha256:")
    assert len(doc["byte_class_ranges"]) == doc["byte_classes"]


def test_inspect_damaged_file(tmp_path, compiled):
    blob = bytearray(compiled.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    damaged = tmp_path / "damaged.trga"
    damaged.write_bytes(bytes(blob))
    result = run("inspect", str(damaged))
    assert result.exit_code == 2
    assert "E_ARTIFACT_CORRUPT" in result.stderr and "Traceback" not in result.stderr
    result = run("inspect", str(damaged), "--json")
    assert (
        result.stdout == "" and json.loads(result.stderr)["error"]["code"] == "E_ARTIFACT_CORRUPT"
    )


def test_inspect_not_an_artifact(grammar):
    result = run("inspect", str(grammar))
    assert result.exit_code == 2 and "E_NOT_AN_ARTIFACT" in result.stderr


# ------------------------------------------------------------------ diff


def test_diff_same(compiled, tmp_path):
    copy = tmp_path / "copy.trga"
    copy.write_bytes(compiled.read_bytes())
    result = run("diff", str(compiled), str(copy))
    assert result.exit_code == 0 and result.stdout.startswith("same: sha256:")


def test_diff_different_languages(tmp_path):
    a, b = tmp_path / "a.trga", tmp_path / "b.trga"
    literal(b"true").save(a)
    literal(b"trUe").save(b)
    result = run("diff", str(a), str(b))
    assert result.exit_code == 1
    assert "different" in result.stdout and "'trUe'" in result.stdout
    result = run("diff", str(a), str(b), "--json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["same"] is False and doc["language"]["witness_text"] == "trUe"
    assert set(doc) == {"same", "a", "b", "structure", "language"}


def test_diff_reports_bound_honestly(tmp_path):
    a, b = tmp_path / "a.trga", tmp_path / "b.trga"
    brackets(max_depth=8).save(a)
    brackets(max_depth=3).save(b)
    result = run("diff", str(a), str(b), "--max-length", "3")
    assert result.exit_code == 1
    assert "no distinguishing input found within the bound" in result.stdout
    assert "'[[a]]'" in run("diff", str(a), str(b)).stdout


def test_diff_unreadable(tmp_path, compiled):
    result = run("diff", str(compiled), str(tmp_path / "absent.trga"))
    assert result.exit_code == 2 and "E_IO" in result.stderr


# ------------------------------------------------------------------ check


def test_check_accepts_stdin(compiled):
    result = run("check", str(compiled), "-", input=b"[1,[2,3],[]]")
    assert result.exit_code == 0 and result.stdout.startswith("accepted")


def test_check_rejects_with_offset_and_allowed_bytes(compiled, tmp_path):
    data = tmp_path / "in.txt"
    data.write_bytes(b"[1,]")
    result = run("check", str(compiled), str(data))
    assert result.exit_code == 1
    assert "rejected at byte 3" in result.stdout
    assert "allowed: '0'..'9', '['" in result.stdout


def test_check_unexpected_end_and_prefix(compiled):
    result = run("check", str(compiled), "-", input=b"[1,2")
    assert result.exit_code == 1 and "rejected at byte 4: unexpected end of input" in result.stdout
    assert run("check", str(compiled), "-", "--prefix", input=b"[1,2").exit_code == 0
    assert run("check", str(compiled), "-", "--prefix", input=b"[1,,").exit_code == 1


def test_check_json(compiled):
    result = run("check", str(compiled), "-", "--json", input=b"[1x")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["accepted"] is False and doc["offset"] == 2 and doc["reason"] == "unexpected_byte"
    assert doc["allowed_bytes"] == [ord(","), *range(ord("0"), ord("9") + 1), ord("]")]
    assert doc["length"] == 3 and doc["artifact"] == load_artifact(compiled).sha256
    ok = json.loads(run("check", str(compiled), "-", "--json", input=b"[]").stdout)
    assert ok["accepted"] is True and ok["offset"] is None


def test_check_lists_allowed_specials(tmp_path):
    art = tmp_path / "b.trga"
    brackets().save(art)
    result = run("check", str(art), "-", input=b"a!")
    assert result.exit_code == 1
    assert 'allowed: special("<end>"), end of input' in result.stdout


def test_internal_error_exit_70(compiled, monkeypatch):
    import trgc.artifact.check as check_module

    def boom(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(check_module, "check", boom)
    result = run("check", str(compiled), "-", input=b"[]")
    assert result.exit_code == 70 and "E_INTERNAL" in result.stderr


def test_help_texts():
    for command in ("compile", "inspect", "diff", "check"):
        result = run(command, "--help")
        assert result.exit_code == 0
        assert "--json" in result.stdout
    assert "--limits-file" in run("compile", "--help").stdout
    assert "--prefix" in run("check", "--help").stdout


def test_compile_strict_rejects_unreachable_rules(tmp_path):
    src = tmp_path / "extra.trg"
    src.write_text(GRAMMAR + 'unused ::= "z" ;\n', encoding="utf-8")
    assert run("compile", str(src)).exit_code == 0
    result = run("compile", str(src), "--strict")
    assert result.exit_code == 2 and "E_UNREACHABLE_RULE" in result.stderr


def test_compile_compiled_bytes_limit(tmp_path, grammar):
    out = tmp_path / "small.trga"
    result = run("compile", str(grammar), "-o", str(out), "--limit", "compiled_bytes=200")
    assert result.exit_code == 3 and "E_LIMIT_COMPILED_BYTES" in result.stderr
    assert not out.exists()


def test_compile_real_schema(tmp_path):
    schema = tmp_path / "point.json"
    schema.write_text(
        '{"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}'
    )
    out = tmp_path / "point.trga"
    result = run("compile", str(schema), "-o", str(out))
    assert result.exit_code == 0 and SHA_LINE.match(result.stdout)
    assert run("check", str(out), "-", input=b'{"x": -7}').exit_code == 0  # pretty, the default
    assert run("check", str(out), "-", input=b'{"x": 1.5}').exit_code == 1
    compact = run("check", str(out), "-", input=b'{"x":-7}')
    assert compact.exit_code == 1 and "--whitespace compact" in compact.stdout
    bad = tmp_path / "bad.json"
    bad.write_text('{"type": "integer", "frobnicate": 1}')
    result = run("compile", str(bad))
    assert (
        result.exit_code == 2
        and "E_UNSUPPORTED_KEYWORD" in result.stderr
        and str(bad) in result.stderr
    )


def test_ignore_keyword_is_recorded_in_the_artifact(tmp_path):
    schema = tmp_path / "s.json"
    schema.write_text('{"type": "object", "_format": "x"}', encoding="utf-8")
    refused = run("compile", str(schema))
    assert refused.exit_code == 2 and "E_UNSUPPORTED_KEYWORD" in refused.stderr
    out = tmp_path / "s.trga"
    accepted = run("compile", str(schema), "--ignore-keyword", "_format", "-o", str(out))
    assert accepted.exit_code == 0, accepted.output
    assert load_artifact(out).metadata["options"]["ignore_keywords"] == ["_format"]


def test_check_input_is_bounded_by_the_input_bytes_limit(compiled, tmp_path):
    data = tmp_path / "big.txt"
    data.write_bytes(b"[" + b"1," * 40 + b"1]")
    over = run("check", str(compiled), str(data), "--limit", "input_bytes=64")
    assert over.exit_code == 3 and "E_LIMIT_INPUT_BYTES" in over.stderr
    piped = run("check", str(compiled), "-", "--limit", "input_bytes=64", input=data.read_bytes())
    assert piped.exit_code == 3 and "E_LIMIT_INPUT_BYTES" in piped.stderr
    assert run("check", str(compiled), str(data), "--limit", "input_bytes=83").exit_code == 0
