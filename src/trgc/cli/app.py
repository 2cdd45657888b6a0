"""The `trgc` command: a typer application assembled from one module per command group.

Command modules import library code inside their functions so that `trgc --help` starts fast
and never loads numba. The root group (`LazyGroup`) goes further: it lists the commands from
the table `COMMANDS` and imports a command's module, and lets typer build its options, only
when that command runs or its own help is asked for, so `trgc --help` and `trgc compile` do
not pay for the other forty commands. `tests/test_cli_lazy.py` checks the table, the order
and every help page against the eagerly built application.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from importlib import import_module
from typing import Any

import typer
import typer.main
from typer._click import Context, HelpFormatter
from typer._click.utils import make_default_short_help

from trgc import __version__
from trgc.cli.coercion import PlainContext, install
from trgc.cli.funnel import TrgcGroup

HELP = (
    "Grammar-constrained decoding toolchain: compile grammars and JSON Schemas into "
    "canonical SHA-256-identified artifacts, build verified token-byte tables, precompute "
    "token masks, replay decoding traces bit for bit."
)
SETTINGS: dict[str, Any] = {
    "rich_markup_mode": None,
    "pretty_exceptions_enable": False,
    "context_settings": {"help_option_names": ["-h", "--help"]},
}

# Each module defines `register(app)`; order here is the order in which typer would list
# their commands (plain commands first, then groups).
COMMAND_MODULES: tuple[str, ...] = (
    "trgc.cli.tokenizer_cmds",
    "trgc.cli.compile_cmds",
    "trgc.cli.schema_cmds",
    "trgc.cli.tools_cmds",
    "trgc.cli.release_cmds",
    "trgc.cli.masks_cmds",
    "trgc.cli.cache_cmds",
    "trgc.cli.decode_cmds",
    "trgc.cli.audit_cmds",
    "trgc.cli.toolcall_cmds",
    "trgc.cli.quality_cmds",
    "trgc.cli.man_cmds",
)

# Every top-level command in `trgc --help` order: (name, module under trgc.cli that registers
# it, the start of its help's first paragraph, enough for any width click formats at).
COMMANDS: tuple[tuple[str, str, str], ...] = (
    (
        "compile",
        "compile_cmds",
        "Compile a grammar or JSON Schema into a canonical artifact and print its identity.",
    ),
    (
        "inspect",
        "compile_cmds",
        "Show an artifact's identity, sizes, states, machines, byte classes, specials, limits, source hash and ...",
    ),
    (
        "diff",
        "compile_cmds",
        "Compare two artifacts: metadata, machines, state counts, byte classes, specials, and their languages ...",
    ),
    (
        "check",
        "compile_cmds",
        "Check whether a file's exact bytes belong to the artifact's language.",
    ),
    (
        "keywords",
        "schema_cmds",
        "Print the trj-1 keyword matrix: every JSON Schema keyword trgc knows, its status (supported, normalised, ...",
    ),
    (
        "coverage",
        "schema_cmds",
        "Compile every schema of JSONSchemaBench and check the upstream instances (MaskBench style).",
    ),
    (
        "calc",
        "tools_cmds",
        "Evaluate a tinycalc-1 expression: decimal fixed point at scale 18 in checked signed 128-bit integers, ...",
    ),
    (
        "lock",
        "release_cmds",
        "Compile every source, write its artifact and pin name -> source hash, artifact hash, compiler and limits ...",
    ),
    (
        "verify",
        "release_cmds",
        "Recompile every locked source and compare hashes with the lock and the committed artifacts.",
    ),
    (
        "generate",
        "decode_cmds",
        "Generate under a compiled constraint with the normative sampler, streaming only complete UTF-8 scalars ...",
    ),
    (
        "replay",
        "decode_cmds",
        "Recompute every mask and every draw of a trace from artifact, tokenizer, logits sidecar and the recorded ...",
    ),
    (
        "audit",
        "audit_cmds",
        "Recompute the mask of every step of an audit record with a fresh matcher and check that each emitted ...",
    ),
    (
        "toolcall",
        "toolcall_cmds",
        "Compile a tool list into a tool-call constraint for one model family.",
    ),
    (
        "quality",
        "quality_cmds",
        "Run the quality experiment: every task under the unconstrained, grammar-constrained and tool (tinycalc) ...",
    ),
    (
        "man",
        "man_cmds",
        "Show the man page of trgc or one of its commands, also where man(1) does not find the installed pages: ...",
    ),
    (
        "tokenizer",
        "tokenizer_cmds",
        "Token-byte tables: build one from a tokenizer, inspect it, verify it against an independent implementation.",
    ),
    (
        "conformance",
        "schema_cmds",
        "Measure trj-1 against upstream test suites, with a committed classification as a ratchet.",
    ),
    (
        "tool",
        "tools_cmds",
        "Run deterministic local tools through validated tinyrust-tool-1 envelopes.",
    ),
    ("evidence", "tools_cmds", "Validate extraction results against their source evidence."),
    (
        "masks",
        "masks_cmds",
        "Token-mask caches: precompute per-state masks for an artifact and a tokenizer.",
    ),
    (
        "cache",
        "cache_cmds",
        "The persistent mask cache shared by trgc processes: show it, shrink it, empty it.",
    ),
    ("trace", "decode_cmds", "Decoding traces: aggregate statistics that never contain text."),
)


class LazyGroup(TrgcGroup):
    """The root group: commands are looked up in `COMMANDS` and built on first use.

    `commands` (click's mapping) builds them all, for whatever walks the whole tree (man
    pages, shell completion, suggestions for a mistyped command)."""

    context_class = PlainContext

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._built: dict[str, Any] = {}
        self._loaded: set[str] = set()
        super().__init__(*args, **kwargs)

    @property  # type: ignore[override]
    def commands(self) -> MutableMapping[str, Any]:
        for _, module, _ in COMMANDS:
            self._load(module)
        return {name: self._built[name] for name, _, _ in COMMANDS}

    @commands.setter
    def commands(self, value: MutableMapping[str, Any]) -> None:
        self._built.update(value)

    def _load(self, module: str) -> None:
        if module in self._loaded:
            return
        self._loaded.add(module)
        holder = typer.Typer(**SETTINGS)
        import_module(f"trgc.cli.{module}").register(holder)
        built = typer.main.get_group(holder).commands
        for command in built.values():
            install(command)
        self._built.update(built)

    def list_commands(self, ctx: Context) -> list[str]:
        return [name for name, _, _ in COMMANDS]

    def get_command(self, ctx: Context, cmd_name: str) -> Any:
        for name, module, _ in COMMANDS:
            if name == cmd_name:
                self._load(module)
                break
        return self._built.get(cmd_name)

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        """The command list, as click writes it, from `COMMANDS` (no module imported)."""
        limit = formatter.width - 6 - max(len(name) for name, _, _ in COMMANDS)
        rows = [(name, make_default_short_help(text, limit)) for name, _, text in COMMANDS]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _root(cls: type) -> typer.Typer:
    return typer.Typer(name="trgc", help=HELP, cls=cls, no_args_is_help=True, **SETTINGS)


app = _root(LazyGroup)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"trgc {__version__}")
        raise typer.Exit(0)


def _debug(value: bool) -> None:
    if value:
        os.environ["TRGC_DEBUG"] = "1"


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    debug: bool = typer.Option(
        False,
        "--debug",
        callback=_debug,
        is_eager=True,
        help="Also print the traceback of an internal error (E_INTERNAL); same as TRGC_DEBUG=1.",
    ),
) -> None:
    """trgc: grammar-constrained decoding toolchain."""


def main() -> None:
    """Console-script entry point."""
    app()
