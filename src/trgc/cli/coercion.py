"""Option and argument values converted without pydantic, so a command starts fast.

typer 0.29 converts every parameter value through a pydantic `TypeAdapter`, built on first
use; importing pydantic and building the adapters costs a `trgc compile` about a third of its
start-up. trgc's parameters are all plain `str`, `int`, `float`, `bool` and `Path` values or
lists of them, and the common, valid value of each is converted here the way typer's adapter
would (same value, same type). Anything else (a value that does not look like the plain form,
a number outside its `min`/`max`, an annotation not listed here) is handed to typer's own
conversion, so every error message, and every unusual but accepted form (`" 7"`, `"1_000"`,
`"yes"` for an int or bool), stays exactly typer's. `tests/test_cli_coercion.py` compares the
two on every parameter of every command.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

from typer._click import Context
from typer._coercion import RuntimeParam, build_runtime_param
from typer._param_types import coerce_cli_path
from typer.core import _TyperParameter

_INT = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")
_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]{0,14})(?:\.[0-9]{1,15})?")


class Fallback(Exception):
    """The value is not in the plain form: typer's own conversion decides (and words errors)."""


Leaf = Callable[[Any, _TyperParameter, Context], Any]


def _str(value: Any, param: _TyperParameter, ctx: Context) -> Any:
    if type(value) is not str:
        raise Fallback
    return value


def _bool(value: Any, param: _TyperParameter, ctx: Context) -> Any:
    if type(value) is not bool:
        raise Fallback
    return value


def _in_range(number: Any, param: _TyperParameter) -> Any:
    info = param.type_descriptor.parameter_info
    if (info.min is not None and number < info.min) or (info.max is not None and number > info.max):
        raise Fallback
    return number


def _number(kind: type, spelling: re.Pattern) -> Leaf:
    """The leaf for `kind` (int or float): a value of exactly that type, or a string spelled
    as `spelling` accepts, within the parameter's range; anything else falls back to typer."""

    def convert(value: Any, param: _TyperParameter, ctx: Context) -> Any:
        if type(value) is kind:
            return _in_range(value, param)
        if type(value) is str and spelling.fullmatch(value):
            return _in_range(kind(value), param)
        raise Fallback

    return convert


def _path(value: Any, param: _TyperParameter, ctx: Context) -> Any:
    if type(value) is str and value and "\0" not in value:
        value = Path(value)
    elif not isinstance(value, Path):
        raise Fallback
    info = param.type_descriptor.parameter_info
    return coerce_cli_path(value, info, path_type=Path, param=param, ctx=ctx)


_LEAVES: dict[Any, Leaf] = {
    bool: _bool,
    str: _str,
    int: _number(int, _INT),
    float: _number(float, _FLOAT),
    Path: _path,
}


def _leaf_for(param: _TyperParameter) -> tuple[Leaf, bool] | None:
    """The converter of a parameter's (element) type and whether it is a list; None: typer's."""
    descriptor = param.type_descriptor
    info = descriptor.parameter_info
    if descriptor.file_annotation is not None or info.parser is not None or info.clamp:
        return None
    annotation = descriptor.annotation
    is_list = get_origin(annotation) is list
    if is_list:
        (annotation,) = get_args(annotation)
    if annotation is Path and (info.path_type not in (None, Path) or info.resolve_path):
        return None
    leaf = _LEAVES.get(annotation)
    return None if leaf is None else (leaf, is_list)


@dataclass(frozen=True)
class PlainRuntimeParam(RuntimeParam):
    """A parameter's conversion: the plain form here, anything else through typer's adapter."""

    leaf: Leaf
    is_list: bool

    def _coerce_value(self, value: Any, param: _TyperParameter, ctx: Context) -> Any:
        try:
            if not self.is_list:
                return self.leaf(value, param, ctx)
            items = value if isinstance(value, (list, tuple)) else [value]
            return [self.leaf(item, param, ctx) for item in items]
        except Fallback:
            stock = build_runtime_param(param.type_descriptor)
            return stock._coerce_value(value, param=param, ctx=ctx)


def _install_params(command: Any, ctx: Context) -> None:
    for param in command.get_params(ctx):
        if not isinstance(param, _TyperParameter) or param._runtime_param is not None:
            continue
        found = _leaf_for(param)
        if found is not None:
            descriptor = param.type_descriptor
            param._runtime_param = PlainRuntimeParam(
                parameter_info=descriptor.parameter_info,
                annotation=descriptor.annotation,
                leaf=found[0],
                is_list=found[1],
            )


class PlainContext(Context):
    """click's context, which first gives its command's parameters the conversion above.

    Done when the context is made because only then are all of them known: typer appends
    the completion options after building a group, and click makes `--help` per context."""

    def __init__(self, command: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(command, *args, **kwargs)
        _install_params(command, self)


def install(command: Any) -> None:
    """Make `command` and every subcommand under it convert through `PlainContext`."""
    command.context_class = PlainContext
    for sub in (getattr(command, "commands", None) or {}).values():
        install(sub)
