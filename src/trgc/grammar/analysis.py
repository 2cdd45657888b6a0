"""Static analysis of a grammar AST: names, nullability, the reference graph and its cycles.

`analyze` resolves rule names, computes which rules can match the empty string (a worklist
fixed point charged to the operation budget), builds the rule reference graph and its
strongly connected components (iterative Tarjan), and rejects what the byte automata cannot
run deterministically: unbounded repetition of a nullable item, nullable cycles and left
recursion (direct or indirect, reported with the cycle's path). Byte-level FIRST/FOLLOW and
predictive conflicts are the automata layer's job.

Problems are collected in two phases (names first, then structure) and the first one is
raised with all of them in `details["errors"]`. Every traversal uses an explicit stack and
every collection that reaches an output is sorted, so results never depend on hash order.
"""

from __future__ import annotations

import difflib
from collections import deque
from dataclasses import dataclass

from trgc.errors import Span, TrgcError
from trgc.grammar.ast import (
    K_ALT,
    K_AND,
    K_CLASS,
    K_EMPTY,
    K_LITERAL,
    K_NOT,
    K_REF,
    K_REPEAT,
    K_SEQ,
    K_SPECIAL,
    Grammar,
    Node,
    Rule,
)
from trgc.grammar.parser import MAX_ERRORS, RESERVED_NAMES
from trgc.limits import Budget


@dataclass(frozen=True)
class Analysis:
    """What later stages need to know about a valid grammar. Lists are indexed by rule."""

    rule_index: dict[str, int]  # name -> index in grammar.rules
    start: int  # index of the start rule
    nullable: list[bool]  # the rule can match the empty string
    refs: list[tuple[int, ...]]  # sorted indices of the rules a rule references
    recursive: list[bool]  # the rule lies on a cycle of the reference graph
    reachable: list[bool]  # reachable from the start rule
    sccs: list[tuple[int, ...]]  # components of the reference graph, callees first; members sorted
    scc_of: list[int]  # rule -> index into sccs
    node_nullable: list[bool]  # per AST node (False for nodes no rule uses)


def analyze(grammar: Grammar, *, strict: bool = False, budget: Budget) -> Analysis:
    """Check a parsed grammar and compute its `Analysis`; raise `TrgcError` on any problem.

    With `strict`, rules that the start rule cannot reach are errors (E_UNREACHABLE_RULE).
    """
    ctx = _Context(grammar, budget)
    rule_index, refs, start = ctx.resolve()
    nullable, node_nullable = ctx.nullability(refs)
    sccs = strongly_connected(refs, budget)
    scc_of = [0] * len(grammar.rules)
    for i, comp in enumerate(sccs):
        for r in comp:
            scc_of[r] = i
    recursive = [len(sccs[scc_of[r]]) > 1 or r in refs[r] for r in range(len(grammar.rules))]
    reachable = _reachable(start, refs, budget)
    ctx.structure(node_nullable, reachable, strict, any(recursive))
    return Analysis(
        rule_index=rule_index,
        start=start,
        nullable=nullable,
        refs=refs,
        recursive=recursive,
        reachable=reachable,
        sccs=sccs,
        scc_of=scc_of,
        node_nullable=node_nullable,
    )


def strongly_connected(succ: list[tuple[int, ...]], budget: Budget) -> list[tuple[int, ...]]:
    """Tarjan's SCC algorithm without recursion (Tarjan 1972, with an explicit call stack).

    Roots are tried in index order and successors in the order given, so the output is
    deterministic: components in the order Tarjan completes them (every component after
    all components it can reach), each as a sorted tuple.
    """
    n = len(succ)
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    stack: list[int] = []
    out: list[tuple[int, ...]] = []
    counter = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        work: list[tuple[int, int]] = [(root, 0)]  # (vertex, next successor position)
        while work:
            v, pos = work[-1]
            budget.charge(1, "grammar analysis")
            if pos == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack[v] = True
            if pos < len(succ[v]):
                work[-1] = (v, pos + 1)
                w = succ[v][pos]
                if index[w] < 0:
                    work.append((w, 0))
                elif on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
                continue
            work.pop()
            if work and low[v] < low[work[-1][0]]:
                low[work[-1][0]] = low[v]
            if low[v] == index[v]:
                comp: list[int] = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp.append(w)
                    if w == v:
                        break
                out.append(tuple(sorted(comp)))
    return out


def _reachable(start: int, refs: list[tuple[int, ...]], budget: Budget) -> list[bool]:
    seen = [False] * len(refs)
    seen[start] = True
    queue = deque([start])
    while queue:
        r = queue.popleft()
        for s in refs[r]:
            budget.charge(1, "grammar analysis")
            if not seen[s]:
                seen[s] = True
                queue.append(s)
    return seen


# the kinds that read input (kinds as plain ints: `trgc.grammar.ast`)
_CONSUMING = frozenset((K_LITERAL, K_CLASS, K_SPECIAL))


def _postorder(
    nodes: list[Node],
    root: int,
    budget: Budget,
    stamped: dict[int, tuple[object, int, int]],
    walked: dict[object, tuple[int, list[int]]],
) -> list[int]:
    """The nodes under `root`, children before parents, leaves in source order (each once).

    The stack holds `i` for a node to expand and `~i` (negative) for one whose children are
    done, so no pair is made per node. A stamped subtree (`Grammar.stamped`) whose template
    was walked whole before (`walked`: template key -> first node and the walk's part) is
    that part shifted, when none of its nodes has been met: copies are equal node for node
    and use no node outside them, so the walk would give exactly that."""
    order: list[int] = []
    seen: set[int] = set()
    starts: dict[int, int] = {}  # stamped root being walked -> where its part of `order` begins
    stack = [root]
    while stack:
        i = stack.pop()
        if i < 0:
            order.append(~i)
            if ~i in starts:
                _keep_walk(~i, order[starts.pop(~i) :], stamped, walked)
            continue
        if i in seen:
            continue
        template = stamped.get(i)
        if template is not None:
            key, first, size = template
            found = walked.get(key)
            if found is not None:
                part = [n + first - found[0] for n in found[1]]
                if seen.isdisjoint(part):
                    seen.update(part)
                    order.extend(part)
                    continue
            elif seen.isdisjoint(range(first, first + size)):
                starts[i] = len(order)
        seen.add(i)
        stack.append(~i)
        for c in reversed(nodes[i].children):
            if c not in seen:
                stack.append(c)
    budget.charge(len(order), "grammar analysis")  # one charge per node, after the walk
    return order


def _keep_walk(
    root: int,
    part: list[int],
    stamped: dict[int, tuple[object, int, int]],
    walked: dict[object, tuple[int, list[int]]],
) -> None:
    """Keep the walk of stamped subtree `root`, begun with none of its nodes met."""
    key, first, _ = stamped[root]
    walked.setdefault(key, (first, part))


class _Context:
    """Shared state of one `analyze` call: the grammar, the budget and error helpers."""

    def __init__(self, grammar: Grammar, budget: Budget) -> None:
        self.grammar = grammar
        self.budget = budget
        self.rule_index: dict[str, int] = {}
        # per rule, its body's nodes in postorder; the root is last
        self.orders: list[list[int]] = []
        self.target: dict[int, int] = {}  # REF node -> referenced rule

    def error(
        self,
        code: str,
        message: str,
        at: Node | Rule | None,
        rule: Rule | None,
        hint: str | None = None,
    ):
        span = Span(at.line, at.column) if at is not None and at.line > 0 else None
        pointer = rule.pointer if rule is not None else None
        return TrgcError(code, message, span=span, pointer=pointer, hint=hint)

    @staticmethod
    def raise_collected(errors: list[TrgcError]) -> None:
        if not errors:
            return
        first = errors[0]
        raise TrgcError(
            first.code,
            first.message,
            span=first.span,
            pointer=first.pointer,
            hint=first.hint,
            details={**first.details, "errors": [e.to_dict() for e in errors[:MAX_ERRORS]]},
        )

    # -- phase 1: names -------------------------------------------------------------------

    def resolve(self) -> tuple[dict[str, int], list[tuple[int, ...]], int]:
        grammar = self.grammar
        nodes = grammar.nodes
        if not grammar.rules:
            raise TrgcError("E_EMPTY_GRAMMAR", "the grammar defines no rule")
        errors: list[TrgcError] = []
        index: dict[str, int] = {}
        for i, rule in enumerate(grammar.rules):
            if rule.name in RESERVED_NAMES:
                errors.append(
                    self.error(
                        "E_RESERVED_NAME",
                        f"{rule.name!r} is reserved and cannot name a rule",
                        rule,
                        rule,
                        'rename the rule; special("...") matches a special token',
                    )
                )
            if rule.name in index:
                first = grammar.rules[index[rule.name]]
                where = f" (first defined at {first.line}:{first.column})" if first.line > 0 else ""
                errors.append(
                    self.error(
                        "E_DUPLICATE_RULE",
                        f"rule {rule.name!r} is defined twice{where}",
                        rule,
                        rule,
                        "merge the definitions with | or rename one",
                    )
                )
            else:
                index[rule.name] = i
        names = sorted(index)
        refs: list[tuple[int, ...]] = []
        walked: dict[object, tuple[int, list[int]]] = {}  # `_postorder`'s stamped walks
        for rule in grammar.rules:
            order = _postorder(nodes, rule.body, self.budget, grammar.stamped, walked)
            self.orders.append(order)
            targets: set[int] = set()
            for n in order:
                node = nodes[n]
                if node.kind != K_REF:
                    continue
                target = index.get(node.payload)
                if target is None:
                    close = difflib.get_close_matches(node.payload, names, n=1)
                    errors.append(
                        self.error(
                            "E_UNDEFINED_RULE",
                            f"rule {rule.name!r} references {node.payload!r}, which no rule defines",
                            node,
                            rule,
                            f"did you mean {close[0]!r}?"
                            if close
                            else "define the rule or correct the name",
                        )
                    )
                else:
                    self.target[n] = target
                    targets.add(target)
            refs.append(tuple(sorted(targets)))
        start = index.get(grammar.start if grammar.start is not None else grammar.rules[0].name)
        if start is None:
            errors.append(
                self.error(
                    "E_UNDEFINED_START",
                    f"the start rule {grammar.start!r} is not defined",
                    None,
                    None,
                    "define it or correct %start",
                )
            )
        self.raise_collected(errors)
        self.rule_index = index
        return index, refs, start

    # -- nullability ----------------------------------------------------------------------

    def nullability(self, refs: list[tuple[int, ...]]) -> tuple[list[bool], list[bool]]:
        """Rule nullability by a worklist fixed point, then every node's nullability.

        A rule is re-evaluated only when a rule it references becomes nullable, and a rule
        flips at most once, so the work is bounded by the sum over reference edges of the
        referencing rule's body size; every node visit is charged to the budget.
        """
        grammar = self.grammar
        n_rules = len(grammar.rules)
        users: list[list[int]] = [[] for _ in range(n_rules)]
        for r, targets in enumerate(refs):
            for s in targets:
                users[s].append(r)
        nullable = [False] * n_rules
        node_nullable = [False] * len(grammar.nodes)
        queue = deque(range(n_rules))
        queued = [True] * n_rules
        while queue:
            r = queue.popleft()
            queued[r] = False
            if nullable[r]:
                continue
            if self._evaluate(self.orders[r], node_nullable, nullable):
                nullable[r] = True
                for u in users[r]:
                    if not nullable[u] and not queued[u]:
                        queued[u] = True
                        queue.append(u)
        for order in self.orders:  # one final pass: every node from the final rule values
            self._evaluate(order, node_nullable, nullable)
        return nullable, node_nullable

    def _evaluate(self, order: list[int], node_nullable: list[bool], nullable: list[bool]) -> bool:
        """Recompute the nullability of the nodes of one rule body (in postorder); the root's."""
        self.budget.charge(len(order), "nullable fixed point")
        nodes = self.grammar.nodes
        target = self.target
        for i in order:
            kind, _, _, children, payload = nodes[i]
            if kind in _CONSUMING:
                value = False
            elif kind in (K_SEQ, K_AND):
                value = True
                for c in children:
                    if not node_nullable[c]:
                        value = False
                        break
            elif kind == K_ALT:
                value = False
                for c in children:
                    if node_nullable[c]:
                        value = True
                        break
            elif kind == K_REPEAT:
                value = payload[0] == 0 or node_nullable[children[0]]
            elif kind == K_REF:
                value = nullable[target[i]]
            elif kind == K_NOT:
                value = not node_nullable[children[0]]
            else:  # EMPTY matches the empty string
                value = True
            node_nullable[i] = value
        return node_nullable[order[-1]]

    # -- phase 2: structure ---------------------------------------------------------------

    def structure(
        self, node_nullable: list[bool], reachable: list[bool], strict: bool, cyclic: bool
    ) -> None:
        """Errors of shape: nullable repetitions, nullable cycles, left recursion and (with
        `strict`) unreachable rules. The cycles are cycles of the reference graph, so a grammar
        whose reference graph has none (not `cyclic`) is not searched for them."""
        grammar = self.grammar
        errors = self._nullable_repetitions(node_nullable)
        left, alone = self._leading_refs(node_nullable) if cyclic else ([], [])
        on_nullable_cycle = [False] * len(grammar.rules)
        for comp, cycle in self._cycles(alone):
            for r in comp:
                on_nullable_cycle[r] = True
            path = " -> ".join(grammar.rules[r].name for r in cycle)
            errors.append(
                self._cycle_error(
                    "E_NULLABLE_CYCLE",
                    f"nullable cycle: {path} can derive itself without consuming input",
                    cycle,
                    alone,
                    "make some step of the cycle consume input",
                )
            )
        for comp, cycle in self._cycles(left):
            if any(on_nullable_cycle[r] for r in comp):
                continue  # already reported as the more specific nullable cycle
            path = " -> ".join(grammar.rules[r].name for r in cycle)
            kind = "direct" if len(cycle) == 2 else "indirect"
            errors.append(
                self._cycle_error(
                    "E_LEFT_RECURSION",
                    f"{kind} left recursion: {path} (a rule reaches itself before consuming input)",
                    cycle,
                    left,
                    'rewrite it as repetition, e.g. a ::= a "x" | "y" becomes a ::= "y" "x"*',
                )
            )
        if strict:
            for r, rule in enumerate(grammar.rules):
                if not reachable[r]:
                    errors.append(
                        self.error(
                            "E_UNREACHABLE_RULE",
                            f"rule {rule.name!r} cannot be reached from the start rule {grammar.start!r}",
                            rule,
                            rule,
                            "remove it, reference it, or compile without --strict",
                        )
                    )
        errors.sort(key=_error_position)
        self.raise_collected(errors)

    def _nullable_repetitions(self, node_nullable: list[bool]) -> list[TrgcError]:
        """Unbounded repetitions of a nullable item, in rule order."""
        nodes = self.grammar.nodes
        errors = []
        reported: set[int] = set()  # a node shared by two rules is reported once
        for r, order in enumerate(self.orders):
            rule = self.grammar.rules[r]
            for i in order:
                node = nodes[i]
                if (
                    node.kind == K_REPEAT
                    and node.payload[1] is None
                    and node_nullable[node.children[0]]
                    and i not in reported
                ):
                    reported.add(i)
                    errors.append(
                        self.error(
                            "E_NULLABLE_REPETITION",
                            f"rule {rule.name!r}: an unbounded repetition of an item that can match "
                            "the empty string (the number of repetitions would be ambiguous)",
                            node,
                            rule,
                            "make the repeated item consume input, e.g. write x* instead of (x?)*",
                        )
                    )
        return errors

    def _leading_refs(
        self, node_nullable: list[bool]
    ) -> tuple[list[dict[int, int]], list[dict[int, int]]]:
        """Per rule: the rules it can reach first (`left`) and alone (`alone`).

        `left[r]` maps each rule s with r => alpha s beta, alpha nullable, to one REF node of
        r's body witnessing it; `alone[r]` the same with beta nullable too. Cycles in `alone`
        are nullable cycles, cycles in `left` are left recursion. Computed children first
        over the postorders; dicts keep the first witness in source order.
        """
        nodes = self.grammar.nodes
        left: dict[int, dict[int, int]] = {}
        alone: dict[int, dict[int, int]] = {}
        none: dict[int, int] = {}  # shared by every node that reaches no rule (never mutated)
        for order in self.orders:
            for i in order:
                kind, _, _, kids, payload = nodes[i]
                if kind in _CONSUMING or kind == K_EMPTY:
                    left[i] = alone[i] = none
                    continue
                lmap: dict[int, int] = {}
                amap: dict[int, int] = {}
                if kind == K_REF:
                    lmap[self.target[i]] = i
                    amap = lmap
                elif kind == K_SEQ:
                    for c in kids:
                        for s, w in left[c].items():
                            lmap.setdefault(s, w)
                        if not node_nullable[c]:
                            break
                    n_hard = sum(1 for c in kids if not node_nullable[c])
                    for c in kids:
                        if n_hard == 0 or (n_hard == 1 and not node_nullable[c]):
                            for s, w in alone[c].items():
                                amap.setdefault(s, w)
                    self.budget.charge(len(kids) + len(lmap) + len(amap), "grammar analysis")
                elif kind in (K_ALT, K_AND):  # an AND reaches what each operand reaches
                    for c in kids:
                        for s, w in left[c].items():
                            lmap.setdefault(s, w)
                        for s, w in alone[c].items():
                            amap.setdefault(s, w)
                    self.budget.charge(len(kids) + len(lmap) + len(amap), "grammar analysis")
                elif kind == K_REPEAT:
                    lo, hi = payload[:2]
                    child = kids[0]
                    if hi != 0:
                        lmap = left[child]
                        if lo <= 1 or node_nullable[child]:
                            amap = alone[child]
                left[i], alone[i] = lmap, amap
        bodies = [rule.body for rule in self.grammar.rules]
        return [left[b] for b in bodies], [alone[b] for b in bodies]

    def _cycle_error(
        self, code: str, message: str, cycle: list[int], edges: list[dict[int, int]], hint: str
    ) -> TrgcError:
        """An error at the reference that starts `cycle`, with the cycle's rule names."""
        rules = self.grammar.rules
        ref = self.grammar.nodes[edges[cycle[0]][cycle[1]]]
        err = self.error(code, message, ref, rules[cycle[0]], hint)
        err.details["cycle"] = [rules[r].name for r in cycle]
        return err

    def _cycles(self, edges: list[dict[int, int]]) -> list[tuple[tuple[int, ...], list[int]]]:
        """Each cyclic component of a rule graph with one shortest cycle through its smallest rule."""
        graph = [tuple(sorted(e)) for e in edges]
        out = []
        for comp in strongly_connected(graph, self.budget):
            first = comp[0]
            if len(comp) == 1 and first not in graph[first]:
                continue
            members = set(comp)
            parent = {first: -1}
            queue = deque([first])
            end = -1
            while queue and end < 0:
                v = queue.popleft()
                for w in graph[v]:
                    self.budget.charge(1, "grammar analysis")
                    if w == first:
                        end = v
                        break
                    if w in members and w not in parent:
                        parent[w] = v
                        queue.append(w)
            path = [first]
            v = end
            while v != first:
                path.append(v)
                v = parent[v]
            path.append(first)
            path[1:-1] = reversed(path[1:-1])
            out.append((comp, path))
        out.sort(key=lambda item: item[1][0])
        return out


def _error_position(err: TrgcError) -> tuple[int, int]:
    if err.span is None or err.span.line is None:
        return (0, 0)
    return (err.span.line, err.span.column)
