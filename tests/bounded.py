"""Run trgc in a child process under hard CPU and memory ceilings, for the hostile-input tests.

A hostile input must end with a stable code in bounded time and memory. The ceilings are kernel
resource limits (`RLIMIT_CPU`, `RLIMIT_AS`), not stopwatches: a correct trgc stays far below them
whatever the machine's load, while a quadratic path or an allocation proportional to a declared
size is killed (SIGXCPU) or refused (MemoryError, exit 70) and the test fails on the outcome
instead of hanging the suite or swapping the shared machine. The child also reports its peak
resident set, so a test can compare the memory a run needed with the size of its input.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

MiB = 1024 * 1024
# what the interpreter with numpy, zstandard and (for the engine) numba maps before doing any
# work; a run's `memory` allowance comes on top of it
BASE_ADDRESS_SPACE = 1024 * MiB

# Runs the CLI and, however it ends short of a signal, writes its peak RSS (bytes) and the CPU
# seconds it used to a file. The peak is VmHWM of this program's own address space: ru_maxrss
# would also count the forked copy of the (large) test process from before the exec.
_LAUNCHER = """
import atexit, os, resource, sys
def _peak():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
def _report(path=os.environ["TRGC_TEST_RSS_FILE"]):
    usage = resource.getrusage(resource.RUSAGE_SELF)
    with open(path, "w") as out:
        out.write(f"{_peak()} {usage.ru_utime + usage.ru_stime}")
atexit.register(_report)
sys.argv = ["trgc", *sys.argv[1:]]
from trgc.cli.app import main
main()
"""


@dataclass(frozen=True)
class Outcome:
    returncode: int
    stdout: bytes
    stderr: bytes
    max_rss: int | None  # bytes; None when the child was killed by a signal
    cpu_seconds: float | None = None  # user + system; None when killed

    @property
    def killed(self) -> bool:
        return self.returncode < 0


def _limiter(cpu_seconds: int, memory: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
        resource.setrlimit(resource.RLIMIT_AS, (BASE_ADDRESS_SPACE + memory,) * 2)

    return apply


def run_trgc(
    args: list[str],
    *,
    cpu_seconds: int = 60,
    memory: int = 512 * MiB,
    stdin: bytes | int | None = b"",
    cwd: Path | str | None = None,
    env: dict[str, str] | None = None,
) -> Outcome:
    """`trgc ARGS` in a child limited to `cpu_seconds` of CPU time and `memory` bytes of address
    space beyond the interpreter's own. `stdin` is bytes to feed or a file descriptor."""
    with tempfile.TemporaryDirectory() as scratch:
        rss_file = Path(scratch) / "rss"
        child_env = {**os.environ, **(env or {}), "TRGC_TEST_RSS_FILE": str(rss_file)}
        feed = stdin if isinstance(stdin, bytes) else None
        result = subprocess.run(
            [sys.executable, "-c", _LAUNCHER, *args],
            input=feed,
            stdin=None if feed is not None else stdin,
            capture_output=True,
            cwd=cwd,
            env=child_env,
            preexec_fn=_limiter(cpu_seconds, memory),
            check=False,
        )
        rss, cpu = (None, None)
        if rss_file.exists():
            peak, used = rss_file.read_text().split()
            rss, cpu = int(peak), float(used)
    return Outcome(result.returncode, result.stdout, result.stderr, rss, cpu)


def run_python(code: str, *, cpu_seconds: int = 60, memory: int = 512 * MiB) -> Outcome:
    """A Python snippet in a child under the same ceilings (for library-level checks)."""
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        preexec_fn=_limiter(cpu_seconds, memory),
        check=False,
    )
    return Outcome(result.returncode, result.stdout, result.stderr, None)
