"""Options and identities are spelled the same way by every command: `-t/--tokenizer`,
`-o/--output` for the file a command writes, and trgc's own hashes as `sha256:<hex>`."""

from __future__ import annotations

import json
import re

import typer
from typer.testing import CliRunner

from test_cli_json import successes, work  # noqa: F401  (work is the fixture successes needs)
from trgc.cli.app import app

# Documents whose fields follow a protocol record of the report (tinycalc-1, tinyrust-tool-1),
# which spells its hashes as bare lowercase hex; every other document uses sha256:<hex>.
PROTOCOL_DOCUMENTS = {"calc", "tool list", "tool run", "tool template"}
# Recorded inside a token table's metadata (part of its identity), shown as stored.
STORED_AS_RECORDED = re.compile(r"^/metadata/source_files/")
BARE_HEX = re.compile(r"[0-9a-f]{64}")


def _commands(group, prefix: tuple[str, ...] = ()):
    """(name, command) of every leaf command (typer's command classes, found by their shape)."""
    for name, command in sorted(group.commands.items()):
        if hasattr(command, "commands"):
            yield from _commands(command, (*prefix, name))
        else:
            yield " ".join((*prefix, name)), command


def _options(command) -> list[list[str]]:
    return [p.opts for p in command.params if p.param_type_name == "option"]


def test_tokenizer_and_output_options_are_spelled_alike():
    root = typer.main.get_command(app)
    seen_tokenizer = seen_output = 0
    for name, command in _commands(root):
        for opts in _options(command):
            if "--tokenizer" in opts:
                seen_tokenizer += 1
                assert "-t" in opts, name
            if "-o" in opts:
                seen_output += 1
                assert "--output" in opts, name
            assert "--out" not in opts, name
    assert seen_tokenizer >= 4 and seen_output >= 5


def _bare_hashes(value: object, path: str = ""):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _bare_hashes(item, f"{path}/{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _bare_hashes(item, f"{path}/{index}")
    elif (
        isinstance(value, str) and BARE_HEX.fullmatch(value) and not STORED_AS_RECORDED.match(path)
    ):
        yield path


def test_trgc_identities_are_sha256_prefixed_in_every_json_document(work):  # noqa: F811
    runner = CliRunner()
    for name, (args, _) in sorted(successes(work).items()):
        if name in PROTOCOL_DOCUMENTS:
            continue
        result = runner.invoke(app, [*args, "--json"])
        document = json.loads(result.stdout)
        assert list(_bare_hashes(document)) == [], name
