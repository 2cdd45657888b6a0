"""CPython's cyclic garbage collector, paused while a compilation runs.

A compilation allocates hundreds of thousands of short-lived containers (AST nodes, NFA rows,
per-state tuples) that reference counting frees as it goes; few of them form cycles (a few
hundred objects per schema). The cyclic collector still counts them: every 700 allocations a
young collection walks the survivors, and whenever those pass a quarter of the old generation
a full collection walks every object of the process: 30-40 ms once numba is loaded, more in a
runtime that holds a model. Over the 781 schemas of the JSONSchemaBench sample that was 36 full
collections, 1.4 s of 9.4 s, each landing on whichever compilation happened to be running.
Paused, a compilation's garbage is freed by reference counting as before, and its few cycles
wait for the first collection after it.

The pause is process-wide (CPython has one collector): nested and concurrent compilations share
it through a count, and the collector is enabled again when the last of them ends, and only if
it was enabled when the first began. A thread that enables or disables the collector while a
compilation runs is overridden when that compilation ends.
"""

from __future__ import annotations

import functools
import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

_lock = threading.Lock()
_running = 0  # compilations inside `paused()`
_resume = False  # was the collector enabled when the first of them began

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def paused() -> Iterator[None]:
    """The cyclic collector disabled for the duration (see the module docstring)."""
    global _running, _resume
    with _lock:
        if _running == 0:
            _resume = gc.isenabled()
            gc.disable()
        _running += 1
    try:
        yield
    finally:
        with _lock:
            _running -= 1
            if _running == 0 and _resume:
                gc.enable()


def collection_paused(function: Callable[P, R]) -> Callable[P, R]:
    """`function` run inside `paused()`."""

    @functools.wraps(function)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with paused():
            return function(*args, **kwargs)

    return run
