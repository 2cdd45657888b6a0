"""The constrained rows of a serving engine's persistent batch (engine-neutral bookkeeping).

An engine such as vLLM keeps a batch of running requests in numbered rows and reports changes:
rows removed, requests added into a row (with a live reference to their growing list of output
token ids), requests moved from one row to another or two rows swapped. `ConstrainedBatch`
mirrors that for the requests that carry trgc arguments: one `Matcher` per request, artifacts
shared through a `ConstraintCache`, one locked `MaskCache` for all matchers.

Before each forward pass (`apply`), every matcher first catches up with the tokens appended to
its request's output list since the last pass (the engine's sampler chose them), then all rows'
masks are filled at once (`trgc.torch.fill_next_token_bitmask`) and applied to the logits.
A request that is preempted and later recomputed is removed and re-added with the tokens it
has produced so far: its new matcher advances through them again, so its state is exact.
Negative ids at the end of an output list are placeholders for tokens still being copied
(asynchronous scheduling) and are read at the next pass.

A token the constraint did not allow (the mask makes that impossible unless something else
changed the logits after it) is recorded as a violation; the row is not masked any more and
its audit record says `violation`. Nothing is repaired.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from trgc.engine.bits import n_words
from trgc.engine.cache import MaskCache
from trgc.engine.matcher import Matcher
from trgc.integrations.audit import AuditWriter, mask_hash
from trgc.integrations.constraints import ConstraintCache, RequestSpec, parse_request
from trgc.tokenizer.table import TokenTable


@dataclass
class RowState:
    """One constrained request: its matcher, the engine's output list, tokens consumed."""

    matcher: Matcher
    outputs: list[int]
    spec: RequestSpec
    audit: AuditWriter | None
    seen: int = 0
    violated: bool = False

    @property
    def masked(self) -> bool:
        """Whether this row gets a mask at the next pass."""
        return not self.violated and not self.matcher.is_terminated()

    def catch_up(self) -> None:
        """Advance through the output tokens appended since the last call."""
        outputs = self.outputs
        while self.seen < len(outputs):
            token = int(outputs[self.seen])
            if token < 0:  # a placeholder: the token is still being copied
                return
            self.seen += 1
            matcher = self.matcher
            allowed = not self.violated and matcher.is_allowed(token)
            if self.audit is not None:
                words = (
                    matcher.allowed_tokens_packed()
                    if not self.violated
                    else np.zeros(0, dtype=np.int32)
                )
                self.audit.step(token, mask_hash(words), allowed)
            if allowed:
                matcher.advance(token)
            else:
                self.violated = True

    def close(self) -> None:
        """Read the final tokens and publish the audit record (if one was asked for)."""
        self.catch_up()
        if self.audit is not None:
            self.audit.close(
                accepting=self.matcher.is_accepting(), terminated=self.matcher.is_terminated()
            )


class ConstrainedBatch:
    """The constrained rows of a persistent batch over one token table (see the module
    docstring). `max_rows` bounds the row indices, `width` is the logits' column count (at
    least the table's vocabulary; the extra ids are never allowed)."""

    def __init__(
        self,
        table: TokenTable,
        *,
        max_rows: int,
        width: int,
        engine: str,
        constraints: ConstraintCache | None = None,
        cache: MaskCache | None = None,
        threads: int | None = None,
    ) -> None:
        from trgc.errors import TrgcError

        if width < table.vocab_size:
            raise TrgcError(
                "E_MODEL_VOCAB",
                f"the model scores {width} tokens; the token table has {table.vocab_size}",
            )
        self.table = table
        self.engine = engine
        self.constraints = constraints or ConstraintCache()
        self.cache = cache or MaskCache()
        self.threads = threads
        self.rows: dict[int, RowState] = {}
        self.bitmask = np.zeros((max_rows, n_words(width)), dtype=np.int32)

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, index: int, args: Any, outputs: list[int]) -> None:
        """A request enters row `index` (replacing whatever was there); `args` are its trgc
        arguments (None: unconstrained), `outputs` its live output token list."""
        self.remove(index)
        spec = parse_request(args)
        if spec is None:
            return
        artifact = self.constraints.artifact(spec)
        matcher = Matcher(artifact, self.table, cache=self.cache)
        audit = None
        if spec.audit is not None:
            audit = AuditWriter(
                spec.audit,
                artifact=artifact.sha256,
                tokenizer=str(self.table.sha256),
                constraint=spec.kind,
                engine=self.engine,
            )
        state = RowState(matcher, outputs, spec, audit)
        state.catch_up()  # a resumed (preempted) request brings the tokens it already has
        self.rows[index] = state

    def remove(self, index: int) -> None:
        state = self.rows.pop(index, None)
        if state is not None:
            state.close()

    def move(self, source: int, target: int, *, swap: bool) -> None:
        """The request in `source` moves to `target`; with `swap`, the one in `target` moves to
        `source`. Without it, whatever was in `target` leaves the batch."""
        a = self.rows.pop(source, None)
        b = self.rows.pop(target, None)
        if a is not None:
            self.rows[target] = a
        if b is not None:
            if swap:
                self.rows[source] = b
            else:
                b.close()

    def masked_rows(self) -> tuple[list[int], list[Matcher]]:
        """Catch every row up with its outputs; the rows to mask now and their matchers."""
        rows: list[int] = []
        matchers: list[Matcher] = []
        for index in sorted(self.rows):
            state = self.rows[index]
            state.catch_up()
            if state.masked:
                rows.append(index)
                matchers.append(state.matcher)
        return rows, matchers

    def apply(self, logits: Any) -> Any:
        """Mask the constrained rows of `logits` (a torch tensor `(batch, width)`) in place."""
        if not self.rows:
            return logits
        from trgc.torch import apply_token_bitmask_inplace, fill_next_token_bitmask

        rows, matchers = self.masked_rows()
        if rows:
            fill_next_token_bitmask(matchers, self.bitmask, rows, threads=self.threads)
            apply_token_bitmask_inplace(logits, self.bitmask[rows], rows)
        return logits

    def close(self) -> None:
        """Every request leaves (engine shutdown): audit records are published."""
        for index in sorted(self.rows):
            self.remove(index)


def publish_table(table: TokenTable, directory: Path) -> Path:
    """Save `table` as `<directory>/sha256-<hex>.trt` (where `check_audit` looks for it)."""
    path = directory / f"sha256-{str(table.sha256)[7:]}.trt"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        table.save(path)
    return path
