"""What the root `trgc --help` lists, as plain data: the help text, the commands and the root
options. Kept apart from typer so that `trgc --help` can be written without importing it
(`trgc.cli.quickhelp`); `trgc.cli.root` builds the typer application from the same tables and
`tests/test_cli_lazy.py` checks both against the application built eagerly."""

from __future__ import annotations

from typing import Any

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

# The root options in `trgc --help` order: (flags, help). `--version` and `--debug` are
# declared in `trgc.cli.root`, the completion options and `--help` by typer and click.
ROOT_OPTIONS: tuple[tuple[str, str], ...] = (
    ("--version", "Print the version and exit."),
    (
        "--debug",
        "Also print the traceback of an internal error (E_INTERNAL); same as TRGC_DEBUG=1.",
    ),
    ("--install-completion", "Install completion for the current shell."),
    (
        "--show-completion",
        "Show completion for the current shell, to copy it or customize the installation.",
    ),
    ("-h, --help", "Show this message and exit."),
)
