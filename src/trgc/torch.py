"""Batch token bitmasks for torch inference code: allocate, fill many matchers at once, apply.

The layout is XGrammar's and llguidance's: int32 words of shape `(batch, ceil(V/32))`, bit
`t % 32` of word `t // 32` set = token `t` allowed, so code written for those libraries takes
trgc masks unchanged. Only the `Matcher`'s public API is used (`fill_bitmask`).

* `allocate_token_bitmask(batch, vocab)`: a CPU int32 tensor, every bit set.
* `fill_next_token_bitmask(matchers, bitmask)`: row `i` <- `matchers[i]` (or the rows given by
  `indices`), on a pool of threads. The mask kernels release the GIL (numba `nogil`) and every
  matcher owns its scratch buffers, so rows whose masks must be computed run in parallel;
  cached masks are a dictionary lookup and a copy. A CUDA bitmask is filled through a CPU
  staging buffer and copied over once.
* `apply_token_bitmask_inplace(logits, bitmask)`: disallowed logits become -inf. On the CPU the
  words are unpacked with numpy's `unpackbits` (little bit order: bit k of a word is column
  32w + k) and -inf is written through the tensor's memory with numpy (torch's `masked_fill_`
  wakes its intra-op thread pool, which took ~8 ms per 49k-wide row on the busy 2-core
  machine); on another device, or for bfloat16 or grad-tracking logits, plain torch ops. Logit columns past the bitmask
  (a model vocabulary padded past the tokenizer's) are never allowed.

torch is imported inside the functions, so `import trgc` (and importing this module) never
loads it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from trgc.engine.bits import n_words
from trgc.errors import TrgcError

_POOL: ThreadPoolExecutor | None = None
_POOL_SIZE = 0
_POOL_LOCK = threading.Lock()


def _torch(purpose: str) -> Any:
    try:
        import torch
    except ImportError as exc:
        raise TrgcError(
            "E_INTEGRATION_DEPENDENCY",
            f"{purpose} needs torch, which cannot be imported ({exc})",
            hint="pip install 'torch==2.13.0' (the CPU wheel; an unpinned torch pulls a CUDA build)",
        ) from None
    return torch


def available_cores() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - platforms without affinity masks
        return os.cpu_count() or 1


def _pool(size: int) -> ThreadPoolExecutor:
    global _POOL, _POOL_SIZE
    with _POOL_LOCK:
        if _POOL is None or size != _POOL_SIZE:
            if _POOL is not None:
                _POOL.shutdown(wait=True)
            _POOL = ThreadPoolExecutor(max_workers=size, thread_name_prefix="trgc-fill")
            _POOL_SIZE = size
        return _POOL


def allocate_token_bitmask(batch_size: int, vocab_size: int) -> Any:
    """A CPU `torch.int32` tensor of shape `(batch_size, ceil(vocab_size / 32))`, all bits set
    (everything allowed, the neutral mask)."""
    torch = _torch("trgc.torch.allocate_token_bitmask")
    for name, value in (("batch_size", batch_size), ("vocab_size", vocab_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise TrgcError("E_ARGUMENT_TYPE", f"{name}: expected a positive int, got {value!r}")
    return torch.full((batch_size, n_words(vocab_size)), -1, dtype=torch.int32)


def _rows(matchers: Sequence[Any], indices: Sequence[int] | None, batch: int) -> list[int]:
    rows = list(range(len(matchers))) if indices is None else [int(i) for i in indices]
    if len(rows) != len(matchers):
        raise TrgcError("E_BITMASK_BUFFER", f"{len(matchers)} matchers for {len(rows)} row indices")
    if len(set(rows)) != len(rows):
        raise TrgcError("E_BITMASK_BUFFER", "a row index is given twice")
    bad = [r for r in rows if not 0 <= r < batch]
    if bad:
        raise TrgcError("E_BITMASK_BUFFER", f"expected row indices in [0, {batch}), got {bad[0]}")
    return rows


def fill_next_token_bitmask(
    matchers: Sequence[Any],
    bitmask: Any,
    indices: Sequence[int] | None = None,
    *,
    threads: int | None = None,
) -> None:
    """Write `matchers[k]`'s next-token mask into row `indices[k]` (row `k` without `indices`)
    of `bitmask` (a torch tensor on any device, or a numpy array), on up to `threads` threads
    (default: every core this process may use; 1 = in the calling thread). Other rows are left
    as they are. A `None` matcher leaves its row untouched."""
    shape = tuple(bitmask.shape)
    if len(shape) != 2:
        raise TrgcError("E_BITMASK_BUFFER", f"expected shape (batch, words), got {shape}")
    rows = _rows(matchers, indices, shape[0])
    work = [(m, r) for m, r in zip(matchers, rows, strict=True) if m is not None]
    if not work:
        return
    device = str(getattr(bitmask, "device", "cpu"))
    target = bitmask
    if device != "cpu":  # fill a CPU copy, then one transfer
        torch = _torch("trgc.torch.fill_next_token_bitmask")
        target = torch.empty(shape, dtype=bitmask.dtype)
    if not isinstance(target, np.ndarray):  # one numpy view of the tensor for every row
        if target.dtype != _torch("trgc.torch.fill_next_token_bitmask").int32:
            raise TrgcError("E_BITMASK_BUFFER", f"expected dtype torch.int32, got {target.dtype}")
        if not target.is_contiguous():
            raise TrgcError("E_BITMASK_BUFFER", "expected a writeable C-contiguous buffer")
        target = target.numpy()
    size = min(len(work), threads if threads is not None else available_cores())
    if size < 1:
        raise TrgcError("E_ARGUMENT_TYPE", f"threads: expected >= 1, got {threads}")
    if size == 1:
        for matcher, row in work:
            matcher.fill_bitmask(target, row)
    else:
        chunks = [work[k::size] for k in range(size)]

        def fill(chunk: list[tuple[Any, int]]) -> None:
            for matcher, row in chunk:
                matcher.fill_bitmask(target, row)

        pool = _pool(size - 1)
        futures = [pool.submit(fill, chunk) for chunk in chunks[1:]]
        try:
            fill(chunks[0])  # the calling thread takes a share itself
        finally:
            for future in futures:
                future.result()  # re-raises a matcher's error in the caller
    if device != "cpu":
        torch = _torch("trgc.torch.fill_next_token_bitmask")
        index = [row for _, row in work]
        bitmask[index] = torch.from_numpy(target[index]).to(bitmask.device, non_blocking=True)


def apply_token_bitmask_inplace(
    logits: Any, bitmask: Any, indices: Sequence[int] | None = None
) -> None:
    """Set the logits of disallowed tokens to -inf in place. `logits` is `(batch, V)` (or `(V,)`
    with a one-row bitmask), `bitmask` int32 `(batch, words)`; with `indices`, bitmask row `k`
    applies to logits row `indices[k]`. Columns at or past `32 * words` are disallowed."""
    torch = _torch("trgc.torch.apply_token_bitmask_inplace")
    if not isinstance(logits, torch.Tensor) or not torch.is_floating_point(logits):
        raise TrgcError("E_ARGUMENT_TYPE", "logits: expected a floating-point torch tensor")
    rows = logits if logits.dim() == 2 else logits.unsqueeze(0)
    words = bitmask if isinstance(bitmask, torch.Tensor) else torch.from_numpy(bitmask)
    if words.dim() == 1:
        words = words.unsqueeze(0)
    if words.dtype != torch.int32 or words.dim() != 2:
        raise TrgcError(
            "E_BITMASK_BUFFER",
            f"expected an int32 (batch, words) bitmask, got {words.dtype} {tuple(words.shape)}",
        )
    targets = list(range(words.shape[0])) if indices is None else [int(i) for i in indices]
    if len(targets) != words.shape[0] or any(not 0 <= i < rows.shape[0] for i in targets):
        raise TrgcError(
            "E_BITMASK_BUFFER",
            f"{words.shape[0]} bitmask rows for logits rows {targets[:8]} of {rows.shape[0]}",
        )
    width = int(rows.shape[1])
    if rows.device.type == "cpu" and words.device.type == "cpu" and _numpy_float(torch, rows):
        _apply_numpy(rows.numpy(), words.numpy(), targets, width)
        return
    disallowed = _disallowed(torch, words, width, rows.device)
    if indices is None and words.shape[0] == rows.shape[0]:
        rows.masked_fill_(disallowed, float("-inf"))
        return
    for k, row in enumerate(targets):
        rows[row].masked_fill_(disallowed[k], float("-inf"))


def _numpy_float(torch: Any, logits: Any) -> bool:
    """Whether numpy can write these logits in place (a CPU float16/32/64 tensor without grad)."""
    return not logits.requires_grad and logits.dtype in (
        torch.float16,
        torch.float32,
        torch.float64,
    )


def _apply_numpy(logits: np.ndarray, words: np.ndarray, targets: list[int], width: int) -> None:
    """The CPU path: unpack with numpy (single-threaded, no intra-op thread pool to wake on a
    busy machine) and write -inf through the tensor's memory."""
    covered = min(width, 32 * words.shape[1])
    bits = np.unpackbits(np.ascontiguousarray(words).view(np.uint8), axis=1, bitorder="little")
    clear = bits[:, :covered] == 0
    for k, row in enumerate(targets):
        out = logits[row]
        np.copyto(out[:covered], -np.inf, where=clear[k])
        out[covered:] = -np.inf


def _disallowed(torch: Any, words: Any, width: int, device: Any) -> Any:
    """bool `(batch, width)`: True where the bit is clear or the column is past the words."""
    covered = min(width, 32 * int(words.shape[1]))
    if words.device.type == "cpu":
        bits = np.unpackbits(
            np.ascontiguousarray(words.numpy()).view(np.uint8), axis=1, bitorder="little"
        )
        clear = torch.from_numpy(bits[:, :covered] == 0)
    else:
        shifts = torch.arange(32, dtype=torch.int32, device=words.device)
        bits = (words.unsqueeze(-1) >> shifts) & 1
        clear = bits.reshape(words.shape[0], -1)[:, :covered] == 0
    clear = clear.to(device)
    if covered == width:
        return clear
    pad = torch.ones((clear.shape[0], width - covered), dtype=torch.bool, device=device)
    return torch.cat([clear, pad], dim=1)
