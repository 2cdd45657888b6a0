"""Member order: `member_order="any"` admits an object's declared members in any order.

trj-1 writes members in declared order by default, which is what a generator wants but refuses
a valid document written in another order (about one valid JSONSchemaBench instance in twenty
is). With `member_order="any"`, an object of at most `MAX_FREE_MEMBERS` declared members reads
them in any order, each at most once, the required ones all present; additional members still
come after the declared ones, and larger objects keep declared order (a subset of the valid
orders, so the language stays sound).

Construction: one shared machine per set S of members already written, `R_S` =
`,` key_i value_i R_{S+i} for each i outside S, or the end of the object when S holds every
required member: `}`, or `,` E (`,` E)* `}` with E an additional member. Each machine reads up
to its object's `}`, so a call never competes with a return on the byte that follows it. The
object is `{` `}` (nothing required), `{` key_i value_i R_{i}, or `{` E (`,` E)* `}` (nothing
required). The sets are 2^n machines of at most n + 1 branches: n = 6 is 64 machines and 384
member uses, each value shared as the declared-order list shares it.
"""

from __future__ import annotations

from trgc.errors import TrgcError
from trgc.grammar.ast import Rule

MAX_FREE_MEMBERS = 6
ORDERS = ("declared", "any")


def check_order(member_order: object) -> None:
    if member_order not in ORDERS:
        raise TrgcError(
            "E_USAGE",
            f"member_order must be 'declared' or 'any', got {member_order!r}",
            hint="any: declared members in any order (objects of at most "
            f"{MAX_FREE_MEMBERS} declared members)",
        )


class MemberOrder:
    """Mixin of `trgc.grammar.schema.lower.Lowering`."""

    def _free_member_list(
        self, members: list[tuple[tuple[int, int], bool]], extra: list[tuple[int, int]] | None
    ) -> int:
        """`{` the declared members in any order, each at most once, required ones present,
        additional members last `}` (see the module docstring)."""
        b = self.b
        layout = self.layout
        n = len(members)
        full = (1 << n) - 1
        needed = sum(1 << i for i, (_, req) in enumerate(members) if req)
        # uses of each member: once after a comma per set without it, once as the first member
        uses = [iter(self._member_uses(m, (1 << (n - 1)) + 1)) for m, _ in members]
        extra_uses = iter(self._extra_uses(extra, 2 * (1 << n) + 2)) if extra else None
        self.helpers += 1
        prefix = f"members_{self.helpers}"

        def tail_of_extras() -> int:
            assert extra_uses is not None
            first, later = next(extra_uses), next(extra_uses)
            return b.seq(first, b.rep(b.seq(layout.comma(), later), 0, None))

        def close(done: int) -> list[int]:
            if done & needed != needed:
                return []
            options = [layout.token("}")]
            if extra:
                options.append(b.seq(layout.comma(), tail_of_extras(), layout.token("}")))
            return options

        def name(done: int) -> str:
            return f"{prefix}_{done}"

        for done in range(full, 0, -1):  # larger sets first: every reference is to a built rule
            options = close(done)
            for i in range(n):
                if not done & (1 << i):
                    options.append(b.seq(layout.comma(), next(uses[i]), b.ref(name(done | 1 << i))))
            self.grammar.rules.append(
                Rule(name(done), b.alt(*options), 0, 0, pointer=None, shared=True)
            )
        options = [b.seq(next(uses[i]), b.ref(name(1 << i))) for i in range(n)]
        if not needed:
            options.append(layout.token("}"))
            if extra:
                options.append(b.seq(tail_of_extras(), layout.token("}")))
        return b.seq(layout.token("{"), b.alt(*options))
