"""Tool list + family to artifact: read the tools, build the envelope grammar, `compile_ast`.

The artifact's metadata `options` record the family, its markers, the tool names and the
lowering options, so the same tools compiled for two families (or with other separators)
have different identities; `source_sha256` is the hash of the tools' canonical JSON.
"""

from __future__ import annotations

from trgc.artifact.model import Artifact
from trgc.compiler.build import compile_ast
from trgc.compiler.collector import collection_paused
from trgc.errors import TrgcError
from trgc.grammar.schema import DEFAULT_MAX_DEPTH
from trgc.grammar.toolcall import build_toolcall_grammar, load_tool_json, parse_tools
from trgc.grammar.toolcall import family as find_family
from trgc.limits import DEFAULT_LIMITS, Limits


@collection_paused
def compile_toolcall(
    tools: list | str | bytes,
    *,
    family: str = "qwen",
    separators: str | None = None,
    open_objects: bool = False,
    max_depth: int = DEFAULT_MAX_DEPTH,
    limits: Limits | None = None,
    source: str | None = None,
    unconstrained_arguments: tuple[str, ...] = (),
) -> Artifact:
    """Compile an OpenAI-format tool list (parsed list, JSON text or bytes) for `family`
    ("qwen", "llama3" or "deepseek") into an Artifact.

    `separators` overrides the family's JSON separators for the arguments ("compact" or
    "pretty"; every family's template writes "pretty"); `open_objects` admits undeclared
    argument members as trj-1 does. `unconstrained_arguments` names tools whose arguments are
    any JSON object instead of their schema (recorded in the artifact's options).
    """
    limits = limits or DEFAULT_LIMITS
    try:
        fam = find_family(family)
        value = tools if isinstance(tools, list) else load_tool_json(tools, limits)
        grammar = build_toolcall_grammar(
            parse_tools(value, limits),
            fam,
            separators=separators,
            open_objects=open_objects,
            max_depth=max_depth,
            limits=limits,
            unconstrained_arguments=tuple(unconstrained_arguments),
        )
        return compile_ast(grammar, limits=limits)
    except TrgcError as error:
        if error.source is None and source is not None:
            error.source = source
        raise
