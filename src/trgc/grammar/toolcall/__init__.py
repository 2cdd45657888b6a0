"""Tool-call envelopes: an OpenAI-format tool list and a model family lowered to one grammar.

`parse_tools` reads the tool list, `FAMILIES` describes each family's envelope (derived from
its chat template, docs/toolcall.md), `build_toolcall_grammar` builds the `Grammar` whose
argument sub-grammars come from the trj-1 lowering.
"""

from __future__ import annotations

from trgc.grammar.toolcall.envelope import TOOLCALL_FORMAT, build_toolcall_grammar
from trgc.grammar.toolcall.families import FAMILIES, Family, family
from trgc.grammar.toolcall.tools import Tool, load_tool_json, parse_tools

__all__ = [
    "FAMILIES",
    "Family",
    "TOOLCALL_FORMAT",
    "Tool",
    "build_toolcall_grammar",
    "family",
    "load_tool_json",
    "parse_tools",
]
