"""Release engineering: man pages generated from the CLI, lock files, `trgc verify`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trgc.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()

GRAMMAR_A = '%trg 1\n%start s\ns ::= "a" [0-9]+ ;\n'
GRAMMAR_B = '%trg 1\n%start t\nt ::= "b" ;\n'


def test_committed_man_pages_match_the_cli():
    result = subprocess.run(
        [sys.executable, "scripts/gen_man.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_every_command_has_a_man_page():
    pages = {p.name for p in (ROOT / "man").glob("*.1")}
    for name in ("trgc.1", "trgc-lock.1", "trgc-verify.1"):
        assert name in pages


@pytest.mark.skipif(shutil.which("man") is None, reason="man(1) is not installed")
def test_man_renders_pages():
    for page in sorted((ROOT / "man").glob("*.1")):
        out = subprocess.run(
            ["man", "-l", str(page)],
            capture_output=True,
            text=True,
            env={"MANWIDTH": "80", "PATH": "/usr/bin:/bin"},
        )
        assert out.returncode == 0, (page, out.stderr)
        assert "NAME" in out.stdout and "EXIT STATUS" in out.stdout


def test_completion_is_installable():
    result = runner.invoke(app, ["--help"])
    assert "--install-completion" in result.output


@pytest.fixture()
def project(tmp_path):
    (tmp_path / "grammars").mkdir()
    (tmp_path / "grammars" / "a.trg").write_text(GRAMMAR_A)
    (tmp_path / "grammars" / "b.trg").write_text(GRAMMAR_B)
    return tmp_path


def _lock(project, *extra):
    sources = [str(project / "grammars" / n) for n in ("a.trg", "b.trg")]
    return runner.invoke(
        app, ["lock", *sources, "--lock", str(project / "artifacts" / "trgc.lock"), *extra]
    )


def test_lock_then_verify_is_clean(project):
    (project / "artifacts").mkdir()
    result = _lock(project, "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert set(document["entries"]) == {"a", "b"}
    lock = tomllib.loads((project / "artifacts" / "trgc.lock").read_text())
    assert lock["lock"]["format"] == "trgc-lock-1"
    assert lock["entries"]["a"]["source"] == "../grammars/a.trg"
    assert lock["entries"]["a"]["artifact"] == "a.trga"
    assert lock["entries"]["a"]["artifact_sha256"].startswith("sha256:")
    assert (project / "artifacts" / "a.trga").exists()
    verified = runner.invoke(
        app, ["verify", "--lock", str(project / "artifacts" / "trgc.lock"), "--json"]
    )
    assert verified.exit_code == 0, verified.output
    assert json.loads(verified.stdout) == {
        "lock_file": str(project / "artifacts" / "trgc.lock"),
        "ok": True,
        "checked": ["a", "b"],
        "added": [],
        "removed": [],
        "changed": {},
    }


def test_verify_reports_changed_removed_and_added(project):
    (project / "artifacts").mkdir()
    assert _lock(project).exit_code == 0
    lock_path = project / "artifacts" / "trgc.lock"
    (project / "grammars" / "a.trg").write_text(GRAMMAR_A.replace('"a"', '"A"'))
    (project / "grammars" / "b.trg").unlink()
    (project / "grammars" / "c.trg").write_text(GRAMMAR_B)
    sources = [str(project / "grammars" / "a.trg"), str(project / "grammars" / "c.trg")]
    result = runner.invoke(app, ["verify", *sources, "--lock", str(lock_path), "--json"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["added"] == ["c"]
    assert report["removed"] == ["b"]
    fields = {d["field"] for d in report["changed"]["a"]}
    assert fields == {"source_sha256", "artifact_sha256"}


def test_verify_detects_a_tampered_artifact_file(project):
    (project / "artifacts").mkdir()
    assert _lock(project).exit_code == 0
    shutil.copy(project / "artifacts" / "b.trga", project / "artifacts" / "a.trga")
    result = runner.invoke(app, ["verify", "--lock", str(project / "artifacts" / "trgc.lock")])
    assert result.exit_code == 1
    assert "artifact_file" in result.stdout


def test_lock_rejects_duplicate_stems(project):
    (project / "other").mkdir()
    (project / "other" / "a.trg").write_text(GRAMMAR_B)
    result = runner.invoke(
        app,
        [
            "lock",
            str(project / "grammars" / "a.trg"),
            str(project / "other" / "a.trg"),
            "--lock",
            str(project / "x.lock"),
        ],
    )
    assert result.exit_code == 2
    assert "E_LOCK_DUPLICATE_NAME" in result.stderr
    assert not (project / "x.lock").exists()


def test_lock_failure_writes_nothing(project):
    (project / "grammars" / "bad.trg").write_text("%trg 1\ns ::= ;\n")
    result = runner.invoke(
        app,
        [
            "lock",
            str(project / "grammars" / "a.trg"),
            str(project / "grammars" / "bad.trg"),
            "--lock",
            str(project / "y.lock"),
        ],
    )
    assert result.exit_code == 2
    assert not (project / "y.lock").exists()
    assert not (project / "a.trga").exists()


@pytest.mark.parametrize(
    "text",
    [
        "not toml [",
        '[lock]\nformat = "trgc-lock-0"\ncompiler = "x"\nlimits = {}\n',
        '[lock]\nformat = "trgc-lock-1"\n',
        "[other]\n",
    ],
)
def test_invalid_lock_files(tmp_path, text):
    path = tmp_path / "bad.lock"
    path.write_text(text)
    result = runner.invoke(app, ["verify", "--lock", str(path)])
    assert result.exit_code == 2
    assert "E_LOCK_INVALID" in result.stderr


def test_repository_lock_reproduces():
    """The committed artifacts/trgc.lock recompiles to the same hashes (reproducible builds)."""
    result = runner.invoke(
        app, ["verify", "--lock", str(ROOT / "artifacts" / "trgc.lock"), "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["ok"] is True
