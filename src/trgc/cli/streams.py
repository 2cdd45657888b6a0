"""Standard output that is closed or whose reader went away, handled without typer.

Shared by the typer funnel (`trgc.cli.funnel`) and the typer-free root help
(`trgc.cli.quickhelp`), so both end such a run the same way: exit status 141, nothing more
written."""

from __future__ import annotations

import contextlib
import errno
import os
import sys

EXIT_BROKEN_PIPE = 141


class ClosedStdout:
    """Stands in for a closed stdout (`sys.stdout is None`): writing fails like a broken pipe."""

    encoding = "utf-8"

    def write(self, text: str) -> int:
        raise BrokenPipeError(errno.EBADF, "standard output is closed")

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "standard output is closed")


def silence_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so the interpreter's final flush of what
    is still buffered cannot fail again (the recipe of the Python `signal` documentation)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - replaces stdout for the rest of the run
