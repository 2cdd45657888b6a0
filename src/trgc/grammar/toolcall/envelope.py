"""A tool list and a family to one `Grammar`: free text, then the family's call envelope.

Each tool's `parameters` schema is lowered by trj-1 (`lower_schema`) into its own grammar,
whose nodes are copied into one arena with every rule renamed `<tool>.<rule>` (the shared
any-JSON rule `json_value` is identical for every tool and kept once). The start rule is

    start = FREE ( opening CALL ( between CALL )* closing )?
    CALL  = call_open ( NAME_1 name_close <tool_1>.root | … | NAME_k name_close <tool_k>.root )
            call_close

so the tool name literal decides which argument grammar follows: names are distinct
strings, and the byte after the name (a quote or newline that no name contains) ends it,
so a name that is a prefix of another never conflicts. A tool named in
`unconstrained_arguments` gets, instead of its schema, the arguments grammar of
`{"type": "object"}` with open objects: any JSON object, still inside the envelope (an explicit
per-tool fallback for schemas outside trj-1, recorded in the options; the default is an error).
Everything outside a `$ref` cycle is
inlined by the compiler into one DFA; arguments are matched byte by byte, so a token that
merges structure (`{"`, `":`, `{}`, `"}}`) is allowed exactly when all its bytes fit.
"""

from __future__ import annotations

from trgc.errors import TrgcError
from trgc.grammar.ast import Grammar, Kind, Rule
from trgc.grammar.schema.lower import ANY_RULE, DEFAULT_MAX_DEPTH, lower_schema
from trgc.grammar.schema.nodes import Builder
from trgc.grammar.toolcall.families import Family, Piece
from trgc.grammar.toolcall.freetext import free_text
from trgc.grammar.toolcall.tools import Tool, tools_digest
from trgc.limits import Limits

TOOLCALL_FORMAT = "trgc-toolcall-1"
ANY_OBJECT: dict = {"type": "object"}  # with open objects: any JSON object
START_RULE = "start"
CALL_RULE = "call"


def _lower_tool(
    tool: Tool,
    *,
    separators: str,
    open_objects: bool,
    max_depth: int,
    limits: Limits,
    unconstrained: bool = False,
) -> Grammar:
    if unconstrained:
        return lower_schema(
            ANY_OBJECT,
            separators=separators,
            open_objects=True,
            max_depth=max_depth,
            limits=limits,
        )
    try:
        return lower_schema(
            tool.parameters,
            whitespace=separators,
            open_objects=open_objects,
            max_depth=max_depth,
            limits=limits,
        )
    except TrgcError as error:
        error.pointer = tool.pointer + (error.pointer or "")
        error.details.setdefault("tool", tool.name)
        if error.code == "E_UNSUPPORTED_KEYWORD":
            fallback = (
                f"or leave this tool's arguments unconstrained (any JSON object) with "
                f"--unconstrained-arguments {tool.name}"
            )
            error.hint = f"{error.hint}; {fallback}" if error.hint else fallback
        raise


def _merge(target: Grammar, sub: Grammar, tool: Tool, have_any: bool) -> str:
    """Copy `sub`'s nodes and rules into `target` under `<tool>.` (rule pointers then point into
    the tool list); return its root rule name."""
    prefix = tool.name

    def rename(name: str) -> str:
        return name if name == ANY_RULE else f"{prefix}.{name}"

    offset = len(target.nodes)
    for node in sub.nodes:
        payload = rename(node.payload) if node.kind == Kind.REF else node.payload
        target.add(
            node.kind,
            node.line,
            node.column,
            tuple(c + offset for c in node.children),
            payload,
        )
    for rule in sub.rules:
        if rule.name == ANY_RULE and have_any:
            continue
        target.rules.append(
            Rule(
                rename(rule.name),
                rule.body + offset,
                rule.line,
                rule.column,
                None if rule.pointer is None else tool.pointer + rule.pointer,
            )
        )
    return rename(sub.start or "root")


def _pieces(b: Builder, pieces: tuple[Piece, ...]) -> int:
    nodes = [
        b.grammar.add(Kind.SPECIAL, 0, 0, payload=v) if k == "special" else b.lit(v)
        for k, v in pieces
    ]
    return b.seq(*nodes) if nodes else b.empty()


def build_toolcall_grammar(
    tools: tuple[Tool, ...],
    fam: Family,
    *,
    separators: str | None = None,
    open_objects: bool = False,
    max_depth: int = DEFAULT_MAX_DEPTH,
    limits: Limits,
    unconstrained_arguments: tuple[str, ...] = (),
) -> Grammar:
    """The grammar of one assistant turn of `fam` calling `tools` (see the module docstring)."""
    names = {tool.name for tool in tools}
    unknown = sorted(set(unconstrained_arguments) - names)
    if unknown:
        raise TrgcError(
            "E_TOOLCALL_UNCONSTRAINED",
            f"unconstrained arguments named for {unknown[0]!r}, which is not in the tool list",
            hint="tools: " + ", ".join(tool.name for tool in tools),
        )
    free = sorted(set(unconstrained_arguments))
    seps = separators or fam.separators
    grammar = Grammar(source_kind="trj", start=START_RULE, max_depth=max_depth)
    b = Builder(grammar)
    roots: list[str] = []
    have_any = False
    for tool in tools:
        sub = _lower_tool(
            tool,
            separators=seps,
            open_objects=open_objects,
            max_depth=max_depth,
            limits=limits,
            unconstrained=tool.name in free,
        )
        roots.append(_merge(grammar, sub, tool, have_any))
        have_any = have_any or any(r.name == ANY_RULE for r in sub.rules)

    branches = [
        b.seq(b.lit(tool.name + fam.name_close), b.ref(root))
        for tool, root in zip(tools, roots, strict=True)
    ]
    call_body = b.seq(_pieces(b, fam.call_open), b.alt(*branches), _pieces(b, fam.call_close))
    grammar.rules.append(Rule(CALL_RULE, call_body, 0, 0))

    calls = b.ref(CALL_RULE)
    if fam.multiple:
        calls = b.seq(calls, b.rep(b.seq(_pieces(b, fam.between), b.ref(CALL_RULE)), 0, None))
    region = b.seq(_pieces(b, fam.opening), calls, _pieces(b, fam.closing))
    if fam.bare_call:
        text = free_text(b, fam.open_marker, not_first="{")
        start = b.alt(b.ref(CALL_RULE), b.seq(text, b.opt(region)))
    else:
        start = b.seq(free_text(b, fam.open_marker), b.opt(region))
    grammar.rules.insert(0, Rule(START_RULE, start, 0, 0))

    grammar.source_sha256 = tools_digest(tools)
    grammar.options = {
        "format": TOOLCALL_FORMAT,
        "family": fam.name,
        "markers": list(fam.markers),
        "open_marker": fam.open_marker,
        "max_depth": max_depth,
        "open_objects": open_objects,
        "profile": "trj-1",
        "separators": seps,
        "tools": [tool.name for tool in tools],
    }
    if free:  # only then: the artifacts of fully constrained tool lists keep their identity
        grammar.options["unconstrained_arguments"] = free
    return grammar
