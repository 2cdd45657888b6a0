"""The run's whole composition in the trace header (model weights, prompt policy, every tool's
implementation, load and bind timings), claim labels, and failure documents that name the
artifact, tokenizer and configuration."""

from __future__ import annotations

import hashlib
import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import trgc
from decode_fakes import FakeConstraint, FakeVocab
from trgc.artifact.codec import save_artifact
from trgc.cli.app import app
from trgc.decode.claims import (
    KIND_GRAMMAR,
    KIND_JSON,
    KIND_TOOLCALL,
    artifact_kind,
    claim,
)
from trgc.decode.generate import Identity, decode
from trgc.decode.logits import NpyLogits, RandomLogits
from trgc.decode.sampler import STOP_REASONS, SamplerSettings
from trgc.decode.session import generate_file, replay_file
from trgc.decode.trace import TIMING_FIELDS, parse_trace, read_trace
from trgc.errors import EXIT_INCOMPLETE, TrgcError
from trgc.tools.registry import tool_identities

ROOT = Path(__file__).resolve().parents[1]
TOKENIZER = ROOT / "tokenizers" / "synthetic" / "json-bytelevel"
runner = CliRunner()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A JSON-grammar artifact, a one-key schema artifact and the synthetic byte-level table."""
    tmp = tmp_path_factory.mktemp("composition")
    save_artifact(
        trgc.compile_grammar((ROOT / "grammars" / "json.trg").read_text()), tmp / "g.trga"
    )
    schema = {"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a"]}
    save_artifact(trgc.compile_schema(schema), tmp / "s.trga")
    trgc.load_tokenizer(TOKENIZER).save(tmp / "t.trt")
    return tmp


def _generate(inputs: Path, trace: Path, **kwargs):
    options = {"logits": "random:1", "settings": SamplerSettings(), "seed": 1, "max_tokens": 40}
    return generate_file(
        inputs / "g.trga", inputs / "t.trt", trace_path=trace, **(options | kwargs)
    )


def test_header_records_tools_and_timings_and_no_model_for_stand_in_logits(inputs, tmp_path):
    trace = tmp_path / "run.jsonl"
    _generate(inputs, trace)
    header = read_trace(trace).header
    assert header["composition"] == {
        "model": None,
        "prompt_policy_sha256": None,
        "tools": tool_identities(),
    }
    assert [t["tool"] for t in header["composition"]["tools"]] == [
        "calculator.evaluate@1.0.0",
        "text.length@1.0.0",
        "text.trim@1.0.0",
    ]
    timings = header["timings"]
    assert sorted(timings) == sorted(TIMING_FIELDS)
    assert timings["model_load_us"] is None
    for name in ("artifact_load_us", "tokenizer_load_us", "bind_us"):
        assert isinstance(timings[name], int) and timings[name] >= 0


def test_timings_are_informative_replay_ignores_them(inputs, tmp_path):
    trace = tmp_path / "run.jsonl"
    _generate(inputs, trace)
    lines = trace.read_text().splitlines()
    header = json.loads(lines[0])
    header["timings"] = {name: 123456789 for name in TIMING_FIELDS}
    lines[0] = json.dumps(header, sort_keys=True, separators=(",", ":"))
    trace.write_text("\n".join(lines) + "\n")
    assert replay_file(trace).identical


def _header_with(trace: Path, change) -> bytes:
    lines = trace.read_text().splitlines()
    header = json.loads(lines[0])
    change(header)
    lines[0] = json.dumps(header, sort_keys=True, separators=(",", ":"))
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize(
    "change",
    [
        lambda h: h["composition"].update(extra=1),
        lambda h: h["composition"].pop("tools"),
        lambda h: h["composition"].update(model={"name": "m", "weights_sha256": "ab" * 32}),
        lambda h: h["composition"].update(model={"name": "m"}),
        lambda h: h["composition"].update(prompt_policy_sha256="sha256:xyz"),
        lambda h: h["composition"]["tools"][0].update(implementation_hash="sha256:" + "0" * 63),
        lambda h: h["composition"]["tools"][0].update(version="1"),
        lambda h: h["timings"].update(compile_us=1),
        lambda h: h["timings"].update(bind_us=-1),
        lambda h: h["timings"].update(bind_us=1.5),
        lambda h: h.pop("timings"),
        lambda h: h.pop("composition"),
    ],
)
def test_composition_and_timings_are_read_strictly(inputs, tmp_path, change):
    trace = tmp_path / "run.jsonl"
    _generate(inputs, trace)
    parse_trace(trace.read_bytes())  # the untouched trace reads
    with pytest.raises(TrgcError) as info:
        parse_trace(_header_with(trace, change))
    assert info.value.code == "E_TRACE_FORMAT"


def test_a_model_composition_is_recorded_and_read(inputs, tmp_path):
    weights = "sha256:" + "12" * 32
    policy = "sha256:" + "34" * 32
    constraint, vocab = FakeConstraint(), FakeVocab()
    identity = Identity(
        constraint.sha256,
        vocab.sha256,
        "test-compiler",
        "0.1.0",
        model={"name": "gguf:sha256:" + "56" * 32, "weights_sha256": weights},
        prompt_policy_sha256=policy,
        timings={"model_load_us": 7, "bind_us": 3},
    )
    trace = tmp_path / "m.jsonl"
    decode(
        constraint,
        vocab,
        RandomLogits(2, vocab.vocab_size),
        settings=SamplerSettings(),
        seed=2,
        max_tokens=10,
        trace_path=trace,
        identity=identity,
    )
    header = read_trace(trace).header
    assert header["composition"]["model"]["weights_sha256"] == weights
    assert header["composition"]["prompt_policy_sha256"] == policy
    assert header["timings"] == {
        "artifact_load_us": None,
        "tokenizer_load_us": None,
        "model_load_us": 7,
        "bind_us": 3,
    }


def test_claims_name_exactly_what_is_guaranteed():
    assert claim("eos", KIND_JSON).label == "JSON complete and profile-valid"
    assert claim("eos_forced", KIND_JSON).id == "json_complete_profile_valid"
    assert claim("eos", KIND_GRAMMAR).id == "complete_in_language"
    assert claim("eos", KIND_TOOLCALL).id == "toolcall_complete_envelope_valid"
    assert claim("cancelled", KIND_JSON).label == "generation cancelled with partial raw output"
    assert "incomplete" in claim("max_tokens", KIND_JSON).label
    labels = {claim(stop, KIND_JSON).label for stop in STOP_REASONS}
    assert len(labels) == len(STOP_REASONS) - 1  # eos and eos_forced make the same claim
    for stop in ("max_tokens", "cancelled", "constraint_empty_set", "sampling_failure"):
        assert "complete and" not in claim(stop, KIND_JSON).label


def test_artifact_kind_from_metadata(inputs):
    assert artifact_kind(trgc.load_artifact(inputs / "g.trga").metadata) == KIND_GRAMMAR
    assert artifact_kind(trgc.load_artifact(inputs / "s.trga").metadata) == KIND_JSON
    tools = (ROOT / "tests" / "data" / "toolcall" / "tools.json").read_bytes()
    assert artifact_kind(trgc.compile_toolcall(tools, family="qwen").metadata) == KIND_TOOLCALL
    # a hand-written trg-1 grammar of a tool call is a grammar like any other
    assert artifact_kind(trgc.load_artifact(ROOT / "artifacts" / "toolcall.trga").metadata) == (
        KIND_GRAMMAR
    )


def _cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_generate_json_has_the_claim_and_the_run_identities(inputs):
    result = _cli(
        "generate", inputs / "s.trga", "-t", inputs / "t.trt", "--max-tokens", "50", "--json"
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["completed"] is True
    assert doc["claim"] == {
        "id": "json_complete_profile_valid",
        "label": "JSON complete and profile-valid",
    }
    assert doc["run"]["artifact"]["sha256"] == trgc.load_artifact(inputs / "s.trga").sha256
    assert doc["run"]["tokenizer"]["sha256"] == str(trgc.load_tokenizer(inputs / "t.trt").sha256)
    assert doc["run"]["sampler"] == SamplerSettings().to_dict()
    assert doc["run"]["composition"]["tools"] == tool_identities()
    output = bytes.fromhex(doc["output_hex"])
    assert doc["output_sha256"] == "sha256:" + hashlib.sha256(output).hexdigest()
    human = _cli("generate", inputs / "s.trga", "-t", inputs / "t.trt", "--max-tokens", "50")
    assert "JSON complete and profile-valid" in human.stderr


def test_max_tokens_has_its_own_exit_status(inputs):
    result = _cli(
        "generate", inputs / "s.trga", "-t", inputs / "t.trt", "--max-tokens", "2", "--json"
    )
    assert result.exit_code == EXIT_INCOMPLETE == 4
    doc = json.loads(result.stdout)
    assert (doc["stop"], doc["completed"], doc["claim"]["id"]) == (
        "max_tokens",
        False,
        "incomplete_max_tokens",
    )
    human = _cli("generate", inputs / "s.trga", "-t", inputs / "t.trt", "--max-tokens", "2")
    assert human.exit_code == 4
    assert "incomplete, not valid" in human.stderr and "raw partial bytes" in human.stderr


def _npy(path: Path, rows: np.ndarray) -> Path:
    np.save(path, rows)
    return path


def test_an_error_during_the_run_carries_the_identities_and_configuration(inputs, tmp_path):
    vocab = trgc.load_tokenizer(inputs / "t.trt").vocab_size
    logits = _npy(tmp_path / "two.npy", np.zeros((2, vocab)))
    result = _cli(
        "generate", inputs / "g.trga", "-t", inputs / "t.trt", "--logits", f"npy:{logits}",
        "--max-tokens", "10", "--temperature", "0", "--json",
    )  # fmt: skip
    assert result.exit_code == 2 and result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "E_LOGITS_EXHAUSTED"
    run = error["details"]["run"]
    assert run["artifact"]["sha256"] == trgc.load_artifact(inputs / "g.trga").sha256
    assert run["tokenizer"]["sha256"] == str(trgc.load_tokenizer(inputs / "t.trt").sha256)
    assert run["sampler"]["temperature"] == 0.0 and run["max_tokens"] == 10
    assert run["logits"] == NpyLogits(logits, vocab).description
    assert run["step"] == 2 and run["config"].startswith("sha256:")
    assert run["composition"]["tools"] == tool_identities()


def test_a_sampling_failure_document_names_the_run_and_keeps_the_raw_bytes(inputs, tmp_path):
    vocab = trgc.load_tokenizer(inputs / "t.trt").vocab_size
    rows = np.zeros((3, vocab))
    rows[0, ord("[")] = 50.0  # step 0 chooses "[" (byte tokens are their own ids here)
    rows[1, 0] = np.inf  # step 1: +inf is an explicit failure
    logits = _npy(tmp_path / "inf.npy", rows)
    result = _cli(
        "generate", inputs / "g.trga", "-t", inputs / "t.trt", "--logits", f"npy:{logits}",
        "--temperature", "0", "--json",
    )  # fmt: skip
    assert result.exit_code == 2
    assert result.stdout == ""  # with --json the error is the only document
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "E_LOGIT_POSITIVE_INFINITY"
    details = error["details"]
    doc = details["result"]
    assert details["claim"]["id"] == "failed_logit_positive_infinity"
    assert details["output_hex"] == doc["output_hex"]
    assert details["run"]["artifact"] == doc["run"]["artifact"]
    assert (details["run"]["step"], details["run"]["config"]) == (doc["steps"] - 1, doc["config"])


def test_a_library_error_without_identity_is_left_alone():
    def broken(step, tokens):
        raise TrgcError("E_LOGITS_SOURCE", "no")

    with pytest.raises(TrgcError) as info:
        decode(
            FakeConstraint(),
            FakeVocab(),
            broken,
            settings=SamplerSettings(),
            seed=0,
            max_tokens=3,
        )
    assert "run" not in info.value.details


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def _progress_output(monkeypatch, *, stderr_tty: bool, stdout_tty: bool, as_json: bool) -> str:
    from trgc.cli.decode_cmds import _Progress

    err = _Stream(stderr_tty)
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(sys, "stdout", _Stream(stdout_tty))
    progress = _Progress(as_json, 10)
    progress.phase("loading the model")
    progress.phase("generating")
    progress.step(3)
    progress.stop()
    return err.getvalue()


def test_generate_shows_progress_on_a_terminal_when_the_output_is_piped(monkeypatch):
    shown = _progress_output(monkeypatch, stderr_tty=True, stdout_tty=False, as_json=False)
    assert "generating 3/10 steps" in shown


def test_generate_progress_is_quiet_when_piped_or_json(monkeypatch):
    assert _progress_output(monkeypatch, stderr_tty=False, stdout_tty=False, as_json=False) == ""
    assert _progress_output(monkeypatch, stderr_tty=True, stdout_tty=False, as_json=True) == ""


def test_generate_progress_gives_way_to_streamed_text_on_a_terminal(monkeypatch):
    shown = _progress_output(monkeypatch, stderr_tty=True, stdout_tty=True, as_json=False)
    assert "steps" not in shown  # the loading phase only; the text itself shows the tokens
