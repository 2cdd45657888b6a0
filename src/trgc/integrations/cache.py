"""Where the integrations keep what they compute once per model: verified token tables and
weight hashes. Everything in it can be deleted; it is rebuilt on the next use."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """`$TRGC_CACHE_DIR`, else `$XDG_CACHE_HOME/trgc`, else `~/.cache/trgc`."""
    if os.environ.get("TRGC_CACHE_DIR"):
        return Path(os.environ["TRGC_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "trgc"
