"""Tool provenance: every registered tool's implementation_hash (what it is, that it is stable
and that it moves with the source), and the wall-clock half of timeout_ms."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trgc.cli.app import app
from trgc.tools import registry
from trgc.tools.envelope import request_template, run_request
from trgc.tools.identity import implementation_hash

TOOLS_SRC = Path(__file__).resolve().parents[1] / "src" / "trgc" / "tools"


def _expected_hash(definition: registry.ToolDefinition) -> str:
    """The documented formula, recomputed here from the files on disk."""
    sources = {
        name: hashlib.sha256((TOOLS_SRC / name).read_bytes()).hexdigest()
        for name in definition.modules
    }
    document = {"implementation": definition.implementation, "sources": sources}
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.mark.parametrize("tool", list(registry.ToolId), ids=lambda t: t.value)
def test_implementation_hash_is_the_hash_of_the_source_files(tool):
    definition = registry.REGISTRY[tool]
    assert definition.implementation_hash == _expected_hash(definition)


def _tools_imports(name: str) -> set[str]:
    """The tools-layer modules `name` imports (as file names)."""
    tree = ast.parse((TOOLS_SRC / name).read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "trgc.tools":
            found |= {f"{alias.name}.py" for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("trgc.tools."):
            found.add(node.module.split(".")[2] + ".py")
    return found


@pytest.mark.parametrize("tool", list(registry.ToolId), ids=lambda t: t.value)
def test_the_hashed_files_are_everything_the_implementation_imports(tool):
    """The module list cannot drift from the code: it is the implementation function's module
    and everything in the tools layer it imports, transitively."""
    definition = registry.REGISTRY[tool]
    start = Path(definition.run.__code__.co_filename).name
    closure, todo = set(), [start]
    while todo:
        name = todo.pop()
        if name not in closure:
            closure.add(name)
            todo += sorted(_tools_imports(name))
    assert set(definition.modules) == closure


def test_implementation_hash_moves_with_any_source_byte_and_with_the_label():
    base = implementation_hash("x-1.0.0", {"a.py": b"print(1)\n", "b.py": b""})
    assert implementation_hash("x-1.0.0", {"b.py": b"", "a.py": b"print(1)\n"}) == base
    assert implementation_hash("x-1.0.0", {"a.py": b"print(2)\n", "b.py": b""}) != base
    assert implementation_hash("x-1.0.1", {"a.py": b"print(1)\n", "b.py": b""}) != base
    assert implementation_hash("x-1.0.0", {"a.py": b"print(1)\n"}) != base


def test_calculator_and_text_tools_have_different_identities():
    hashes = {t: registry.REGISTRY[t].implementation_hash for t in registry.ToolId}
    assert hashes[registry.ToolId.TEXT_LENGTH] == hashes[registry.ToolId.TEXT_TRIM]
    assert hashes[registry.ToolId.CALCULATOR_EVALUATE] != hashes[registry.ToolId.TEXT_LENGTH]


def test_implementation_hash_is_stable_across_processes_and_hash_seeds():
    code = (
        "from trgc.tools import registry\n"
        "print(' '.join(d.implementation_hash for d in registry.REGISTRY.values()))\n"
    )
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
        )
        outputs.add(result.stdout)
    assert len(outputs) == 1
    assert outputs.pop().split() == [d.implementation_hash for d in registry.REGISTRY.values()]


def test_every_result_carries_the_implementation_hash():
    for tool in registry.ToolId:
        request = request_template(tool.value)
        provenance = run_request(request).result["provenance"]
        assert provenance["implementation_hash"] == registry.REGISTRY[tool].implementation_hash
        assert provenance["deterministic"] is True


def test_tool_list_shows_the_implementation_hash():
    result = CliRunner().invoke(app, ["tool", "list", "--json"])
    assert result.exit_code == 0, result.output
    listed = {t["tool"]: t["implementation_hash"] for t in json.loads(result.stdout)["tools"]}
    assert listed == {t.value: d.implementation_hash for t, d in registry.REGISTRY.items()}


class SteppingClock:
    """A monotonic clock that advances `step_ns` every time it is read."""

    def __init__(self, step_ns: int) -> None:
        self.now = 0
        self.step_ns = step_ns
        self.reads = 0

    def __call__(self) -> int:
        self.reads += 1
        value = self.now
        self.now += self.step_ns
        return value


def _calc(expression: str, timeout_ms: int) -> dict:
    request = request_template("calculator.evaluate@1.0.0")
    request["input"]["expression"] = expression
    request["limits"]["timeout_ms"] = timeout_ms
    return request


def test_a_slow_host_is_stopped_by_the_wall_clock_during_the_run():
    """Every clock read takes 1 ms: a 5 ms limit stops a 190-operation expression long before
    its end, although its operation budget (500) would let it finish."""
    clock = SteppingClock(1_000_000)
    run = run_request(_calc("1^64 * 1^64 / 1^60", 5), clock=clock)
    assert run.result["status"] == run.reinsertion["status"] == "error"
    assert run.result["content"]["error"]["code"] == "E_TOOL_TIMEOUT"
    assert "timeout_ms = 5" in run.result["content"]["error"]["message"]
    provenance = run.result["provenance"]
    assert provenance["stop_reason"] == "wall_clock_timeout"
    assert provenance["deterministic"] is False
    assert provenance["operation_budget"] == 500
    assert clock.reads < 10  # stopped at the first checkpoint past the limit


def test_a_result_finished_after_the_limit_is_not_delivered():
    """The text tools cannot be interrupted; a result that arrives late is discarded."""
    clock = SteppingClock(3_000_000)  # start 0, checkpoint at 3 ms, final check at 6 ms
    request = request_template("text.trim@1.0.0")
    request["input"]["text"] = "  secret  "
    request["limits"]["timeout_ms"] = 5
    run = run_request(request, clock=clock)
    assert run.result["provenance"]["stop_reason"] == "wall_clock_timeout"
    assert "secret" not in json.dumps(run.result["content"])
    assert "secret" not in run.reinsertion_text


def test_a_run_within_the_wall_clock_limit_is_unchanged():
    clock = SteppingClock(1_000)  # 1 µs per read
    run = run_request(_calc("1 / 3", 100), clock=clock)
    assert run.result["status"] == "ok"
    assert run.result["provenance"]["stop_reason"] == "completed"
    assert run.result["provenance"]["deterministic"] is True
    # the real clock: the report's example request runs well inside 100 ms
    assert run_request(_calc("1 / 3", 100)).result["provenance"]["stop_reason"] == "completed"
