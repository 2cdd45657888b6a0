"""A readable listing of compiled tables, for debugging, docs and `inspect`-style output.

Each state lists its actions grouped by target, with the bytes of every class written as
ranges: `s1*: [0-9] -> 2 | ["] -> call string (return 3)`. `*` marks accepting states.
"""

from __future__ import annotations

from trgc.automata.machines import Tables


def _byte(b: int) -> str:
    if 0x21 <= b < 0x7F and chr(b) not in "[]-\\":
        return chr(b)
    return f"\\x{b:02x}"


def _ranges(byte_values: list[int]) -> str:
    parts: list[str] = []
    start = prev = byte_values[0]
    for b in byte_values[1:] + [-2]:
        if b == prev + 1:
            prev = b
            continue
        parts.append(_byte(start) if start == prev else f"{_byte(start)}-{_byte(prev)}")
        start = prev = b
    return "[" + "".join(parts) + "]"


def format_tables(tables: Tables) -> str:
    """Every machine, state and action of `tables` as text (deterministic)."""
    bytes_of_class: list[list[int]] = [[] for _ in range(tables.n_classes)]
    for b, c in enumerate(tables.byte_class.tolist()):
        bytes_of_class[c].append(b)
    names = [_ranges(bs) for bs in bytes_of_class] + [f'special("{s}")' for s in tables.specials]
    lines = [
        f"classes: {tables.n_classes}  specials: {len(tables.specials)}  machines: {len(tables.machines)}"
    ]
    for k, machine in enumerate(tables.machines):
        lines.append(f"machine {k}: {machine.name} ({machine.n_states} states)")
        for s in range(machine.n_states):
            groups: dict[int, list[str]] = {}
            for sym, action in enumerate(machine.next[s].tolist()):
                if action != -1:
                    groups.setdefault(action, []).append(names[sym])
            parts = []
            for action, syms in groups.items():
                if action >= 0:
                    what = str(action)
                else:
                    callee, ret = machine.calls[-2 - action].tolist()
                    what = f"call {tables.machine_rules[callee]} (return {ret})"
                parts.append(f"{' '.join(syms)} -> {what}")
            mark = "*" if machine.accepting[s] else " "
            lines.append(f"  s{s}{mark}: " + (" | ".join(parts) if parts else "(no action)"))
    return "\n".join(lines) + "\n"
