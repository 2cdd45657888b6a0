"""JSON Schema (trj-1) to artifact: read, lower to the shared AST, compile with `compile_ast`.

The lowering options (separators, open objects, max_depth, the draft read) are recorded in the
artifact metadata under `options`, so two artifacts from one schema with different options
have different identities.
"""

from __future__ import annotations

from trgc.artifact.model import Artifact
from trgc.compiler.build import compile_ast
from trgc.compiler.cache import EntryStore, cached_compile, schema_identity
from trgc.compiler.collector import collection_paused
from trgc.errors import TrgcError
from trgc.grammar.schema import DEFAULT_MAX_DEPTH, load_schema, lower_schema
from trgc.grammar.schema.whitespace import DEFAULT_MAX_WHITESPACE
from trgc.limits import DEFAULT_LIMITS, Limits


@collection_paused
def compile_schema(
    schema: dict | bool | str | bytes,
    *,
    whitespace: str | None = None,
    separators: str | None = None,
    max_whitespace: int = DEFAULT_MAX_WHITESPACE,
    open_objects: bool = False,
    max_depth: int = DEFAULT_MAX_DEPTH,
    limits: Limits | None = None,
    source: str | None = None,
    ignore_keywords: tuple[str, ...] = (),
    unknown_keywords: str = "error",
    member_order: str = "declared",
    cache: EntryStore | None = None,
) -> Artifact:
    """Compile a JSON Schema (a parsed object, JSON text or bytes) into an Artifact.

    `whitespace` is "pretty" (`, ` `: ` as json.dumps and chat templates write them, the
    default), "compact" (`,` `:`) or "flexible" (JSON whitespace, at most `max_whitespace` characters on each side of
    every structural character); `separators` is its older name. `open_objects` admits
    undeclared members (after the declared ones) in every object; `ignore_keywords` are
    keywords the caller explicitly treats as annotations; `unknown_keywords="annotate"` treats
    every name outside the keyword matrix so. Both are recorded in the artifact's options, so
    they change its identity. `member_order="any"` admits the declared members of objects of
    at most six of them in any order (recorded too); "declared" (the default) keeps the
    declared order, the order a generator writes.

    `cache` (a `trgc.engine.diskcache.DiskCache`, e.g. `open_cache()`) keeps compiled
    artifacts keyed by the schema's SHA-256 (of its text, or of a parsed value's JSON
    text in its own member order), these options, the limits and the compiler
    version (`trgc.compiler.cache`): a schema compiled before, in any process, is read back
    and verified instead of compiled.
    """
    limits = limits or DEFAULT_LIMITS
    options = {"whitespace": whitespace, "separators": separators,
               "max_whitespace": max_whitespace, "open_objects": open_objects,
               "max_depth": max_depth, "ignore_keywords": list(ignore_keywords),
               "unknown_keywords": unknown_keywords, "member_order": member_order}  # fmt: skip
    try:

        def compile_now() -> Artifact:
            value, digest = load_schema(schema, limits)
            grammar = lower_schema(
                value,
                whitespace=whitespace,
                separators=separators,
                max_whitespace=max_whitespace,
                open_objects=open_objects,
                max_depth=max_depth,
                limits=limits,
                source_sha256=digest,
                ignore_keywords=tuple(ignore_keywords),
                unknown_keywords=unknown_keywords,
                member_order=member_order,
            )
            try:
                return compile_ast(grammar, limits=limits)
            except TrgcError as error:
                if error.code != "E_EMPTY_LANGUAGE":
                    raise
                # the intersections a schema's keywords compile to left no string at all
                raise TrgcError(
                    "E_UNSATISFIABLE",
                    "no JSON value satisfies the schema within the trj-1 profile: its "
                    "constraints have an empty intersection",
                    pointer=error.pointer,
                ) from None

        identity = None if cache is None else schema_identity(schema)
        return cached_compile(cache, identity, options, limits, compile_now)
    except TrgcError as error:
        if error.source is None and source is not None:
            error.source = source
        raise


def whitespace_hint(artifact: Artifact, data: bytes) -> str | None:
    """For a JSON Schema artifact that rejects `data`: the option that would accept it, when
    only its whitespace is in the way (the same tokens re-spaced the artifact's way pass)."""
    from trgc.artifact.check import check
    from trgc.grammar.schema.whitespace import DEFAULT_MAX_WHITESPACE, respace, written_mode

    options = artifact.metadata.get("options") or {}
    mode = options.get("whitespace")
    if artifact.metadata.get("source_kind") != "trj" or mode is None:
        return None
    fixed = respace(data, "compact" if mode == "flexible" else mode)
    if fixed is None or fixed == data or not check(artifact, fixed).accepted:
        return None
    written, longest = written_mode(data)
    if mode == "flexible":
        return (
            f"rejected only for its whitespace: a run of {longest} characters; compile with "
            f"--max-whitespace {longest} (now {options.get('max_whitespace')}) to accept it"
        )
    if written != "flexible":
        return (
            f"rejected only for its whitespace: the document is written {written}, the artifact "
            f"was compiled with --whitespace {mode}; compile with --whitespace {written} to accept it"
        )
    extra = "" if longest <= DEFAULT_MAX_WHITESPACE else f" --max-whitespace {longest}"
    return (
        f"rejected only for its whitespace (the artifact was compiled with --whitespace {mode}); "
        f"compile with --whitespace flexible{extra} to accept it"
    )
