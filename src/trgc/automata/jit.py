"""When the compiler's compiled kernels run: only where numba is already loaded.

`subset_kernel.py` (the subset construction) is a numba version of Python code that stays its
reference: the same tables, charges and refusals. A `trgc compile` process never imports numba
(0.3 s of a 0.4 s target), so the kernel runs only in a process that has loaded numba already:
one that computes masks (a runtime, `trgc generate`, the live benchmarks). Its compiled code is
cached on disk by numba.
"""

from __future__ import annotations

import sys

# tests set this to run the kernels (True) or their references (False) regardless of numba
FORCE: bool | None = None


def enabled() -> bool:
    """Whether the compiled kernels run: numba is already imported (or a test says)."""
    return FORCE if FORCE is not None else "numba" in sys.modules
