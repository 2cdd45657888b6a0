"""Man pages after `pip install` (installed under share/man/man1, `trgc man` as a fallback),
rendered without literal markdown backticks."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from typer.testing import CliRunner

from trgc.cli.app import app
from trgc.cli.man_cmds import roff_to_text

ROOT = Path(__file__).resolve().parents[1]
MAN = ROOT / "man"
runner = CliRunner()


def test_pages_hold_no_markdown_code_spans():
    for page in sorted(MAN.glob("*.1")):
        text = page.read_text(encoding="utf-8")
        assert re.search(r"(?<!`)`[^`\n]+`(?!`)", text) is None, page.name
    assert r"\fBcompact\fR" in (MAN / "trgc-compile.1").read_text(encoding="utf-8")


def test_trgc_man_prints_a_page_as_plain_text_when_piped():
    result = runner.invoke(app, ["man", "tokenizer", "verify"])
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert text.startswith("NAME\n       trgc-tokenizer-verify - ")
    assert "\n       -p, --probe FILE\n              Probe corpus" in text
    assert "\\f" not in text and "\\-" not in text and ".TP" not in text
    assert "EXIT STATUS" in text


def test_trgc_man_path_json_and_unknown_pages():
    path = runner.invoke(app, ["man", "--path"])
    assert path.exit_code == 0 and Path(path.stdout.strip()).name == "trgc.1"
    assert Path(path.stdout.strip()).read_bytes() == (MAN / "trgc.1").read_bytes()
    doc = json.loads(runner.invoke(app, ["man", "compile", "--json"]).stdout)
    assert doc["page"] == "trgc-compile" and doc["text"] == roff_to_text(
        (MAN / "trgc-compile.1").read_text(encoding="utf-8")
    )
    missing = runner.invoke(app, ["man", "nope", "--json"])
    assert missing.exit_code == 2
    error = json.loads(missing.stderr)["error"]
    assert error["code"] == "E_USAGE" and "trgc-compile" in error["hint"]


def test_the_wheel_installs_the_pages_and_the_probe_corpus(tmp_path):
    """What `pip install` gets: every page under share/man/man1 (found by man(1) for a prefix
    on PATH) and the probe corpus inside the package."""
    source = tmp_path / "src-tree"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(MAN, source / "man")
    shutil.copytree(
        ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         str(source), "-w", str(tmp_path / "dist")],
        check=True, capture_output=True,
    )  # fmt: skip
    (wheel,) = (tmp_path / "dist").glob("trgc-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    pages = {n.rsplit("/", 1)[-1] for n in names if "/share/man/man1/" in n}
    assert pages == {p.name for p in MAN.glob("*.1")}
    assert "trgc/tokenizer/probe.txt" in names
