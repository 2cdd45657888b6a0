"""Every shipped grammar compiles to byte-identical artifacts under different PYTHONHASHSEEDs.

Each run happens in a fresh interpreter (the hash seed is fixed at start-up), compiles every
`grammars/*.trg`, and reports the identity and a hash of the exact file bytes it would write.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRAMMARS = sorted((ROOT / "grammars").glob("*.trg"))

SCRIPT = """
import hashlib, json, sys
from pathlib import Path
from trgc.compiler.build import compile_grammar
from trgc.artifact.codec import to_file_bytes
out = {}
for path in sys.argv[1:]:
    artifact = compile_grammar(Path(path).read_bytes(), source=Path(path).name)
    out[Path(path).name] = {
        "sha256": artifact.sha256,
        "canonical": hashlib.sha256(artifact.to_bytes()).hexdigest(),
        "file": hashlib.sha256(to_file_bytes(artifact)).hexdigest(),
    }
print(json.dumps(out, sort_keys=True))
"""


def _compile_all(seed: str) -> dict:
    env = dict(os.environ, PYTHONHASHSEED=seed)
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, *map(str, GRAMMARS)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_grammars_are_shipped():
    names = {path.name for path in GRAMMARS}
    assert "json.trg" in names and len(names) >= 5


def test_compilation_is_independent_of_hash_seed():
    first = _compile_all("0")
    second = _compile_all("4242")
    assert set(first) == {path.name for path in GRAMMARS}
    assert first == second
    for entry in first.values():
        assert entry["sha256"] == "sha256:" + entry["canonical"]


def test_in_process_compilation_matches_subprocess():
    from trgc.compiler.build import compile_grammar

    expected = _compile_all("1")
    for path in GRAMMARS:
        assert (
            compile_grammar(path.read_bytes(), source=path.name).sha256
            == expected[path.name]["sha256"]
        )
