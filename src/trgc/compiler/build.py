"""Source to artifact: analysis, byte automata, metadata, size limit and the codec self-check.

`compile_ast` is the one entry point every front end ends in (trg-1 grammars here, JSON
Schemas through `trgc.compiler.schema`); the metadata it records depends only on the
grammar, the limits and the trgc version: no timestamps, paths or hash-seed-dependent order.
"""

from __future__ import annotations

from trgc.artifact.codec import encode, encoded_size
from trgc.artifact.model import REPEAT, RULE, SHARED, Artifact, Machine
from trgc.compiler.cache import EntryStore, cached_compile, text_identity
from trgc.compiler.collector import collection_paused
from trgc.errors import TrgcError
from trgc.grammar.ast import K_CLASS, K_LITERAL, K_REPEAT, Grammar
from trgc.limits import DEFAULT_LIMITS, Budget, Limits, check_limit

ARTIFACT_FORMAT = "trga-2"
DEFAULT_MAX_DEPTH = 32


# the features `_features` reads off the nodes (the others come from the machines)
_NODE_FEATURES = {"classes", "unicode", "counted_repetition"}


def _features(
    grammar: Grammar, machines: tuple[Machine, ...], specials: tuple[str, ...]
) -> list[str]:
    """Constructs the grammar uses, as a sorted list (one pass over the node arena, kinds
    compared as plain ints: an enum member per node per test was most of its time; it stops
    once every feature nodes show is found, as a schema with strings soon has)."""
    found: set[str] = set()
    for kind, _, _, _, payload in grammar.nodes:
        if found == _NODE_FEATURES:
            break
        if kind == K_CLASS:
            found.add("classes")
            if "unicode" not in found and any(hi > 0x7F for _, hi in payload):
                found.add("unicode")
        elif kind == K_LITERAL and not payload.isascii():
            found.add("unicode")
        elif kind == K_REPEAT:
            low, high, *forced = payload
            if (low, high) not in ((0, None), (1, None), (0, 1)) or any(forced):
                found.add("counted_repetition")
    kinds = {m.kind for m in machines}
    if any(m.kind == RULE for m in machines[1:]):
        found.add("recursion")
    if REPEAT in kinds:
        found.add("counters")
    if SHARED in kinds:
        found.add("shared_rules")
    if specials:
        found.add("specials")
    return sorted(found)


def _source_hash(grammar: Grammar) -> str | None:
    value = grammar.source_sha256
    if not value:
        return None
    return value if value.startswith("sha256:") else "sha256:" + value


# Table sizes go into the metadata; measurements of the compile process itself (operations
# charged, intermediate NFA/DFA sizes) do not, so that tuning the compiler's accounting never
# changes an artifact's identity.
IDENTITY_STATS = ("classes", "machines", "states", "transitions")


@collection_paused
def compile_ast(
    grammar: Grammar, *, limits: Limits | None = None, strict: bool = False
) -> Artifact:
    """Analyse `grammar`, build its byte automata and wrap them into a self-checked Artifact.

    Raises the analysis and automata errors (e.g. `E_UNDEFINED_RULE`, `E_PREDICTIVE_CONFLICT`)
    and a limit error for every ceiling, including `compiled_bytes` before serialising.
    """
    from trgc import __version__
    from trgc.automata.machines import build_tables
    from trgc.grammar.analysis import analyze

    limits = limits or DEFAULT_LIMITS
    budget = Budget(limits.operations)
    analysis = analyze(grammar, strict=strict, budget=budget)
    tables = build_tables(grammar, analysis, limits=limits, budget=budget)
    max_depth = grammar.max_depth if grammar.max_depth is not None else DEFAULT_MAX_DEPTH
    check_limit("max_depth", max_depth, limits.max_depth, "max_depth")
    machines = tuple(
        Machine(m.name, m.accepting, m.next, m.calls, m.kind, m.call_bounds)
        for m in tables.machines
    )
    metadata: dict = {
        "format": ARTIFACT_FORMAT,
        "compiler": {"name": "trgc", "version": __version__},
        "source_kind": grammar.source_kind,
        "start": tables.machine_rules[0],
        "machines": list(tables.machine_rules),
        "max_depth": max_depth,
        "limits": limits.to_dict(),
        "features": _features(grammar, machines, tables.specials),
        "stats": {key: tables.stats[key] for key in IDENTITY_STATS},
    }
    source_hash = _source_hash(grammar)
    if source_hash is not None:
        metadata["source_sha256"] = source_hash
    if grammar.options:
        metadata["options"] = dict(grammar.options)
    artifact = Artifact(
        metadata=metadata,
        byte_class=tables.byte_class,
        n_classes=tables.n_classes,
        specials=tables.specials,
        machines=machines,
        max_depth=max_depth,
    )
    check_limit(
        "compiled_bytes", encoded_size(artifact), limits.compiled_bytes, "the compiled artifact"
    )
    encode(artifact)  # serialise and self-check now, so a returned artifact is always valid
    return artifact


@collection_paused
def compile_grammar(
    text: str | bytes,
    *,
    limits: Limits | None = None,
    strict: bool = False,
    source: str | None = None,
    cache: EntryStore | None = None,
) -> Artifact:
    """Compile trg-1 source text into an Artifact (`source` names it in error messages);
    `cache` as in `compile_schema` (`trgc.compiler.cache`)."""
    from trgc.grammar.parser import parse_grammar

    limits = limits or DEFAULT_LIMITS
    identity = None if cache is None else text_identity("trg", text)
    try:
        return cached_compile(
            cache, identity, {"strict": strict}, limits,
            lambda: compile_ast(parse_grammar(text, limits=limits, source=source),
                                limits=limits, strict=strict),
        )  # fmt: skip
    except TrgcError as error:
        if error.source is None and source is not None:
            error.source = source
        raise
