"""`trgc coverage` over a hostile benchmark folder: a schema that is no JSON, a hostile schema
value and a hostile instances file each end in a stable code, never in an internal error that
aborts the whole run (issue 17, item 5: "one such schema aborts a whole `trgc coverage` run").

Found while re-running the issue's cases: a truncated schema made the instance pass raise
JSONDecodeError (exit 70) and an instances line nested 100,000 deep raised RecursionError; the
instances file was also inflated without a ceiling.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trgc.cli.app import app
from trgc.errors import TrgcError
from trgc.evaluation.coverage import read_instances
from trgc.limits import file_cap

runner = CliRunner()


def coverage(bench: Path, instances: Path):
    result = runner.invoke(
        app,
        ["coverage", str(bench), "--instances", str(instances), "--json"],
        catch_exceptions=False,
    )
    assert "Traceback" not in result.output + result.stderr
    return result


def instances_file(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress("".join(line + "\n" for line in lines).encode("utf-8")))
    return path


@pytest.fixture
def bench(tmp_path) -> Path:
    folder = tmp_path / "bench" / "S"
    folder.mkdir(parents=True)
    (folder / "ok.json").write_text('{"type": "integer"}', encoding="utf-8")
    (folder / "truncated.json").write_text('{"type":', encoding="utf-8")
    (folder / "huge.json").write_text('{"const": 1e400}', encoding="utf-8")
    (folder / "deep.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    (folder / "surrogate.json").write_text('{"const": "\\ud800"}', encoding="utf-8")
    return tmp_path / "bench"


def test_hostile_schemas_are_outcomes_not_an_aborted_run(bench, tmp_path):
    record = [
        json.dumps({"file": name, "valid": True, "data": 1})
        for name in ("ok.json", "truncated.json", "huge.json", "deep.json", "surrogate.json")
    ]
    hostile_data = ['{"file": "ok.json", "valid": true, "data": 1e400}']
    instances = instances_file(tmp_path / "inst" / "S.jsonl.gz", record + hostile_data)
    result = coverage(bench, instances.parent)
    assert result.exit_code == 0, result.stderr
    subset = json.loads(result.stdout)["subsets"]["S"]
    assert subset["schemas"] == 5 and subset["compiled"] == 1
    assert subset["failed_by_code"] == {"E_LIMIT_NESTING": 1, "E_SCHEMA_JSON": 3}
    assert subset["valid_total"] == 2  # both instances of the one schema that compiled


@pytest.mark.parametrize(
    "line",
    [
        '{"file": "ok.json", "valid": true, "data": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"file": "ok.json", "valid": true}',
        "[1, 2]",
        "not json",
    ],
)
def test_hostile_instance_lines_are_an_io_error(tmp_path, line):
    path = instances_file(tmp_path / "S.jsonl.gz", [line])
    with pytest.raises(TrgcError) as info:
        read_instances(path)
    assert info.value.code == "E_IO" and info.value.exit_status == 2


def test_instances_that_inflate_past_the_cap_are_refused_while_inflating(tmp_path):
    path = tmp_path / "S.jsonl.gz"
    path.write_bytes(gzip.compress(b" " * (file_cap("benchmark") + 1)))
    with pytest.raises(TrgcError) as info:
        read_instances(path)
    assert info.value.code == "E_LIMIT_INPUT_BYTES" and info.value.exit_status == 3


@pytest.mark.parametrize("data", [b"xx", gzip.compress(b"{}\n")[:12]])
def test_instances_that_are_no_gzip_stream_are_an_io_error(tmp_path, data):
    path = tmp_path / "S.jsonl.gz"
    path.write_bytes(data)
    with pytest.raises(TrgcError) as info:
        read_instances(path)
    assert info.value.code == "E_IO"


def test_instances_of_several_gzip_members_are_all_read(tmp_path):
    first = json.dumps({"file": "a.json", "valid": True, "data": 1}) + "\n"
    second = json.dumps({"file": "a.json", "valid": False, "data": "x"}) + "\n"
    path = tmp_path / "S.jsonl.gz"
    path.write_bytes(gzip.compress(first.encode()) + gzip.compress(second.encode()))
    assert read_instances(path) == {"a.json": [(True, 1), (False, "x")]}
