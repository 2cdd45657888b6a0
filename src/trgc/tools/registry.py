"""The tool registry compiled into trgc: a closed enum of tools and their fixed definitions.

This is the control plane. A request's tool name is only ever *compared* with the names
below; it is never resolved to a function, module, path, URL or endpoint (no getattr, no
importlib, no lookup by string into a namespace). `REGISTRY` maps each `ToolId` member to
its definition, including the implementation function it was written with.

Every tool is read-only and deterministic, and runs under the `automatic_read_only`
authorization class. Schema hashes are the SHA-256 of the canonical JSON of each schema; the
`implementation_hash` is that of the source files listed in `modules` (`trgc.tools.identity`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType

from trgc.tools import calculator, identity, strictjson, text
from trgc.tools.outcome import Checkpoint, Outcome
from trgc.tools.tinycalc import IMPLEMENTATION as TINYCALC_IMPLEMENTATION

TEXT_IMPLEMENTATION = "trgc-text-1.0.0"
# Deterministic "timeout": timeout_ms buys this many operations per millisecond.
OPERATIONS_PER_MS = 100


class ToolId(enum.Enum):
    CALCULATOR_EVALUATE = "calculator.evaluate@1.0.0"
    TEXT_LENGTH = "text.length@1.0.0"
    TEXT_TRIM = "text.trim@1.0.0"


@dataclass(frozen=True)
class Ceilings:
    """The largest limits a request may ask for, and the smallest output budget."""

    input_bytes: int
    output_bytes: int
    operations: int
    timeout_ms: int
    min_output_bytes: int = 64


@dataclass(frozen=True)
class ToolDefinition:
    tool: ToolId
    name: str
    version: str
    capability: str
    authority: str
    input_schema: dict
    output_schema: dict
    ceilings: Ceilings
    implementation: str
    modules: tuple[str, ...]  # the tools-layer source files that define the implementation
    run: Callable[[dict, int, Checkpoint], Outcome]

    @property
    def implementation_hash(self) -> str:
        return identity.registered_hash(self.implementation, self.modules)

    @property
    def input_sha256(self) -> str:
        return strictjson.sha256_hex(strictjson.canonical_bytes(self.input_schema))

    @property
    def output_sha256(self) -> str:
        return strictjson.sha256_hex(strictjson.canonical_bytes(self.output_schema))

    def describe(self) -> dict:
        """The public description of the tool (for docs and `--json` listings)."""
        return {
            "tool": self.tool.value,
            "capability": self.capability,
            "authority": self.authority,
            "implementation": self.implementation,
            "implementation_hash": self.implementation_hash,
            "input_sha256": self.input_sha256,
            "output_sha256": self.output_sha256,
            "input_schema": self.input_schema,
            "output_schema": self.output_schema,
            "ceilings": {
                "input_bytes": self.ceilings.input_bytes,
                "output_bytes": self.ceilings.output_bytes,
                "operations": self.ceilings.operations,
                "timeout_ms": self.ceilings.timeout_ms,
            },
        }


def _closed_object(properties: dict) -> dict:
    return {
        "type": "object",
        "properties": properties,
        "required": sorted(properties),
        "additionalProperties": False,
    }


ERROR_CONTENT_SCHEMA = _closed_object(
    {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "offset": {"type": "integer", "minimum": 0},
            },
            "required": ["code", "message"],
            "additionalProperties": False,
        }
    }
)


def _output(ok_schema: dict) -> dict:
    return {"oneOf": [ok_schema, ERROR_CONTENT_SCHEMA]}


_TEXT_INPUT = _closed_object({"text": {"type": "string", "maxLength": 65_536}})
_TEXT_CEILINGS = Ceilings(
    input_bytes=1 << 19, output_bytes=1 << 19, operations=1 << 19, timeout_ms=10_000
)

REGISTRY = MappingProxyType(
    {
        ToolId.CALCULATOR_EVALUATE: ToolDefinition(
            tool=ToolId.CALCULATOR_EVALUATE,
            name="calculator.evaluate",
            version="1.0.0",
            capability="deterministic.compute",
            authority="automatic_read_only",
            input_schema=_closed_object({"expression": {"type": "string", "maxLength": 4096}}),
            output_schema=_output(
                _closed_object({"value": {"type": "string"}, "exact": {"type": "boolean"}})
            ),
            ceilings=Ceilings(
                input_bytes=32_768, output_bytes=65_536, operations=10_000, timeout_ms=1_000
            ),
            implementation=TINYCALC_IMPLEMENTATION,
            modules=("calculator.py", "outcome.py", "tinycalc.py", "decimal128.py"),
            run=calculator.calculator_evaluate,
        ),
        ToolId.TEXT_LENGTH: ToolDefinition(
            tool=ToolId.TEXT_LENGTH,
            name="text.length",
            version="1.0.0",
            capability="deterministic.transform",
            authority="automatic_read_only",
            input_schema=_TEXT_INPUT,
            output_schema=_output(
                _closed_object(
                    {
                        "utf8_bytes": {"type": "integer", "minimum": 0},
                        "scalars": {"type": "integer", "minimum": 0},
                    }
                )
            ),
            ceilings=_TEXT_CEILINGS,
            implementation=TEXT_IMPLEMENTATION,
            modules=("text.py", "outcome.py"),
            run=text.text_length,
        ),
        ToolId.TEXT_TRIM: ToolDefinition(
            tool=ToolId.TEXT_TRIM,
            name="text.trim",
            version="1.0.0",
            capability="deterministic.transform",
            authority="automatic_read_only",
            input_schema=_TEXT_INPUT,
            output_schema=_output(_closed_object({"text": {"type": "string"}})),
            ceilings=_TEXT_CEILINGS,
            implementation=TEXT_IMPLEMENTATION,
            modules=("text.py", "outcome.py"),
            run=text.text_trim,
        ),
    }
)


def lookup(name: str, version: str) -> ToolDefinition | None:
    """The definition whose name and version equal the given strings exactly, or None."""
    for definition in REGISTRY.values():
        if definition.name == name and definition.version == version:
            return definition
    return None


def tool_identities() -> list[dict]:
    """Every registered tool's identity, in registry order, as traces record it."""
    return [
        {
            "tool": d.tool.value,
            "implementation": d.implementation,
            "implementation_hash": d.implementation_hash,
        }
        for d in REGISTRY.values()
    ]
