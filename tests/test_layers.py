"""Imports point down the layer stack only (DESIGN.md "Layers"); `import trgc` stays light."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "trgc"

# layer -> the trgc layers it may import (besides itself); errors, limits, atomic and jsonread
# are the base
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "limits": {"errors", "atomic"},
    "atomic": {"errors"},
    "jsonread": {"errors", "limits"},
    "grammar": {"errors", "limits", "atomic", "jsonread"},
    "automata": {"errors", "limits", "atomic", "jsonread", "grammar"},
    "artifact": {"errors", "limits", "atomic", "jsonread"},
    "compiler": {"errors", "limits", "atomic", "jsonread", "grammar", "automata", "artifact"},
    "tokenizer": {"errors", "limits", "atomic", "jsonread"},
    "engine": {
        "errors",
        "limits",
        "atomic",
        "jsonread",
        "grammar",
        "automata",
        "artifact",
        "tokenizer",
    },
    # decode records the tool registry's implementation hashes in every trace header
    "decode": {
        "errors",
        "limits",
        "atomic",
        "jsonread",
        "grammar",
        "automata",
        "artifact",
        "tokenizer",
        "engine",
        "tools",
    },
    "tools": {"errors", "limits", "atomic", "jsonread"},
    "torch": {"errors", "limits", "engine"},
    "release": {"errors", "limits", "atomic", "jsonread", "artifact", "compiler"},
    "evaluation": {
        "errors",
        "limits",
        "atomic",
        "jsonread",
        "grammar",
        "automata",
        "artifact",
        "compiler",
        "tokenizer",
        "engine",
        "decode",
        "tools",
        "integrations",
    },
}


def _layer_of(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0].removesuffix(".py")


def _trgc_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "trgc" and len(parts) > 1:
                found.add(parts[1])
    return found


def test_imports_point_down_only():
    violations = []
    for path in sorted(SRC.rglob("*.py")):
        layer = _layer_of(path)
        if layer not in ALLOWED:
            continue  # the package root, cli and integrations sit on top
        for imported in _trgc_imports(path) - {layer}:
            if imported not in ALLOWED[layer]:
                violations.append(f"{path.relative_to(SRC)} imports trgc.{imported}")
    assert violations == []


PERSON = Path(__file__).resolve().parents[1] / "schemas" / "person.json"


def _printed(code: str) -> str:
    """What `code` prints, run in a fresh interpreter (so that `sys.modules` is its own)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_import_trgc_loads_no_heavy_modules():
    code = (
        "import sys, trgc\n"
        "heavy = [m for m in ('typer', 'rich', 'numba', 'torch', 'transformers') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    assert _printed(code) == ""


def test_a_compile_loads_no_numpy_ma():
    """A bare `np.unique` imports numpy.ma (~17 ms of a `trgc compile` process); the compile
    path does without it, a product with a tiled length operand (`automata/chains.py`)
    included."""
    code = (
        "import sys, trgc\n"
        "trgc.compile_schema({'type': 'string', 'pattern': '^a.*b$', 'maxLength': 100})\n"
        f"trgc.compile_schema(open({str(PERSON)!r}).read())\n"
        "print('numpy.ma' in sys.modules)\n"
    )
    assert _printed(code) == "False"


def test_cli_help_does_not_load_numba():
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from trgc.cli.app import app\n"
        "result = CliRunner().invoke(app, ['--help'])\n"
        "assert result.exit_code == 0, result.output\n"
        "print('numba' in sys.modules)\n"
    )
    assert _printed(code) == "False"
