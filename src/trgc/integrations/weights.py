"""A model's weights identity: the SHA-256 of its weight files, computed once and cached.

`weights_sha256(path)` is `sha256:<hex>` of the file for a `.gguf` model, and for a model folder
the SHA-256 of the canonical JSON `{file name: hex SHA-256}` over its `*.safetensors` files (or,
without any, its `pytorch_model*.bin` files). Hashing a model takes seconds, so each file's hash
is cached under `cache_dir()/weights/`, keyed by the file's resolved path, size and
modification time: a file rewritten in place gets a new key and is hashed again.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from trgc.atomic import atomic_write
from trgc.errors import TrgcError
from trgc.integrations.cache import cache_dir

_CHUNK = 1 << 20


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _cache_entry(path: Path) -> tuple[Path, dict]:
    stat = path.stat()
    key = {"path": str(path.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    name = hashlib.sha256(json.dumps(key, sort_keys=True).encode("utf-8")).hexdigest()[:32]
    return cache_dir() / "weights" / f"{name}.json", key


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of one weight file, from the cache when the file is unchanged."""
    entry, key = _cache_entry(path)
    try:
        cached = json.loads(entry.read_text(encoding="utf-8"))
        if {k: cached.get(k) for k in key} == key and isinstance(cached.get("sha256"), str):
            return cached["sha256"]
    except (OSError, ValueError):
        pass  # no cache entry (or an unreadable one): hash the file
    digest = _sha256_file(path)
    entry.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(entry, json.dumps({**key, "sha256": digest}, sort_keys=True).encode("utf-8"))
    return digest


def weight_files(path: Path) -> list[Path]:
    """The files holding a model's weights: the `.gguf` itself, or a folder's weight files."""
    if path.is_file():
        return [path]
    files = sorted(path.glob("*.safetensors")) or sorted(path.glob("pytorch_model*.bin"))
    if not files:
        raise TrgcError(
            "E_MODEL_NOT_FOUND",
            "the model folder holds no *.safetensors or pytorch_model*.bin weight files",
            source=str(path),
        )
    return files


def weights_sha256(path: Path) -> str:
    """`sha256:<hex>` identity of the weights of the model at `path` (see the module docstring)."""
    files = weight_files(path)
    if path.is_file():
        return "sha256:" + file_sha256(path)
    document = {f.name: file_sha256(f) for f in files}
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
