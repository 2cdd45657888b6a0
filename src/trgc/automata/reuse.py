"""Machines with the same body are built once per compilation, at the cost of building each.

A JSON Schema with ten `maxLength` strings has ten counted-repetition machines whose bodies
are the same subtree (the string's character class); each would give the same NFA, DFA and
minimal table. `StructureKeys` gives every AST node a number that two nodes share exactly
when their subtrees build the same automaton: same kind and payload, same children, and for a
repetition the same machine plan (the machine it is counted as, or that it is copied). A rule
reference is keyed by the rule's name: within one compilation attempt a name always expands
(or calls) the same way. Source positions are left out; they only appear in errors that the
first build would have raised already.

Nested repetitions complicate this: two string bodies each holding a `\\u` escape `hex{4}`
have different repetition nodes, one machine name each, but both are copied (they are small),
so the names never matter. The memo therefore looks a machine up by its *loose* key (whether a
repetition may be counted, not as which machine) when the first build counted none of its
inner repetitions, and by its *named* key otherwise.

`MachineMemo` keeps, per key, the built table and what building it cost: operations charged
and states and transitions counted toward the running limits. A later machine with the same
key is charged exactly that, so `E_LIMIT_OPERATIONS`, `E_LIMIT_STATES` and the stats are what
building it again would give. When charging it could reach a limit, the memo steps aside and
the machine is built again for real, so that the limit is raised at the very same point with
the same message. The memo lives for one compilation attempt only.

`Carried` keeps the machines of one attempt for the next: a retry after a predictive conflict
inlines some shared rules and copies some counted repetitions, and a machine whose NFA met
none of those (`nfa.Depends`) is the same automaton again. Only its call atoms move (the
retry's alphabet drops the inlined rules' call symbols, keeping the others in order), so its
table is the old one with those segments renumbered, and it is charged what it cost, as above.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from trgc.automata.alphabet import Alphabet
from trgc.automata.dfa import Counter, Table
from trgc.automata.nfa import Depends, Product
from trgc.grammar.ast import K_REPEAT, Grammar, offsets_within
from trgc.limits import Budget, Limits

_PENDING = -1  # the number of a node met but not numbered yet (`_number` replaces it)


class StructureKeys:
    """Structural numbers of AST nodes, computed on demand and shared across lookups.

    `named(root)` keys a repetition that may be counted by its machine's name (the call it
    becomes); `loose(root)` keys it only by whether it may be counted, which identifies the
    automaton only when no repetition inside is counted after all (`MachineMemo` checks
    that, and asks for the named key only then). References are not followed.

    Copies of one stamped template (`Grammar.stamped`) are equal node for node, so they are
    keyed alike wherever the plan treats them alike: the same repetitions inside may be
    counted and are expanded (loose), and none may be counted (named: each has its own
    machine name). The first copy numbered gives the others their number without a walk."""

    def __init__(self, grammar: Grammar, repeats: dict[int, str], expand: frozenset[int]):
        self.nodes = grammar.nodes
        self.repeats = repeats
        self.expand = expand
        self.stamped = grammar.stamped
        self.counted_at = sorted(repeats)  # the nodes keyed by their machine plan, in order
        self.expanded_at = sorted(expand)
        # per numbering (loose, named): node -> number, key -> number, template plan -> number
        self.numbers: tuple[dict[int, int], dict[int, int]] = ({}, {})
        self.interned: tuple[dict[tuple, int], dict[tuple, int]] = ({}, {})
        self.templates: tuple[dict[tuple, int], dict[tuple, int]] = ({}, {})

    def loose(self, root: int) -> int:
        return self._number(root, False)

    def named(self, root: int) -> int:
        return self._number(root, True)

    def _plan(self, template: tuple[object, int, int], named: bool) -> tuple | None:
        """What keys a stamped copy besides its template: the positions (from its first node)
        of the repetitions inside that may be counted and that are expanded; None when a
        named key names machines (it is not shared with other copies)."""
        key, first, size = template
        counted = offsets_within(self.counted_at, first, size)
        if named and counted:
            return None
        return key, counted, offsets_within(self.expanded_at, first, size)

    def _number(self, root: int, named: bool) -> int:
        number = self.numbers[named]
        found = number.get(root)
        if found is not None:
            return found
        nodes, repeats, expand = self.nodes, self.repeats, self.expand
        interned, templates, stamped = self.interned[named], self.templates[named], self.stamped
        if root in stamped:
            known = templates.get(self._plan(stamped[root], named))
            if known is not None:
                number[root] = known
                return known
        # the subtree's nodes not numbered yet, each once: a node is marked when first met
        # (a node under two parents is met twice), and numbered below
        pending = [root]
        number[root] = _PENDING
        for node_id in pending:
            for child in nodes[node_id].children:
                if child not in number:
                    if child in stamped:
                        known = templates.get(self._plan(stamped[child], named))
                        if known is not None:
                            number[child] = known
                            continue
                    number[child] = _PENDING
                    pending.append(child)
        pending.sort()  # children before parents: a node names only nodes made before it
        for node_id in pending:
            kind, _, _, children, payload = nodes[node_id]
            if not children:
                key = (kind, payload, ())
            elif kind == K_REPEAT:
                machine = repeats.get(node_id)
                plan = machine if named else machine is not None
                key = (kind, payload, (number[children[0]],), plan, node_id in expand)
            else:
                key = (kind, payload, tuple([number[c] for c in children]))
            number[node_id] = interned.setdefault(key, len(interned))
            if node_id in stamped:
                plan = self._plan(stamped[node_id], named)
                if plan is not None:
                    templates.setdefault(plan, number[node_id])
        return number[root]


@dataclass(frozen=True)
class Built:
    """One machine's minimal table and what building it did besides."""

    table: Table
    specials: frozenset[str]
    calls: frozenset[str]
    operations: int
    states: int  # counted toward limits.states
    transitions: int  # counted toward limits.transitions
    nfa_states: int
    dfa_states: int
    depends: Depends


class MachineMemo:
    """Built machines by structural key, for one compilation attempt."""

    def __init__(
        self,
        limits: Limits,
        budget: Budget,
        counter: Counter,
        repeat_names: frozenset[str],
        structure: StructureKeys,
    ) -> None:
        self.structure = structure
        self.limits = limits
        self.budget = budget
        self.counter = counter
        self.repeat_names = repeat_names  # the machines a repetition may be counted as
        self.loose: dict[int, Built] = {}
        self.named: dict[int, Built] = {}

    def reuse(self, root: int) -> Built | None:
        """The machine built before from a body keyed like `root`'s, its costs charged, or
        None (build it: there is none, or charging its costs could reach a limit)."""
        found = self.loose.get(self.structure.loose(root))
        if found is None and self.named:
            found = self.named.get(self.structure.named(root))
        if found is None or not self.charge(found):
            return None
        return found

    def charge(self, found: Built) -> bool:
        """Charge what building `found` cost, unless that could reach a limit (False)."""
        budget, counter, limits = self.budget, self.counter, self.limits
        if (
            budget.used + found.operations > budget.limit
            or counter.states + found.states > limits.states
            or counter.transitions + found.transitions > limits.transitions
        ):
            return False
        budget.used += found.operations
        counter.states += found.states
        counter.transitions += found.transitions
        return True

    def start(self) -> tuple[int, int, int]:
        """The running totals before a build (for `keep`)."""
        return self.budget.used, self.counter.states, self.counter.transitions

    def keep(
        self,
        root: int | None,
        before: tuple[int, int, int],
        table: Table,
        specials: frozenset[str],
        calls: frozenset[str],
        nfa_states: int,
        dfa_states: int,
        depends: Depends,
    ) -> Built:
        used, states, transitions = before
        built = Built(
            table,
            specials,
            calls,
            self.budget.used - used,
            self.counter.states - states,
            self.counter.transitions - transitions,
            nfa_states,
            dfa_states,
            depends,
        )
        if root is not None:
            if calls & self.repeat_names:
                self.named.setdefault(self.structure.named(root), built)
            else:
                self.loose.setdefault(self.structure.loose(root), built)
        return built


class ProductMemo:
    """Automata products of AND nodes by structural key, for one compilation attempt.

    A product is a function of its AND subtree alone (its operands inline every rule and copy
    every repetition, whatever the machine plan) and of the attempt's alphabet, and it counts
    toward no running limit: its operand and product states are checked on their own. So an
    equal subtree met again, in the same machine or another, is the same product. Large
    schemas repeat them: every object with `patternProperties` or `additionalProperties`
    beside declared members builds "a member name other than these", and a 65 KB Rancher
    schema built the same two-operand product 68 times (1.3 of its 2.1 s of compile; 34
    times since the lowering's joins, `nfa.py`).
    A reuse is charged the operations the first build charged; when that could exhaust the
    budget the memo steps aside, so `E_LIMIT_OPERATIONS` comes where and as it would.

    A retry (`Carried`) starts from the call-free products of the attempt before, by AND node:
    over the same input atoms such a product reads no call symbol, so the retry's alphabet,
    which only drops the call symbols of the rules it inlines, leaves it as it was."""

    def __init__(
        self,
        structure: StructureKeys,
        budget: Budget,
        earlier: dict[int, tuple[Product, int]] | None = None,
    ) -> None:
        self.structure = structure
        self.budget = budget
        self.built: dict[int, tuple[Product, int]] = {}
        self.by_node: dict[int, tuple[Product, int]] = dict(earlier or {})  # call-free ones

    def reuse(self, node_id: int) -> Product | None:
        """The product of an AND subtree equal to `node_id`'s, its cost charged, or None."""
        found = self.by_node.get(node_id) or self.built.get(self.structure.loose(node_id))
        if found is None:
            return None
        product, operations = found
        if self.budget.used + operations > self.budget.limit:
            return None
        self.budget.used += operations
        return product

    def keep(self, node_id: int, product: Product, operations: int) -> None:
        """Remember the product of `node_id`'s subtree and the operations it was charged."""
        self.built.setdefault(self.structure.loose(node_id), (product, operations))
        if not product.calls:
            self.by_node.setdefault(node_id, (product, operations))


class Carried:
    """The machines one compilation attempt built, by name, for the next attempt."""

    def __init__(self) -> None:
        self.alphabet: Alphabet | None = None
        self.machines: dict[str, tuple[int, int, Built]] = {}  # name -> (root, kind, built)
        self.inlined: frozenset[str] = frozenset()
        self.expanded: frozenset[int] = frozenset()
        self.products: dict[int, tuple[Product, int]] = {}

    def keep(
        self,
        alphabet: Alphabet,
        machines: dict[str, tuple[int, int, Built]],
        products: dict[int, tuple[Product, int]],
    ) -> None:
        """Remember an attempt's machines and call-free products. The driver then sets
        `inlined` and `expanded`: what the next attempt inlines and copies that this one
        did not."""
        self.alphabet, self.machines, self.products = alphabet, machines, products

    def products_over(self, alphabet: Alphabet) -> dict[int, tuple[Product, int]]:
        """The previous attempt's call-free products, if `alphabet` has its input atoms."""
        old = self.alphabet
        if old is None or alphabet.n_input != old.n_input or alphabet.atom_lo != old.atom_lo:
            return {}
        return self.products

    def take(self, name: str, root: int, kind: int, alphabet: Alphabet) -> Built | None:
        """Machine `name` of the previous attempt, over `alphabet`'s atoms, if the retry
        leaves it unchanged (not charged: `MachineMemo.charge` does that)."""
        found = self.machines.get(name)
        if found is None or found[:2] != (root, kind) or self.alphabet is None:
            return None
        built = found[2]
        if not built.depends.unchanged_by(self.inlined, self.expanded):
            return None
        old, table = self.alphabet, built.table
        n_input = old.n_input
        if alphabet.n_input != n_input or alphabet.atom_lo != old.atom_lo:
            return None
        lo = table.seg_lo.tolist()
        if all(a < n_input for a in lo) and old.calls == alphabet.calls:
            return built
        moved = [a if a < n_input else alphabet.call_atom(old.calls[a - n_input]) for a in lo]
        atoms = np.array(moved, dtype=np.int64)
        calls = table.seg_lo >= n_input  # one atom each
        seg_hi = np.where(calls, atoms, table.seg_hi)
        # the inlined rules' call symbols are gone and the others keep their order, so the
        # segments stay ascending and the table (and its numbering) stays as it is
        return replace(built, table=Table(table.next, table.accepting, atoms, seg_hi))
