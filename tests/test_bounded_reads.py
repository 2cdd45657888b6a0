"""Every file trgc reads is capped (checked with fstat and while reading), and no file a trace or
a lock names is read outside the place its format allows (issue 17, item 1).

Each case runs the real CLI in a child process under a CPU and address-space ceiling far below
what an unbounded read of /dev/zero or of a 4 GiB file needs, so a regression fails here (killed,
or exit 70 on MemoryError) instead of exhausting the shared machine.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bounded import MiB, run_python, run_trgc

ROOT = Path(__file__).resolve().parents[1]
GiB = 1024 * MiB


def run(args: list[str], **options):
    outcome = run_trgc([*args, "--json"], cpu_seconds=60, memory=160 * MiB, **options)
    assert not outcome.killed, f"killed by signal {-outcome.returncode}"
    assert b"Traceback" not in outcome.stderr, outcome.stderr.decode()
    return outcome


def error_of(outcome) -> dict:
    assert outcome.stdout == b""
    return json.loads(outcome.stderr)["error"]


def sparse(path: Path, size: int) -> Path:
    with path.open("wb") as handle:
        handle.truncate(size)
    return path


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("bounded")
    shutil.copy(ROOT / "grammars" / "json.trg", tmp / "json.trg")
    outcome = run_trgc(["compile", str(tmp / "json.trg"), "-o", str(tmp / "json.trga")])
    assert outcome.returncode == 0, outcome.stderr
    shutil.copy(ROOT / "tokenizers" / "gpt2.trt", tmp / "gpt2.trt")
    return tmp


ARTIFACT_READERS = [
    ["inspect", "{path}"],
    ["check", "{path}", "-"],
    ["diff", "{path}", "{art}"],
    ["masks", "precompute", "{path}", "-t", "{trt}", "-o", "{tmp}/x.trm"],
    ["generate", "{path}", "-t", "{trt}", "--max-tokens", "2"],
]


def _artifact_reader(work: Path, args: list[str], path: Path) -> list[str]:
    fields = {"art": work / "json.trga", "trt": work / "gpt2.trt", "tmp": work, "path": path}
    return [a.format(**fields) for a in args]


@pytest.mark.parametrize("args", ARTIFACT_READERS)
def test_artifact_readers_are_capped(work, args):
    outcome = run(_artifact_reader(work, args, sparse(work / "huge.trga", 4 * GiB)))
    assert outcome.returncode == 3
    assert error_of(outcome)["code"] == "E_LIMIT_COMPILED_BYTES"
    assert not (work / "x.trm").exists()


@pytest.mark.parametrize("args", ARTIFACT_READERS)
def test_a_device_is_no_artifact_after_its_first_bytes(work, args):
    # an artifact is a zstd frame: the read stops at the first bytes that are not its magic
    outcome = run(_artifact_reader(work, args, Path("/dev/zero")))
    assert outcome.returncode == 2
    assert error_of(outcome)["code"] == "E_NOT_AN_ARTIFACT"
    assert outcome.max_rss is not None and outcome.max_rss < 120 * MiB
    assert not (work / "x.trm").exists()


def test_token_table_reader_is_capped(work):
    outcome = run(["tokenizer", "inspect", str(sparse(work / "huge.trt", 4 * GiB))])
    assert outcome.returncode == 2
    error = error_of(outcome)
    assert error["code"] == "E_TOKENIZER_TOO_LARGE"
    assert "1,073,741,824" in error["message"]  # the token table cap


def test_a_token_table_on_a_device_is_refused_after_its_first_bytes(work):
    # a .trt is a zstd frame or raw TRGCTOK bytes; read to its 1 GiB cap, /dev/zero ran out of
    # the 160 MiB ceiling (E_TOKENIZER_TOO_LARGE) after reading most of it
    (work / "zero.trt").symlink_to("/dev/zero")
    outcome = run(["tokenizer", "inspect", str(work / "zero.trt")])
    assert outcome.returncode == 2
    assert error_of(outcome)["code"] == "E_TOKENIZER_TABLE_MAGIC"
    assert outcome.max_rss is not None and outcome.max_rss < 120 * MiB


def test_a_mask_file_on_a_device_is_refused_after_its_first_bytes():
    # no command reads a .trm from a user's path yet; the library's reader is capped the same way.
    # The peak is VmHWM (ru_maxrss would count the forked copy of this large test process)
    outcome = run_python(
        "import trgc\n"
        "try:\n"
        "    trgc.load_masks('/dev/zero')\n"
        "except trgc.TrgcError as e:\n"
        "    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
        "    print(e.code, int(hwm[0].split()[1]) * 1024)\n",
        memory=400 * MiB,
    )
    assert outcome.returncode == 0, outcome.stderr.decode()
    code, rss = outcome.stdout.decode().split()
    assert code == "E_CACHE_MISMATCH"
    assert int(rss) < 150 * MiB


def test_checked_input_on_standard_input_is_capped(work):
    with open("/dev/zero", "rb") as zero:
        outcome = run(["check", str(work / "json.trga"), "-"], stdin=zero.fileno())
    assert outcome.returncode == 3 and error_of(outcome)["code"] == "E_LIMIT_INPUT_BYTES"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["verify", "--lock", "/dev/zero"], "E_LIMIT_INPUT_BYTES"),
        (["compile", "{tmp}/json.trg", "--limits-file", "/dev/zero"], "E_LIMIT_INPUT_BYTES"),
    ],
)
def test_toml_readers_are_capped(work, args, code):
    outcome = run([a.format(tmp=work) for a in args])
    assert outcome.returncode == 3 and error_of(outcome)["code"] == code


def _lock(work: Path) -> Path:
    outcome = run_trgc(["lock", str(work / "json.trg"), "--lock", str(work / "x.lock")])
    assert outcome.returncode == 0, outcome.stderr
    return work / "x.lock"


@pytest.mark.parametrize("key", ["source", "artifact"])
@pytest.mark.parametrize("path", ["/dev/zero", "C:/x.trg"])
def test_lock_entry_paths_must_be_relative(work, key, path):
    text = _lock(work).read_text(encoding="utf-8")
    lines = [
        f'{key} = "{path}"' if line.startswith(f"{key} = ") else line for line in text.splitlines()
    ]
    (work / "bad.lock").write_text("\n".join(lines) + "\n", encoding="utf-8")
    outcome = run(["verify", "--lock", str(work / "bad.lock")])
    assert outcome.returncode == 2
    error = error_of(outcome)
    assert error["code"] == "E_LOCK_INVALID" and key in error["message"]


def test_a_lock_entry_reaching_a_device_by_a_relative_path_is_still_capped(work):
    lock = _lock(work)
    up = "../" * len(work.resolve().parts)
    text = lock.read_text(encoding="utf-8")
    lines = [
        f'artifact = "{up}dev/zero"' if line.startswith("artifact = ") else line
        for line in text.splitlines()
    ]
    lock.write_text("\n".join(lines) + "\n", encoding="utf-8")
    outcome = run(["verify", "--lock", str(lock)])
    assert outcome.returncode == 1  # reported as a changed entry, not read without end
    report = json.loads(outcome.stdout)
    [change] = report["changed"]["json"]
    assert change["field"] == "artifact_file" and change["actual"] == "error E_NOT_AN_ARTIFACT"
    assert outcome.max_rss is not None and outcome.max_rss < 120 * MiB


@pytest.fixture
def traced(work, tmp_path) -> Path:
    shutil.copy(work / "json.trga", tmp_path / "json.trga")
    shutil.copy(work / "gpt2.trt", tmp_path / "gpt2.trt")
    outcome = run_trgc(
        ["generate", "json.trga", "-t", "gpt2.trt", "--max-tokens", "5", "--trace", "run.jsonl"],
        cwd=tmp_path,
    )
    assert outcome.returncode == 4, outcome.stderr  # stopped at --max-tokens
    return tmp_path / "run.jsonl"


def _edit_header(trace: Path, key: str, field: str, value: object) -> None:
    lines = trace.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header[key][field] = value
    lines[0] = json.dumps(header, sort_keys=True, separators=(",", ":"))
    trace.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("key", "field", "value"),
    [
        ("sidecar", "file", "/dev/zero"),
        ("sidecar", "file", "../../../etc/passwd"),
        ("sidecar", "file", "sub/run.logits.zst"),
        ("artifact", "path", "/dev/zero"),
        ("tokenizer", "path", "/etc/passwd"),
        ("artifact", "path", "C:\\\\x.trga"),
    ],
)
def test_trace_header_paths_stay_where_the_format_allows(traced, key, field, value):
    _edit_header(traced, key, field, value)
    for args in (["replay", str(traced)], ["trace", "stats", str(traced)]):
        outcome = run(args)
        assert outcome.returncode == 2
        error = error_of(outcome)
        assert error["code"] == "E_TRACE_FORMAT" and field in error["message"]
        assert "sha256" not in json.dumps(error)  # no hash of a file outside the trace's folder


def test_relative_header_path_to_a_device_is_capped(traced):
    _edit_header(traced, "artifact", "path", "../" * len(traced.parent.parts) + "dev/zero")
    outcome = run(["replay", str(traced)])
    assert outcome.returncode == 2 and error_of(outcome)["code"] == "E_NOT_AN_ARTIFACT"
    assert outcome.max_rss is not None and outcome.max_rss < 120 * MiB


def test_sidecar_larger_than_its_steps_explain_is_refused_unread(traced):
    sidecar = traced.with_name(traced.name + ".logits.zst")
    sidecar.unlink()
    sparse(sidecar, 4 * GiB)
    outcome = run(["replay", str(traced)])
    assert outcome.returncode == 2
    error = error_of(outcome)
    assert error["code"] == "E_SIDECAR_FORMAT" and "ceiling" in error["message"]


def test_every_file_cap_is_documented():
    from trgc.limits import FILE_CAPS

    page = (ROOT / "docs" / "limits.md").read_text(encoding="utf-8")
    for kind, cap in FILE_CAPS.items():
        assert f"| {kind} |" in page and cap.code in page
