"""The tool-call envelopes of the supported model families, as data.

Each family names the markers its chat template writes around a call (special-token names,
matched by id through `special("…")`), the literal bytes between them, and whether one turn
may hold several calls. docs/toolcall.md quotes the template fragments these bytes come from.
"""

from __future__ import annotations

from dataclasses import dataclass

from trgc.errors import TrgcError

Piece = tuple[str, str]  # ("special", token name) or ("text", literal text)


def special(name: str) -> Piece:
    return ("special", name)


def text(value: str) -> Piece:
    return ("text", value)


@dataclass(frozen=True)
class Family:
    """One envelope layout: a turn is free text, then (optionally) the calls region

        opening  call  ( between  call )*  closing        (`between` only if `multiple`)
        call = call_open  NAME  name_close  ARGUMENTS  call_close

    `bare_call` says that a call may also stand alone as the whole turn without the
    opening marker (Llama 3.1 writes it so); then free text must not start with `{`.
    """

    name: str
    open_marker: str  # the special token that starts the constrained region
    opening: tuple[Piece, ...]
    call_open: tuple[Piece, ...]
    name_close: str
    call_close: tuple[Piece, ...]
    between: tuple[Piece, ...]
    closing: tuple[Piece, ...]
    multiple: bool
    bare_call: bool
    separators: str  # trj-1 separators the template's JSON serialiser writes
    template: str  # where the bytes come from

    @property
    def markers(self) -> tuple[str, ...]:
        """Every special token the envelope names, the open marker first."""
        found = [self.open_marker]
        for piece in (*self.opening, *self.call_open, *self.call_close, *self.closing):
            if piece[0] == "special" and piece[1] not in found:
                found.append(piece[1])
        return tuple(found)

    def call_prefix(self, tool_name: str, *, first: bool = True) -> tuple[Piece, ...]:
        """The pieces from the start of the region (or of a later call) up to the arguments."""
        lead = self.opening if first else self.between
        return (
            *lead,
            *self.call_open[:-1],
            text(self.call_open[-1][1] + tool_name + self.name_close),
        )


QWEN = Family(
    name="qwen",
    open_marker="<tool_call>",
    opening=(),
    call_open=(special("<tool_call>"), text('\n{"name": "')),
    name_close='", "arguments": ',
    call_close=(text("}\n"), special("</tool_call>")),
    between=(text("\n"),),
    closing=(),
    multiple=True,
    bare_call=False,
    separators="pretty",
    template="qwen3/tokenizer_config.json chat_template, assistant tool_calls branch",
)

LLAMA3 = Family(
    name="llama3",
    open_marker="<|python_tag|>",
    opening=(special("<|python_tag|>"),),
    call_open=(text('{"name": "'),),
    name_close='", "parameters": ',
    call_close=(text("}"),),
    between=(),
    closing=(),
    multiple=False,
    bare_call=True,
    separators="pretty",
    template="Llama 3.1 Instruct chat_template, JSON tool calling (tool_calls branch)",
)

DEEPSEEK = Family(
    name="deepseek",
    open_marker="<｜tool▁calls▁begin｜>",
    opening=(special("<｜tool▁calls▁begin｜>"),),
    call_open=(
        special("<｜tool▁call▁begin｜>"),
        text("function"),
        special("<｜tool▁sep｜>"),
        text(""),
    ),
    name_close="\n```json\n",
    call_close=(text("\n```"), special("<｜tool▁call▁end｜>")),
    between=(text("\n"),),
    closing=(special("<｜tool▁calls▁end｜>"),),
    multiple=True,
    bare_call=False,
    separators="pretty",
    template="deepseek-v3/tokenizer_config.json chat_template, assistant tool_calls branch",
)

FAMILIES: dict[str, Family] = {f.name: f for f in (QWEN, LLAMA3, DEEPSEEK)}


def family(name: str) -> Family:
    """The family called `name`, or `E_TOOLCALL_FAMILY`."""
    found = FAMILIES.get(name)
    if found is None:
        raise TrgcError(
            "E_TOOLCALL_FAMILY",
            f"unknown tool-call family {name!r}",
            hint="known families: " + ", ".join(sorted(FAMILIES)),
        )
    return found
