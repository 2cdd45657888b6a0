"""The engine's global-state tables (`trgc.engine.config.flatten`) against the artifact model.

The kernel, the reference masker and every cache read the flattened tables, so a mistake in
them would be shared by the fast path and its oracle. These tests read the model instead: the
renumbering of every action, call edge and counter, and, on seeded walks over every shipped
artifact and a schema with nested counters and recursion, `step` over the tables against
`trgc.artifact.stepper`, which executes the model directly.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

import trgc
from trgc.artifact import stepper
from trgc.artifact.codec import decode, encode
from trgc.artifact.model import entry_counters
from trgc.engine.config import NEVER, START, flatten, frames, is_accepting, step

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted((ROOT / "artifacts").glob("*.trga"))

# counted repetitions called from the start rule and one from another, and the start rule
# calling itself (`$ref: "#"`): counters pushed by calls, nested, beside recursion
COUNTED = {
    "type": "object",
    "properties": {
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}, "minItems": 2,
                 "maxItems": 4},
        "child": {"$ref": "#"},
        "code": {"type": "string", "pattern": "^[a-z]{2,3}$"},
    },
    "required": ["tags"],
}  # fmt: skip


def _artifacts() -> list[tuple[str, trgc.Artifact]]:
    found = [(path.stem, trgc.load_artifact(path)) for path in SHIPPED]
    found.append(("counted", trgc.compile_schema(COUNTED, separators="compact")))
    return found


ARTIFACTS = _artifacts()


@pytest.mark.parametrize("name,art", ARTIFACTS, ids=[n for n, _ in ARTIFACTS])
def test_flatten_renumbers_every_machine(name, art):
    """Shifts move by the machine's first state, call edges name the callee's start and the
    caller's return state globally with the counters `entry_counters` gives; a table decoded
    from the canonical bytes flattens to the same arrays."""
    t = flatten(art)
    offsets = np.cumsum([0] + [m.n_states for m in art.machines])
    first_call = np.cumsum([0] + [m.calls.shape[0] for m in art.machines])
    assert t.state_offset.tolist() == offsets.tolist()
    for m, machine in enumerate(art.machines):
        lo = int(offsets[m])
        local = np.asarray(machine.next).reshape(machine.n_states, art.n_symbols)
        rows = t.next[lo : lo + machine.n_states]
        shifts = local >= 0
        assert (rows[shifts] == local[shifts] + lo).all()
        assert (rows[local == -1] == -1).all()
        calls = local <= -2
        assert (rows[calls] == local[calls] - first_call[m]).all()
        for k, (callee, ret) in enumerate(machine.calls.tolist()):
            g = int(first_call[m]) + k
            assert t.calls[g].tolist() == [int(offsets[callee]), lo + ret]
            assert tuple(t.call_entry[g].tolist()) == entry_counters(*machine.call_bounds[k])
        assert (t.machine_of[lo : lo + machine.n_states] == m).all()
        assert (t.accepting[lo : lo + machine.n_states] == machine.accepting.astype(bool)).all()
        assert (t.rep_start[lo : lo + machine.n_states] == lo).all()
    assert t.next.dtype == np.int32 and t.calls.dtype == np.int32
    twin = flatten(decode(encode(art)))
    for field in ("next", "calls", "call_entry", "accepting", "need", "need_more", "has_caller"):
        assert np.array_equal(getattr(twin, field), getattr(t, field)), field


@pytest.mark.parametrize("name,art", ARTIFACTS, ids=[n for n, _ in ARTIFACTS])
def test_engine_step_follows_the_artifact_stepper(name, art):
    """Seeded walks over the symbols the model allows (a viable step: the engine's `step`
    refuses a configuration that cannot complete within `max_depth`), with one refused symbol
    tried at each step: the engine's configuration, acceptance and completion need agree with
    the stepper's at every step."""
    t = flatten(art)
    need = stepper.completion_depths(art)

    def model_step(model, sym):
        after = stepper.step(art, model, sym)
        return after if after is not None and stepper.is_viable(art, after) else None

    rng = random.Random(name)
    steps = 0
    for _ in range(20):
        config, model = START, stepper.initial(art)
        for _ in range(60):
            assert frames(t, config) == list(model)
            assert is_accepting(t, config) == stepper.is_accepting(art, model)
            machine, state = model[-1][:2]
            expected = need[machine][state]
            assert t.need[config[-1] & ((1 << 32) - 1)] == (
                NEVER if expected == float("inf") else expected
            )
            outcomes = {sym: model_step(model, sym) for sym in range(art.n_symbols)}
            refused = [sym for sym, after in outcomes.items() if after is None]
            if refused:
                assert step(t, config, rng.choice(refused)) is None
            allowed = [sym for sym, after in outcomes.items() if after is not None]
            if not allowed:
                break
            sym = rng.choice(allowed)
            config, model = step(t, config, sym), outcomes[sym]
            steps += 1
    assert steps >= 20
