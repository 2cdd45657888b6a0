"""The command-line contract under failure (issue 17, items 5 and 7; issue 18, item 11): click's
usage errors go through the same funnel as every other error, an internal error is one JSON
document under --json (its traceback only with --debug), a closed or broken stdout ends quietly
with exit 141, a closed stdin is E_IO, a full disk during generate is E_IO with nothing left.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trgc.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()
TRGC = [sys.executable, "-c", "from trgc.cli.app import main; main()"]


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("contract")
    shutil.copy(ROOT / "grammars" / "json.trg", tmp / "json.trg")
    assert (
        runner.invoke(app, ["compile", str(tmp / "json.trg"), "-o", str(tmp / "j.trga")]).exit_code
        == 0
    )
    shutil.copy(ROOT / "tokenizers" / "gpt2.trt", tmp / "gpt2.trt")
    return tmp


USAGE_ERRORS = [
    ["generate"],  # missing argument
    ["generate", "x.trga", "--max-tokens", "abc"],  # not an integer
    ["generate", "x.trga", "--max-tokens", "0"],  # below its minimum
    ["inspect", "x.trga", "--no-such-option"],
    ["no-such-command"],
    ["tokenizer", "no-such-subcommand"],
    ["replay"],
]


@pytest.mark.parametrize("args", USAGE_ERRORS)
def test_usage_errors_are_one_json_document(args):
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 2
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    error = json.loads(line)["error"]
    assert error["code"] == "E_USAGE" and error["message"] and "--help" in error["hint"]


@pytest.mark.parametrize("args", USAGE_ERRORS)
def test_usage_errors_without_json_use_the_same_diagnostic(args):
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert result.stderr.startswith("error E_USAGE")
    assert "Traceback" not in result.stderr


def test_help_and_version_still_work():
    assert runner.invoke(app, ["--help"]).exit_code == 0
    assert runner.invoke(app, ["generate", "--help"]).exit_code == 0
    assert runner.invoke(app, ["--version"]).stdout.startswith("trgc ")
    assert "Usage" in runner.invoke(app, []).output


def _break_inspect(monkeypatch):
    import trgc.artifact.inspect as inspect_module

    def broken(*args, **kwargs):
        raise RuntimeError("planted bug")

    monkeypatch.setattr(inspect_module, "summary", broken)


def test_internal_error_is_one_json_document_without_traceback(work, monkeypatch):
    _break_inspect(monkeypatch)
    result = runner.invoke(app, ["inspect", str(work / "j.trga"), "--json"])
    assert result.exit_code == 70 and result.stdout == ""
    [line] = result.stderr.splitlines()
    error = json.loads(line)["error"]
    assert error["code"] == "E_INTERNAL" and "planted bug" in error["message"]
    assert "--debug" in error["hint"]
    plain = runner.invoke(app, ["inspect", str(work / "j.trga")])
    assert plain.exit_code == 70 and "Traceback" not in plain.stderr
    assert plain.stderr.startswith("error E_INTERNAL")


@pytest.mark.parametrize("switch", ["option", "environment"])
def test_debug_switch_shows_the_traceback(work, monkeypatch, switch):
    _break_inspect(monkeypatch)
    monkeypatch.delenv("TRGC_DEBUG", raising=False)
    args = ["inspect", str(work / "j.trga"), "--json"]
    if switch == "option":
        result = runner.invoke(app, ["--debug", *args])
    else:
        result = runner.invoke(app, args, env={"TRGC_DEBUG": "1"})
    os.environ.pop("TRGC_DEBUG", None)
    assert result.exit_code == 70
    assert "Traceback" in result.stderr and "RuntimeError: planted bug" in result.stderr
    assert json.loads(result.stderr.splitlines()[-1])["error"]["code"] == "E_INTERNAL"


def _shell(command: str, cwd: Path) -> subprocess.CompletedProcess:
    trgc = " ".join(f"'{part}'" for part in TRGC)
    return subprocess.run(
        ["bash", "-c", command.replace("trgc", trgc, 1)],
        cwd=cwd,
        capture_output=True,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [
        "inspect j.trga",
        "inspect j.trga --json",
        "tokenizer inspect gpt2.trt",
        "calc '1 / 3'",
        "generate j.trga -t gpt2.trt --max-tokens 64",
    ],
)
def test_closed_stdout_ends_quietly_with_141(work, args):
    result = _shell(f"trgc {args} >&-; echo $? >&2", work)
    status = int(result.stderr.decode().split()[-1])
    assert status == 141, result.stderr.decode()
    assert result.stderr.decode().strip() == "141"  # nothing else on stderr


def test_broken_pipe_ends_quietly_with_141(work):
    # the reader takes one byte and leaves; the writer must notice without a traceback
    result = _shell(
        "trgc tokenizer inspect gpt2.trt --token 1 | head -c1 >/dev/null; "
        "echo ${PIPESTATUS[0]} >&2",
        work,
    )
    assert result.stderr.decode().split()[-1] in ("141", "0")  # 0: all fit in the pipe first
    assert b"Traceback" not in result.stderr and b"Exception" not in result.stderr
    # EOS banned: the default stand-in ends json.trg after 6 steps, whose bytes could all be
    # written before the reader leaves (exit 0, a race lost more often as masks got faster);
    # 2,000 streamed steps always meet the closed pipe
    result = _shell(
        "trgc generate j.trga -t gpt2.trt --max-tokens 2000 --ban 50256 --trace t.jsonl"
        " | head -c1 >/dev/null; echo ${PIPESTATUS[0]} >&2",
        work,
    )
    assert result.stderr.decode().split()[-1] == "141", result.stderr.decode()
    assert not (work / "t.jsonl").exists() and not (work / "t.jsonl.logits.zst").exists()
    assert not [p for p in work.iterdir() if p.name.startswith(".t.jsonl")]


@pytest.mark.parametrize("args", ["compile -", "check j.trga -", "calc -", "tool run -"])
def test_closed_stdin_is_an_io_error(work, args):
    result = _shell(f"trgc {args} --json <&-", work)
    assert result.returncode == 2, result.stderr.decode()
    assert json.loads(result.stderr)["error"]["code"] == "E_IO"


@pytest.mark.parametrize("where", ["write", "fsync"])
def test_full_disk_during_generate_is_an_io_error_and_leaves_nothing(
    work, tmp_path, monkeypatch, where
):
    import trgc.decode.sidecar as sidecar

    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    if where == "fsync":
        monkeypatch.setattr(sidecar.os, "fsync", no_space)
    else:
        real_open = open

        class Full:
            def __init__(self, path, mode):
                self.handle = real_open(path, mode)

            def write(self, data):
                no_space()

            def __getattr__(self, name):
                return getattr(self.handle, name)

        monkeypatch.setattr(sidecar, "open", Full, raising=False)
    trace = tmp_path / "run.jsonl"
    result = runner.invoke(
        app,
        [
            "generate",
            str(work / "j.trga"),
            "-t",
            str(work / "gpt2.trt"),
            "--max-tokens",
            "64",
            "--trace",
            str(trace),
            "--json",
        ],
    )
    assert result.exit_code == 2, result.stderr
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "E_IO" and "No space left" in error["message"]
    assert list(tmp_path.iterdir()) == []
