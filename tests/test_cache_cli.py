"""`trgc cache info | prune | clear` on a real cache directory: what they report, what they
remove, and their errors."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from trgc.cli.app import app
from trgc.engine.diskcache import DiskCache, EntryKey

runner = CliRunner()


def _fill(root, n: int = 3) -> DiskCache:
    cache = DiskCache(root)
    for i in range(n):
        cache.put(EntryKey("frame", 1, "sha256:t", "0.1.0", "p", str(i)), bytes([i]) * 100)
    cache.put(EntryKey("trm", 1, "sha256:t", "0.1.0", "p", "a"), b"z" * 50)
    return cache


def test_info_json_and_table(tmp_path):
    cache = _fill(tmp_path)
    result = runner.invoke(app, ["cache", "info", "--cache-dir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document == cache.info().to_dict()
    assert document["location"] == str(tmp_path) and document["entries"] == 4
    assert sorted(document["kinds"]) == ["frame", "trm"]
    assert document["kinds"]["frame"]["entries"] == 3
    text = runner.invoke(app, ["cache", "info", "--cache-dir", str(tmp_path)])
    assert text.exit_code == 0
    assert str(tmp_path) in text.stdout and "frame" in text.stdout and "trm" in text.stdout


def test_info_follows_trgc_cache_dir(tmp_path, monkeypatch):
    _fill(tmp_path / "env")
    monkeypatch.setenv("TRGC_CACHE_DIR", str(tmp_path / "env"))
    monkeypatch.setenv("TRGC_CACHE_MAX_BYTES", "999999")
    document = json.loads(runner.invoke(app, ["cache", "info", "--json"]).stdout)
    assert document["location"] == str(tmp_path / "env") and document["entries"] == 4
    assert document["limit_bytes"] == 999999


def test_prune_verify_removes_a_corrupted_entry(tmp_path):
    cache = _fill(tmp_path)
    victim = sorted(cache.layout.rglob("*.entry"))[0]
    victim.write_bytes(victim.read_bytes()[:-1] + b"\xff")
    result = runner.invoke(
        app, ["cache", "prune", "--cache-dir", str(tmp_path), "--verify", "--json"]
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["refused"] == {"E_CACHE_ENTRY_CORRUPT": 1}
    assert document["entries"] == 3 and not victim.exists()
    emptied = runner.invoke(
        app, ["cache", "prune", "--cache-dir", str(tmp_path), "--max-bytes", "0"]
    )
    assert emptied.exit_code == 0 and "evicted 3 entries" in emptied.stdout


def test_clear(tmp_path):
    _fill(tmp_path)
    result = runner.invoke(app, ["cache", "clear", "--cache-dir", str(tmp_path), "--json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["removed_entries"] == 4
    assert DiskCache(tmp_path).info().entries == 0


def test_errors_are_coded(tmp_path):
    negative = runner.invoke(
        app, ["cache", "prune", "--cache-dir", str(tmp_path), "--max-bytes", "-1", "--json"]
    )
    assert negative.exit_code == 2
    assert json.loads(negative.stderr)["error"]["code"] == "E_USAGE"
    (tmp_path / "file").write_bytes(b"x")
    blocked = runner.invoke(app, ["cache", "info", "--cache-dir", str(tmp_path / "file")])
    assert blocked.exit_code == 2 and "E_IO" in blocked.stderr and "Traceback" not in blocked.stderr
