"""Defaults that must work outside the repository: the shipped probe corpus, a missing
conformance baseline said out loud, and the lock file found where the README keeps it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from trgc.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
SYNTH = ROOT / "tokenizers" / "synthetic" / "json-bytelevel"
runner = CliRunner()


def _json(result) -> dict:
    return json.loads(result.stdout)


def test_tokenizer_verify_uses_the_shipped_probe_corpus_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["tokenizer", "verify", str(SYNTH), "--json"])
    assert result.exit_code == 0, result.output
    doc = _json(result)
    shipped = ROOT / "src" / "trgc" / "tokenizer" / "probe.txt"
    assert Path(doc["probe"]).resolve() == shipped.resolve()
    lines = [x for x in shipped.read_text(encoding="utf-8").split("\n") if x.strip(" \t\r")]
    assert doc["documents"] == len(lines) + 1  # every non-empty line, then the whole corpus


def _tiny_suite(root: Path) -> Path:
    cases = root / "suite" / "tests" / "draft2020-12"
    cases.mkdir(parents=True)
    case = {
        "description": "integers",
        "schema": {"type": "integer"},
        "tests": [
            {"description": "an integer", "data": 1, "valid": True},
            {"description": "a string", "data": "x", "valid": False},
        ],
    }
    (cases / "type.json").write_text(json.dumps([case]), encoding="utf-8")
    return root / "suite"


def test_conformance_refuses_a_missing_baseline_and_creates_it_only_on_update(tmp_path):
    suite = _tiny_suite(tmp_path)
    baseline = tmp_path / "baseline.json"
    args = ["conformance", "jsts", str(suite), "--baseline", str(baseline), "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert (error["code"], error["source"]) == ("E_IO", str(baseline))
    assert "does not exist" in error["message"] and "--update" in error["hint"]
    assert not baseline.exists()
    created = runner.invoke(app, [*args, "--update"])
    assert created.exit_code == 0, created.output
    assert _json(created)["updated"] is True and baseline.is_file()
    again = runner.invoke(app, args)
    assert again.exit_code == 0 and _json(again)["missing"] == []


def test_verify_finds_artifacts_trgc_lock_from_a_subdirectory(tmp_path, monkeypatch):
    project = tmp_path / "project"
    (project / "artifacts").mkdir(parents=True)
    shutil.copy(ROOT / "grammars" / "arith.trg", project / "arith.trg")
    lock = project / "artifacts" / "trgc.lock"
    written = runner.invoke(app, ["lock", str(project / "arith.trg"), "--lock", str(lock)])
    assert written.exit_code == 0, written.output
    (project / "deep" / "er").mkdir(parents=True)
    monkeypatch.chdir(project / "deep" / "er")
    result = runner.invoke(app, ["verify", "--json"])
    assert result.exit_code == 0, result.output
    assert _json(result)["lock_file"] == str(lock.resolve()) and _json(result)["ok"] is True
    human = runner.invoke(app, ["verify"])
    assert f"reproduce {lock.resolve()}" in human.stdout
    # a trgc.lock nearer to the working directory wins
    shutil.copy(lock, project / "deep" / "trgc.lock")
    near = runner.invoke(app, ["verify", "--json"])
    assert _json(near)["lock_file"] == str((project / "deep" / "trgc.lock").resolve())


def test_verify_without_any_lock_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["verify", "--json"])
    assert result.exit_code == 2
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "E_IO"
    assert "trgc.lock nor artifacts/trgc.lock" in error["message"]
    assert str(tmp_path.resolve()) in error["message"] and "--lock" in error["hint"]
