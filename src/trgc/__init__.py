"""trgc: grammar-constrained decoding toolchain.

The public API, `TrgcError` and `Limits` included, is loaded lazily so that `import trgc`
costs next to nothing (`trgc --help` imports it) and never imports typer, rich or numba:

    art = trgc.compile_grammar(text)          # trg-1 source -> Artifact
    art = trgc.compile_schema(schema)         # JSON Schema (trj-1) -> Artifact
    art = trgc.load_artifact(path)
    trgc.check(art, data)                     # membership of a byte string
    tok = trgc.load_tokenizer(path)           # token-byte table (.trt) or tokenizer folder
    m = trgc.Matcher(art, tok)                # per-sequence token masks
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it
_LAZY: dict[str, str] = {
    "TrgcError": "trgc.errors",
    "Limits": "trgc.limits",
    "DEFAULT_LIMITS": "trgc.limits",
    "compile_grammar": "trgc.compiler.build",
    "compile_ast": "trgc.compiler.build",
    "compile_schema": "trgc.compiler.schema",
    "compile_toolcall": "trgc.compiler.toolcall",
    "load_artifact": "trgc.artifact.codec",
    "check": "trgc.artifact.check",
    "CheckResult": "trgc.artifact.check",
    "Artifact": "trgc.artifact.model",
    "load_tokenizer": "trgc.tokenizer.load",
    "TokenTable": "trgc.tokenizer.table",
    "Matcher": "trgc.engine.matcher",
    "MaskCache": "trgc.engine.cache",
    "load_masks": "trgc.engine.trm",
    "SamplerSettings": "trgc.decode.sampler",
    "generate_file": "trgc.decode.session",
    "replay_file": "trgc.decode.session",
    "read_trace": "trgc.decode.trace",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'trgc' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
