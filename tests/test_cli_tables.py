"""Tables on a pipe are plain full-width columns: nothing squeezed to 80 columns or cut with
an ellipsis; on a terminal they stay boxed rich tables."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

from rich.table import Table
from typer.testing import CliRunner

from trgc.cli.app import app
from trgc.cli.common import print_table
from trgc.grammar.schema.keywords import KEYWORDS

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def test_piped_keyword_matrix_keeps_every_note_whole():
    result = runner.invoke(app, ["keywords"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "trj-1 keyword matrix"
    assert lines[1].split() == ["keyword", "status", "applies", "to", "note"]
    assert len(lines) == 2 + len(KEYWORDS)
    for keyword, line in zip(KEYWORDS, lines[2:], strict=True):
        assert line.startswith(keyword.name + " ") and line.endswith(keyword.note.rstrip())
    assert "…" not in result.stdout and all(line == line.rstrip() for line in lines)
    assert max(map(len, lines)) > 80  # the point: not squeezed to 80 columns


def test_piped_trace_stats_are_aligned_columns(tmp_path):
    trace = tmp_path / "run.jsonl"
    generated = runner.invoke(
        app,
        ["generate", str(ROOT / "artifacts" / "json.trga"), "-t", str(ROOT / "tokenizers" / "gpt2.trt"),
         "--max-tokens", "12", "--trace", str(trace)],
    )  # fmt: skip
    assert generated.exit_code in (0, 4), generated.output
    result = runner.invoke(app, ["trace", "stats", str(trace)])
    assert result.exit_code == 0, result.output
    table = result.stdout.splitlines()[-5:]
    assert table[0].split() == ["distribution", "count", "min", "p50", "p90", "p99", "max", "mean"]
    rows = {line.split()[0]: line.split()[1:] for line in table[1:]}
    assert sorted(rows) == ["allowed_set_size", "chosen_rank", "mask_us", "sample_us"]
    stats = json.loads(runner.invoke(app, ["trace", "stats", str(trace), "--json"]).stdout)
    assert rows["allowed_set_size"][0] == str(stats["allowed_set_size"]["count"])
    # numbers are right-aligned: every row ends in the same column
    assert len({len(line) for line in table}) == 1


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_tables_stay_boxed(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    table = Table("a", "b")
    table.add_row("1", "2")
    print_table(table)
    assert "┃" in terminal.getvalue() or "│" in terminal.getvalue()
