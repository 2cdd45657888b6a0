"""Reading a tool list in the OpenAI function format into `Tool` records.

Two entry shapes are accepted, as chat APIs and chat templates see them:
`{"type": "function", "function": {"name", "description", "parameters", "strict"}}` and the
bare `{"name", "description", "parameters", "strict"}`. Every other field is an error (nothing
unknown is ignored); `parameters` defaults to the empty object schema, as in the OpenAI API.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from trgc.errors import TrgcError
from trgc.grammar.schema.parse import canonical_json, value_nesting
from trgc.jsonread import read_json
from trgc.limits import Limits

NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
FUNCTION_FIELDS = frozenset({"name", "description", "parameters", "strict"})
WRAPPER_FIELDS = frozenset({"type", "function"})
EMPTY_PARAMETERS: dict = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class Tool:
    """One declared function: its name, argument schema and where it sits in the input."""

    name: str
    parameters: object  # a JSON Schema (trj-1) for the arguments object
    pointer: str  # JSON pointer of the `parameters` member (or of the entry when absent)
    description: str | None = None


def load_tool_json(data: str | bytes, limits: Limits) -> object:
    """Parse tool-list text strictly (`trgc.jsonread`): size and nesting first, no repeated keys."""
    return read_json(
        data,
        code="E_TOOLCALL_JSON",
        what="the tool list",
        max_bytes=limits.input_bytes,
        max_depth=limits.nesting,
    )


def _field_error(pointer: str, message: str) -> TrgcError:
    return TrgcError(
        "E_TOOLCALL_FIELD",
        message,
        pointer=pointer,
        hint='expected {"type": "function", "function": {"name": ..., "parameters": {...}}}',
    )


def _function_object(entry: object, pointer: str) -> tuple[dict, str]:
    """The function object of one entry and its pointer (wrapped or bare form)."""
    if not isinstance(entry, dict):
        raise _field_error(pointer, f"a tool entry is a JSON object, got {type(entry).__name__}")
    if "function" in entry or "type" in entry:
        unknown = sorted(set(entry) - WRAPPER_FIELDS)
        if unknown:
            raise _field_error(f"{pointer}/{unknown[0]}", f"unknown field {unknown[0]!r}")
        if entry.get("type") != "function":
            raise _field_error(
                f"{pointer}/type", f'type must be "function", got {json.dumps(entry.get("type"))}'
            )
        function = entry.get("function")
        if not isinstance(function, dict):
            raise _field_error(f"{pointer}/function", "function must be a JSON object")
        return function, f"{pointer}/function"
    return entry, pointer


def parse_tools(value: object, limits: Limits) -> tuple[Tool, ...]:
    """Validate a parsed tool list and return its tools in input order."""
    if not isinstance(value, list) or not value:
        raise TrgcError(
            "E_TOOLCALL_NO_TOOLS",
            "a tool list is a non-empty JSON array of tools",
            pointer="",
        )
    value_nesting(value, limits.nesting)
    tools: list[Tool] = []
    seen: dict[str, str] = {}
    for i, entry in enumerate(value):
        function, pointer = _function_object(entry, f"/{i}")
        unknown = sorted(set(function) - FUNCTION_FIELDS)
        if unknown:
            raise _field_error(f"{pointer}/{unknown[0]}", f"unknown field {unknown[0]!r}")
        name = function.get("name")
        if not isinstance(name, str):
            raise _field_error(f"{pointer}/name", "every tool needs a string name")
        if not NAME_PATTERN.fullmatch(name):
            raise TrgcError(
                "E_TOOLCALL_NAME",
                f"tool name {name!r} is not 1-64 characters of A-Z a-z 0-9 _ -",
                pointer=f"{pointer}/name",
            )
        if name in seen:
            raise TrgcError(
                "E_TOOLCALL_DUPLICATE_NAME",
                f"tool name {name!r} is declared twice ({seen[name]} and {pointer})",
                pointer=f"{pointer}/name",
            )
        seen[name] = pointer
        description = function.get("description")
        if description is not None and not isinstance(description, str):
            raise _field_error(f"{pointer}/description", "description must be a string")
        if "strict" in function and not isinstance(function["strict"], bool):
            raise _field_error(f"{pointer}/strict", "strict must be a boolean")
        if "parameters" in function:
            parameters, params_ptr = function["parameters"], f"{pointer}/parameters"
        else:
            parameters, params_ptr = EMPTY_PARAMETERS, pointer
        if not isinstance(parameters, dict) or parameters.get("type") != "object":
            raise TrgcError(
                "E_TOOLCALL_PARAMETERS",
                f'the parameters of tool {name!r} must be an object schema with "type": "object"',
                pointer=params_ptr,
                hint="tool arguments are always a JSON object",
            )
        tools.append(Tool(name, parameters, params_ptr, description))
    return tuple(tools)


def tools_digest(tools: tuple[Tool, ...]) -> str:
    """SHA-256 hex of the canonical JSON of the tools (names and parameters, in order)."""
    document = [{"name": t.name, "parameters": t.parameters} for t in tools]
    return hashlib.sha256(canonical_json(document).encode("utf-8")).hexdigest()
