"""The numba mask kernel: one depth-first walk of the token trie per configuration.

`docs/mask-engine.md` derives it from the reference masker step by step. The public functions
validate their arrays and call private kernels that assume valid input; numba is imported on
the first call only (`import trgc` never loads it) and compiled code is cached on disk.

Invariant of `_walk`: nodes are in depth-first preorder, so when node `i` at depth `d` is
visited, level `d - 1` of the scratch holds the configuration after the bytes of `i`'s parent.
A level is one row of `lv`: its top frame, the *cell* below the top, the number of frames, the
rule frames among them, how many of the caller's frames are still untouched at the bottom
(`keep`), and the height so far. The stack below the top is a persistent linked list of cells
(`cells[c] = (frame, next cell)`): the caller's frames are cells `0 .. n_orig - 1`, and a step of
level `d` writes the frames it pushes under the top into cells of its own region
(`base(d) = n_orig + d * stride`, reused only once the subtree that linked to them is done). So a
shift costs one row and no copy of the stack, a return follows a link, and viability checks only
the frames the step wrote: the top, the new cells, and `ok_below[keep]` for the caller's
frames below. Frames are int64 frame keys (`global state | left << 32 | needed << 48` with the
counters clipped to the longest token, `trgc.engine.config.frame_key`: within one token nothing
beyond the clip can matter).

The hot path is a shift of the top frame, handled before the general step (calls, returns,
restarts), and each trie node's single byte-matched token (`Binding.node_tok`) is set with one
load. A walk runs in chunks of at most `cancel.CHUNK_NODES` nodes; between two chunks the
wrapper calls `cancellation_checkpoint()` and the walk resumes where it stopped (the levels
stay in the scratch).
"""

from __future__ import annotations

import functools

import numpy as np

from trgc.engine.binding import Binding
from trgc.engine.bits import unpack
from trgc.engine.cancel import CHUNK_NODES, cancellation_checkpoint
from trgc.engine.config import Config, is_accepting, mask_key, step

OK, DEAD, OPEN = 0, 1, 2  # outcome of stepping one byte (OPEN: needs the unknown caller frame)
TOP, REST, POS, DEP, KEEP, HEIGHT = 0, 1, 2, 3, 4, 5  # columns of a level row
FRAME, NEXT = 0, 1  # rows of `cells`
NEED, NEED_MORE, COST, IS_REPEAT, REP_START, ACCEPTING = 0, 1, 2, 3, 4, 5  # rows of `info`
# `io` of a walk: range and node to resume at (-1: start the range), open roots so far, height
IO_RANGE, IO_NODE, IO_OPEN, IO_HEIGHT = 0, 1, 2, 3
# `params` of a walk
(P_N_ORIG, P_FRAME_MODE, P_MAX_DEPTH, P_MAX_STEPS, P_USE_SKIP, P_BUDGET, P_STRIDE,
 P_OPEN_ROOTS) = range(8)  # fmt: skip
LOW32 = 0xFFFFFFFF
NEEDED_ONE = 1 << 48  # a frame key at or above this has iterations still needed


def _general(d, sym, lv, cells, gnext, calls, info, ok_below, max_depth, max_steps, frame_mode,
             base):  # fmt: skip
    """Step level `d - 1` by symbol `sym` into level `d` with every action (shift, return,
    restart, call); the status."""
    top = lv[d - 1, TOP]
    rest = lv[d - 1, REST]
    pos = lv[d - 1, POS]
    dep = lv[d - 1, DEP]
    keep = lv[d - 1, KEEP]
    h = lv[d - 1, HEIGHT]
    n_new = 0
    status = DEAD
    for _ in range(max_steps):
        g = top & LOW32
        action = gnext[g, sym]
        if action >= 0:
            top = action + (top - g)  # the counters are carried along
            keep = min(keep, pos - 1)
            status = OK
            break
        if action == -1:
            if not info[ACCEPTING, g]:
                break
            if info[IS_REPEAT, g]:
                left = (top >> 32) & 0xFFFF
                needed = top >> 48
                start = info[REP_START, g]
                if left > 0 and gnext[start, sym] != -1:
                    if needed > 0:
                        needed -= 1
                    top = start | ((left - 1) << 32) | (needed << 48)
                    keep = min(keep, pos - 1)
                    continue  # the next iteration starts with this byte
                if needed > 0:
                    break
            if pos > 1:  # return: the frame below becomes the top
                keep = min(keep, pos - 1)
                dep -= info[COST, g]
                top = cells[FRAME, rest]
                rest = cells[NEXT, rest]
                pos -= 1
                continue
            if frame_mode:
                status = OPEN
            break
        k = -2 - action
        callee = calls[k, 0]
        if info[COST, callee] and dep >= max_depth:
            break
        c = base + n_new  # the top becomes the return state, below the callee
        n_new += 1
        cells[FRAME, c] = calls[k, 1] + (top - g)
        cells[NEXT, c] = rest
        rest = c
        keep = min(keep, pos - 1)
        top = callee | (calls[k, 2] << 32) | (calls[k, 3] << 48)
        pos += 1
        dep += info[COST, callee]
    if status == OK:  # viable: the frames this step wrote can complete within max_depth
        if not ok_below[keep]:
            status = DEAD
        g = top & LOW32
        v = dep + (info[NEED_MORE, g] if top >> 48 else info[NEED, g])
        if v > max_depth:
            status = DEAD
        h = max(h, v)
        below = dep - info[COST, g]  # rule frames at or below the cell
        cc = rest
        while cc >= base:
            frame = cells[FRAME, cc]
            gc = frame & LOW32
            v = below + (info[NEED_MORE, gc] if frame >> 48 else info[NEED, gc])
            if v > max_depth:
                status = DEAD
            h = max(h, v)
            below -= info[COST, gc]
            cc = cells[NEXT, cc]
    lv[d, TOP] = top
    lv[d, REST] = rest
    lv[d, POS] = pos
    lv[d, DEP] = dep
    lv[d, KEEP] = keep
    lv[d, HEIGHT] = h
    return status


def _enter(orig, n, info, max_depth, ok_below, cells, lv):
    """Make the configuration's frames `orig[:n]` level 0 of the live stack: cells 0 .. n - 1,
    `ok_below[p]` whether frames `orig[:p]` are all viable; the frames' depth."""
    ok_below[0] = True
    dep = 0
    for p in range(n):
        frame = orig[p]
        g = frame & LOW32
        dep += info[COST, g]
        nd = info[NEED_MORE, g] if frame >> 48 else info[NEED, g]
        ok_below[p + 1] = ok_below[p] != 0 and dep + nd <= max_depth
        cells[FRAME, p] = frame
        cells[NEXT, p] = p - 1
    lv[0, TOP] = orig[n - 1]
    lv[0, REST] = n - 2
    lv[0, POS] = n
    lv[0, DEP] = dep
    lv[0, KEEP] = n
    lv[0, HEIGHT] = dep
    return dep


_enter_now = _enter  # what `_walk` and `_symbols` call: the compiled `_enter` once `_jitted` ran


def _walk(params, orig, roots, gnext, calls, info, byte_class, rec, parent, token_start,
          token_ids, byte_token, skip, lv, cells, path, ok_below, out_words, open_roots, io,
          dead):  # fmt: skip
    """Walk the subtrees of `roots` (node 0: the whole trie) from the configuration `orig`,
    resuming at `io`; 1 when done, 0 when the chunk's budget ran out (call again).

    `P_OPEN_ROOTS`: the roots are the open roots of the top frame's entry, the nodes where
    that frame's walk returned out of it, walked only when the entry's height fits above the
    live frames (so a root's ancestors step as in that walk). At each root the step pops the
    frames that walk popped and hands the root's byte to the live frames below, the same for
    every root: a byte they reject at one root is rejected at every root it ends, whose
    ancestors are then not stepped (a counted string body's open roots are every member
    beginning followed by each byte that ends the string, most of them rejected below).
    `dead` (256 entries, scratch) holds those bytes; unread otherwise."""
    n_orig = params[P_N_ORIG]
    frame_mode = params[P_FRAME_MODE] != 0
    max_depth = params[P_MAX_DEPTH]
    max_steps = params[P_MAX_STEPS]
    use_skip = params[P_USE_SKIP] != 0
    budget = params[P_BUDGET]
    stride = params[P_STRIDE]
    by_byte = params[P_OPEN_ROOTS] != 0
    if by_byte:
        dead[:256] = 0  # root bytes rejected below
    dep = _enter_now(orig, n_orig, info, max_depth, ok_below, cells, lv)
    n_open = io[IO_OPEN]
    max_h = max(io[IO_HEIGHT], dep)  # at least the rule frames of the configuration
    work = 0
    r = io[IO_RANGE]
    resume = io[IO_NODE]
    # levels 1 .. n_valid hold the steps of ancestors path[0 .. n_valid - 1]: roots come in
    # preorder, and the next one shares most of its ancestors with the one before (the open
    # roots of a string body: `abc` + `.`, `abc` + `_`, ...), so only the rest is stepped; a
    # subtree walk writes the levels below its root only
    n_valid = 0
    while r < roots.shape[0]:
        root = roots[r]
        end = rec[root, R_END]
        if resume >= 0:
            i = resume
        elif root == 0:
            i = 1
            n_valid = 0
        elif by_byte and dead[rec[root, R_BYTE_DEPTH] & 255] != 0:
            i = end
        else:  # step the root's ancestors first (levels 1 .. depth - 1)
            i = root
            n_path = (rec[root, R_BYTE_DEPTH] >> 8) - 1
            a = parent[root]
            k = n_path - 1
            while k >= 0 and not (k < n_valid and path[k] == a):
                path[k] = a  # a node differs from the last root's: so do its descendants
                a = parent[a]
                k -= 1
            n_valid = k + 1  # the ancestors shared with the last root, stepped then
            for k in range(n_valid, n_path):
                byte_depth = rec[path[k], R_BYTE_DEPTH]
                d = byte_depth >> 8
                status = _step(d, byte_class[byte_depth & 255], lv, cells, gnext, calls, info,
                               ok_below, max_depth, max_steps, frame_mode,
                               n_orig + d * stride)  # fmt: skip
                if status != OK:
                    i = end
                    break
                n_valid = k + 1
        resume = -1
        while i < end:
            work += 1
            if work > budget:  # suspend: the levels stay in the scratch
                io[IO_RANGE] = r
                io[IO_NODE] = i
                io[IO_OPEN] = n_open
                io[IO_HEIGHT] = max_h
                return 0
            if use_skip and skip[i]:  # every token below is already decided
                i = rec[i, R_END]
                continue
            byte_depth = rec[i, R_BYTE_DEPTH]
            d = byte_depth >> 8
            sym = byte_class[byte_depth & 255]
            top = lv[d - 1, TOP]
            g = top & LOW32
            action = gnext[g, sym]
            new = -1  # the new top when the byte is a shift, or a restart then a shift
            if d > 1:
                if action >= 0:  # the hot path: a shift of the top frame
                    new = action + (top - g)
                elif action == -1 and info[IS_REPEAT, g] and info[ACCEPTING, g]:
                    left = (top >> 32) & 0xFFFF  # the next iteration of a counted repetition
                    after = gnext[info[REP_START, g], sym]
                    if left > 0 and after >= 0:
                        needed = top >> 48
                        new = after | ((left - 1) << 32) | (max(needed - 1, 0) << 48)
            if new >= 0:
                # the parent level was stepped OK, so its `keep` is below its top and the frames
                # under the top are viable: only the new top's completion needs checking
                dep = lv[d - 1, DEP]
                v = dep + info[np.int64(new >= NEEDED_ONE), new & LOW32]
                if v > max_depth:
                    i = rec[i, R_END]
                    continue
                h = max(lv[d - 1, HEIGHT], v)
                lv[d, TOP] = new
                lv[d, REST] = lv[d - 1, REST]
                lv[d, POS] = lv[d - 1, POS]
                lv[d, DEP] = dep
                lv[d, KEEP] = lv[d - 1, KEEP]
                lv[d, HEIGHT] = h
                status = OK
            elif action == -1 and not info[ACCEPTING, g]:
                status = DEAD  # no action and nothing to return into: the common rejection
            elif action == -1 and lv[d - 1, POS] == 1 and not info[IS_REPEAT, g]:
                # an accepting top frame with no frame below returns out of the configuration:
                # open in a frame walk, a rejection otherwise (as `_general` decides, without
                # its call: every first byte of an accepting state comes here)
                status = OPEN if frame_mode else DEAD
            else:
                status = _step(d, sym, lv, cells, gnext, calls, info, ok_below, max_depth,
                                 max_steps, frame_mode, n_orig + d * stride)  # fmt: skip
                h = lv[d, HEIGHT]
            if status == OK:
                # branch-free for one token or none (a no-op write to word 0 when there is
                # none): whether a node ends a token is unpredictable, a mispredict per node
                # cost more than the write
                t = rec[i, R_TOK]
                one = t >= 0
                w = (t >> 5) if one else 0
                bit = (np.uint32(1) << np.uint32(t & 31)) if one else np.uint32(0)
                out_words[w] |= bit
                max_h = max(max_h, h if one else 0)
                if t == -2:
                    for t_at in range(token_start[i], token_start[i + 1]):
                        t2 = token_ids[t_at]
                        if byte_token[t2]:
                            out_words[t2 >> 5] |= np.uint32(1) << np.uint32(t2 & 31)
                            max_h = max(max_h, h)
                i += 1
            else:
                if status == OPEN:
                    open_roots[n_open] = i
                    n_open += 1
                elif by_byte and i == root:
                    dead[byte_depth & 255] = 1
                i = rec[i, R_END]
        r += 1
    io[IO_RANGE] = r
    io[IO_NODE] = -1
    io[IO_OPEN] = n_open
    io[IO_HEIGHT] = max_h
    return 1


_step = _general  # what `_walk` calls: the compiled `_general` once `_jitted` has run


@functools.cache
def _jitted():
    """The compiled walk. `_walk` calls `_step` as a global (numba caches a function that
    calls another compiled one; a function passed as an argument would be compiled again in
    every process), inlined: a call passed its nine arrays on every return and call a walk
    makes (the open roots of an accepting state are a return each), and a walk of the live
    stack of `{"xs":[{"n":1,"s":"ab"}` took 35 us instead of 27 us on Llama-3 (the first
    compilation takes 2 s longer, once per checkout: the code is cached on disk)."""
    from numba import njit

    global _step, _enter_now
    _step = njit(cache=True, nogil=True, inline="always")(_general)
    _enter_now = njit(cache=True, nogil=True)(_enter)
    return njit(cache=True, nogil=True)(_walk)


@functools.cache
def whole_trie() -> np.ndarray:
    """The roots of a walk of the whole trie (node 0), read-only."""
    out = np.zeros(1, dtype=np.int32)
    out.flags.writeable = False
    return out


def read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view: numba compiles one specialisation per array type and read-only is
    part of the type, so every array the kernel only reads is passed read-only, always."""
    if not array.flags.writeable:
        return array
    out = array.view()
    out.flags.writeable = False
    return out


# columns of a trie's node records (`node_records`): a node's byte | its depth << 8, the end of
# its subtree (preorder), its single byte-matched token (-1 none, -2 several)
R_BYTE_DEPTH, R_END, R_TOK = 0, 1, 2
RECORD_WIDTH = 4  # 16 bytes: a record never straddles a cache line


def records(node_byte, node_depth, subtree_end, node_tok) -> np.ndarray:
    """int32[n, RECORD_WIDTH], read-only: what a walk reads of each trie node in one record.
    The walk visits nodes in preorder and jumps over subtrees; with the fields in separate
    arrays a jump cost a cache line in each of them (on Llama-3, a walk skipping most of the
    trie took 3x as long as over records, in a prototype)."""
    out = np.zeros((node_byte.shape[0], RECORD_WIDTH), dtype=np.int32)
    out[:, R_BYTE_DEPTH] = np.asarray(node_byte, dtype=np.int32) | (
        np.asarray(node_depth, dtype=np.int32) << 8
    )
    out[:, R_END] = subtree_end
    out[:, R_TOK] = node_tok
    out.flags.writeable = False
    return out


def node_records(binding: Binding) -> np.ndarray:
    """The tokenizer trie's `records` for `binding`: shared by every binding whose byte tokens
    are the tokenizer's (most: no special token spelled with bytes), else its own."""
    shared = binding.node_tok is binding.vocab.node_tok
    lazy = binding.vocab._lazy if shared else binding._lazy
    found = lazy.get("node.records")
    if found is None:
        built = records(binding.node_byte, binding.node_depth, binding.subtree_end,
                        binding.node_tok)  # fmt: skip
        found = lazy.setdefault("node.records", built)
    return found


class KernelTables:
    """The binding's tables in the form the kernel reads (built once per binding, shared):
    read-only views, so that the kernel compiles once whatever the arrays' origin."""

    def __init__(self, binding: Binding) -> None:
        t = binding.tables
        longest = binding.trie_depth
        calls = np.zeros((t.calls.shape[0], 4), dtype=np.int64)
        calls[:, :2] = t.calls
        calls[:, 2] = np.minimum(t.call_entry[:, 0], longest)  # counters clipped on push
        calls[:, 3] = np.minimum(t.call_entry[:, 1], longest + 1)
        info = np.stack(
            [
                t.need,
                t.need_more,
                t.cost,
                t.is_repeat.astype(np.int64),
                t.rep_start,
                t.accepting.astype(np.int64),
            ]  # fmt: skip
        ).astype(np.int64)
        self.arrays = tuple(
            read_only(np.ascontiguousarray(a))
            for a in (
                t.next,
                calls,
                info,
                t.byte_class,
                node_records(binding),
                binding.parent,
                binding.token_start,
                binding.token_ids,
                binding.byte_token,
            )  # fmt: skip
        )
        self.calls, self.info = self.arrays[1], self.arrays[2]
        self.byte_token = self.arrays[-1]
        self.stride = int(t.max_steps) + 1  # cells one step can write
        self.max_frames = int(t.max_frames)
        self.max_depth = int(t.max_depth)
        self.max_steps = int(t.max_steps)

    @staticmethod
    def of(binding: Binding) -> KernelTables:
        return binding.derived("kernel", KernelTables)


class Scratch:
    """Per-matcher work buffers for the kernel (never shared between threads)."""

    def __init__(self, binding: Binding) -> None:
        kt = KernelTables.of(binding)
        levels = binding.trie_depth + 1
        cap = kt.max_frames + 1
        self.lv = np.zeros((levels, 8), dtype=np.int64)
        self.cells = np.zeros((2, cap + (levels + 1) * kt.stride), dtype=np.int64)
        self.path = np.zeros(levels, dtype=np.int32)
        self.orig = np.zeros(cap, dtype=np.int64)
        self.ok_below = np.zeros(cap + 1, dtype=np.bool_)
        n_nodes = binding.node_byte.shape[0]
        # the whole trie, then open roots found by a frame walk, then the first-level nodes a
        # frame walk of `_cold` starts from (at most 256)
        self.ro = np.zeros(n_nodes + 1 + 256, dtype=np.int32)
        self.open_roots = self.ro[1 : n_nodes + 1]
        self.io = np.zeros(4, dtype=np.int64)
        self.words = np.empty(binding.n_words, dtype=np.uint32)  # a mask while it is computed
        self.entry = np.empty(binding.n_words, dtype=np.uint32)  # an entry walked, not kept
        self.params = np.zeros(8, dtype=np.int64)
        self.params[P_MAX_DEPTH] = kt.max_depth
        self.params[P_MAX_STEPS] = kt.max_steps
        self.params[P_STRIDE] = kt.stride
        self.params[P_BUDGET] = CHUNK_NODES
        self.kernel = kt
        self.binding = binding
        self._levels, self._cap = levels, cap

    @functools.cached_property
    def live(self) -> LiveTables:
        """The binding's packed tables, for `cold_mask` (built with its first call)."""
        return LiveTables.of(self.binding)

    @functools.cached_property
    def sc(self) -> np.ndarray:
        """The packed scratch of `_cold` (`C_*` header, then the regions `_live_views`
        reads), made with the first `cold_mask`; `orig_at` is where the keys go."""
        levels, cap, n_cells = self._levels, self._cap, self.cells.shape[1]
        sc = np.zeros(C_HEADER + 16 + 8 * levels + 2 * n_cells + levels + 2 * cap + 1,
                      dtype=np.int64)  # fmt: skip
        sc[C_LEVELS], sc[C_CELLS], sc[C_CAP] = levels, n_cells, cap
        params = sc[C_HEADER : C_HEADER + 8]
        params[P_MAX_DEPTH] = self.kernel.max_depth
        params[P_MAX_STEPS] = self.kernel.max_steps
        params[P_STRIDE] = self.kernel.stride
        params[P_BUDGET] = CHUNK_NODES
        self.orig_at = C_HEADER + 16 + 8 * levels + 2 * n_cells + levels
        return sc


def _require(name: str, array: np.ndarray, dtype, ndim: int) -> None:
    if not isinstance(array, np.ndarray):
        raise TypeError(f"{name}: expected a numpy array, got {type(array).__name__}")
    if array.dtype != np.dtype(dtype):
        raise TypeError(f"{name}: expected dtype {np.dtype(dtype)}, got {array.dtype}")
    if array.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimensions, got {array.ndim}")
    if not array.flags.c_contiguous:
        raise ValueError(f"{name}: expected a C-contiguous array")


def run_walk(
    binding: Binding,
    keys: Config,
    out_words: np.ndarray,
    scratch: Scratch,
    roots: np.ndarray,
    frame_mode: bool,
    skip: np.ndarray | None,
    trie: tuple[np.ndarray, ...] | None = None,
) -> tuple[int, int]:
    """`walk_trie` on trusted inputs (the engine's own calls): (open roots found, height). The
    open roots are `scratch.open_roots[:n]`, valid until the scratch's next walk. `trie`
    replaces the tokenizer's trie (its node records, parents, token starts and ids, in
    `KernelTables` order: a tail trie, `trgc.engine.tails`)."""
    kt = scratch.kernel
    arrays = kt.arrays if trie is None else (*kt.arrays[:4], *trie, kt.byte_token)
    n = len(keys)
    scratch.orig[:n] = keys
    params = scratch.params
    params[P_N_ORIG] = n
    params[P_FRAME_MODE] = frame_mode
    params[P_USE_SKIP] = skip is not None
    params[P_OPEN_ROOTS] = 0
    io = scratch.io
    io[:] = (0, -1, 0, 0)
    walk = _jitted()
    args = (
        params, scratch.orig, read_only(roots), *arrays,
        kt.byte_token if skip is None else read_only(skip), scratch.lv, scratch.cells,
        scratch.path, scratch.ok_below, out_words, scratch.open_roots, io, scratch.ro[-256:],
    )  # fmt: skip
    while not walk(*args):
        cancellation_checkpoint()
    return int(io[IO_OPEN]), int(io[IO_HEIGHT])


def walk_trie(
    binding: Binding,
    keys: Config,
    out_words: np.ndarray,
    scratch: Scratch,
    *,
    roots: np.ndarray | None = None,
    frame_mode: bool = False,
    skip: np.ndarray | None = None,
) -> tuple[np.ndarray, int]:
    """OR into `out_words` the byte tokens viable from the configuration whose frame keys are
    `keys` (`trgc.engine.config.mask_key` with the binding's longest token); return the open
    roots and the height an allowed token needs: the largest `rule frames up to it + need` of a
    frame it rewrites or pushes (at least the rule frames of `config`), so that it stays viable
    on a stack with `B` more rule frames below when `B + height <= max_depth`.

    With `roots` (int32 trie nodes, preorder, disjoint subtrees) only the tokens in those
    subtrees are decided. With `frame_mode`, `keys` is one frame whose callers are unknown:
    a subtree whose first byte needs to return out of it is not walked but returned as an
    open root. With `skip` (bool per trie node), subtrees whose node is flagged are not walked
    (the caller has decided their tokens, see `trgc.engine.slices`).
    """
    n_words = binding.n_words
    n_nodes = binding.node_byte.shape[0]
    _require("out_words", out_words, np.uint32, 1)
    if out_words.shape[0] != n_words:
        raise ValueError(f"out_words: expected {n_words} words, got {out_words.shape[0]}")
    if roots is None:
        roots = whole_trie()
    else:
        _require("roots", roots, np.int32, 1)
        if roots.size and not (int(roots.min()) > 0 and int(roots.max()) < n_nodes):
            raise ValueError(f"roots: expected trie nodes in [1, {n_nodes})")
    if skip is not None:
        _require("skip", skip, np.bool_, 1)
        if skip.shape[0] != n_nodes:
            raise ValueError(f"skip: expected {n_nodes} flags, got {skip.shape[0]}")
    if not keys or len(keys) > binding.tables.max_frames:
        raise ValueError(f"keys: expected 1..{binding.tables.max_frames} frames, got {len(keys)}")
    if scratch.binding is not binding:
        raise ValueError("scratch: made for another binding")
    n_open, height = run_walk(binding, keys, out_words, scratch, roots, frame_mode, skip)
    return scratch.open_roots[:n_open].copy(), height


def add_symbol_tokens(binding: Binding, config: Config, words: np.ndarray) -> None:
    """Set the bits of the special tokens the grammar admits at `config`, and of EOS when the
    configuration is accepting (a handful of `step` calls; not worth a kernel)."""
    tables = binding.tables
    for token, sym in zip(binding.special_ids.tolist(), binding.special_syms.tolist(), strict=True):
        if step(tables, config, sym) is not None:
            words[token >> 5] |= np.uint32(1 << (token & 31))
    if is_accepting(tables, config):
        for token in binding.eos_ids.tolist():
            words[token >> 5] |= np.uint32(1 << (token & 31))


def mask_words(binding: Binding, config: Config | None, scratch: Scratch) -> np.ndarray:
    """uint32 words of the tokens allowed at `config` (None = terminated: nothing allowed)."""
    words = np.zeros(binding.n_words, dtype=np.uint32)
    if config is None:
        return words
    run_walk(binding, mask_key(config, binding.trie_depth), words, scratch, whole_trie(),
             False, None)  # fmt: skip
    add_symbol_tokens(binding, config, words)
    return words


def allowed_mask(binding: Binding, config: Config | None, token_ids=None) -> np.ndarray:
    """bool[V], same contract as `trgc.engine.reference.allowed_mask` (the oracle)."""
    allowed = unpack(mask_words(binding, config, Scratch(binding)), binding.vocab_size)
    if token_ids is not None:
        keep = np.zeros(binding.vocab_size, dtype=np.bool_)
        keep[np.fromiter(token_ids, dtype=np.int64)] = True
        allowed &= keep | ~binding.byte_token
    return allowed


# -- the cold mask in one compiled call ---------------------------------------------------
#
# A mask the caches do not hold costs, besides its walks, the Python around them: one numba
# call per walk with 23 arguments (each argument is type-checked at every call), the frame
# entry, the combine, the special tokens. `_cold` does all of it in one call over a few packed
# arrays: the binding's tables in one int64 array (`LiveTables.tab`), the trie in one int32
# array (per tokenizer), the per-matcher scratch in one int64 array (`Scratch.sc`). It is
# defined here, next to `_walk`, because numba's cache tracks the file of the function it
# caches and not the files of the functions it calls.

# header of `LiveTables.tab`: sizes, then where each table starts
(T_G, T_S, T_K, T_NSPEC, T_NEOS, T_NEXT, T_CALLS, T_INFO, T_CLASS, T_SPEC_IDS, T_SPEC_SYMS,
 T_EOS, T_CALLER, T_PLAIN, T_MAX_DEPTH, T_MAX_STEPS, T_STRIDE, T_WORDS) = range(18)  # fmt: skip
T_HEADER = 18
# header of the packed trie (int32): node count, token-id count, first-level node count
R_NODES, R_TOKENS, R_FIRST = 0, 1, 2
R_HEADER = 3
# control cells at the start of `Scratch.sc`
(C_N, C_MODE, C_PHASE, C_NOPEN, C_HEIGHT, C_DIRECT, C_NROOTS, C_LEVELS, C_CELLS,
 C_CAP, C_TRACE, C_NFIRST) = range(12)  # fmt: skip
C_HEADER = 16
MODE_KNOWN, MODE_COMPUTE = 0, 1  # the top frame's entry is given, or computed in the call
PH_BEGIN, PH_FRAME, PH_COMBINE, PH_ROOTS, PH_FULL, PH_SYMBOLS = range(6)


def _live_views(tab, trie, sc):
    """The tables, trie arrays and scratch regions `_cold` reads, as views of the packed
    arrays (no copies)."""
    n_g = tab[T_G]
    n_s = tab[T_S]
    n_k = tab[T_K]
    gnext = tab[tab[T_NEXT] : tab[T_NEXT] + n_g * n_s].reshape((n_g, n_s))
    calls = tab[tab[T_CALLS] : tab[T_CALLS] + 4 * n_k].reshape((n_k, 4))
    info = tab[tab[T_INFO] : tab[T_INFO] + 6 * n_g].reshape((6, n_g))
    n_nodes = trie[R_NODES]
    n_tok = trie[R_TOKENS]
    o = R_HEADER
    parent = trie[o : o + n_nodes]
    token_start = trie[o + n_nodes : o + 2 * n_nodes + 1]
    token_ids = trie[o + 2 * n_nodes + 1 : o + 2 * n_nodes + 1 + n_tok]
    o += 2 * n_nodes + 1 + n_tok
    n_first = trie[R_FIRST]
    first_nodes = trie[o : o + n_first]
    first_bytes = trie[o + n_first : o + 2 * n_first]
    levels = sc[C_LEVELS]
    n_cells = sc[C_CELLS]
    cap = sc[C_CAP]
    o = C_HEADER
    params = sc[o : o + 8]
    io = sc[o + 8 : o + 12]
    one = sc[o + 12 : o + 13]
    o += 16
    lv = sc[o : o + 8 * levels].reshape((levels, 8))
    o += 8 * levels
    cells = sc[o : o + 2 * n_cells].reshape((2, n_cells))
    o += 2 * n_cells
    path = sc[o : o + levels]
    o += levels
    orig = sc[o : o + cap]
    o += cap
    ok_below = sc[o : o + cap + 1]
    return (gnext, calls, info, parent, token_start, token_ids, first_nodes, first_bytes, params,
            io, one, lv, cells, path, orig, ok_below)  # fmt: skip


def _cold(tab, trie, rec, byte_token, sc, ro, known_words, known_roots, new_words, words):
    """The mask at the configuration `orig[:n]` of `sc` (frame keys) into `words`: the top
    frame's entry (given as `known_words`/`known_roots`/height, or walked now into `new_words`
    and the open roots at `ro[1:]` in `MODE_COMPUTE`), combined with a walk of its open roots
    from the live stack, a full walk when the stack is too close to `max_depth`, then the
    special tokens and EOS. Resumable like `_walk`: 0 when a chunk's budget ran out (call
    again), 1 when done. `C_DIRECT` is set when the entry's accept set alone is the mask (then
    `words` is not written); `C_TRACE` collects `1 << phase` of the phases run (`phases_run`)."""
    (gnext, calls, info, parent, token_start, token_ids, first_nodes, first_bytes, params, io,
     one, lv, cells, path, orig, ok_below) = _live_views(tab, trie, sc)  # fmt: skip
    byte_class = tab[tab[T_CLASS] : tab[T_CLASS] + 256]
    max_depth = tab[T_MAX_DEPTH]
    n = sc[C_N]
    n_nodes = trie[R_NODES]
    whole = ro[0:1]
    open_out = ro[1 : n_nodes + 1]
    firsts = ro[n_nodes + 1 :]
    top = orig[n - 1]
    g = top & LOW32
    while True:
        phase = sc[C_PHASE]
        sc[C_TRACE] |= 1 << phase
        if phase == PH_BEGIN:
            sc[C_DIRECT] = 0
            if sc[C_MODE] == MODE_COMPUTE:
                new_words[:] = 0
                one[0] = top
                params[P_N_ORIG] = 1
                params[P_FRAME_MODE] = tab[tab[T_CALLER] + g]
                params[P_USE_SKIP] = 0
                params[P_OPEN_ROOTS] = 0
                io[0], io[1], io[2], io[3] = 0, -1, 0, 0
                # the first-level nodes the frame walk can accept: a state that does not
                # accept rejects every first byte it has no action on (as the walk would, at
                # the cost of three loads scattered over the trie per first-level node)
                accepting = info[ACCEPTING, g] != 0
                k = 0
                for f in range(first_nodes.shape[0]):
                    if accepting or gnext[g, byte_class[first_bytes[f]]] != -1:
                        firsts[k] = first_nodes[f]
                        k += 1
                sc[C_NFIRST] = k
                sc[C_PHASE] = PH_FRAME
            else:
                sc[C_PHASE] = PH_COMBINE
        elif phase == PH_FRAME:
            if not _walk_step(params, one, firsts[: sc[C_NFIRST]], gnext, calls, info,
                              byte_class, rec, parent, token_start, token_ids, byte_token,
                              byte_token, lv, cells, path, ok_below, new_words, open_out,
                              io, firsts):  # fmt: skip
                return 0
            sc[C_NOPEN] = io[IO_OPEN]
            sc[C_HEIGHT] = max(io[IO_HEIGHT], info[COST, g])
            sc[C_PHASE] = PH_COMBINE
        elif phase == PH_COMBINE:
            computed = sc[C_MODE] == MODE_COMPUTE
            n_roots = sc[C_NOPEN] if computed else sc[C_NROOTS]
            below = 0
            viable = True
            for p in range(n - 1):
                frame = orig[p]
                gp = frame & LOW32
                below += info[COST, gp]
                nd = info[NEED_MORE, gp] if frame >> 48 else info[NEED, gp]
                if below + nd > max_depth:
                    viable = False
            io[0], io[1], io[2], io[3] = 0, -1, 0, 0
            params[P_N_ORIG] = n
            params[P_FRAME_MODE] = 0
            params[P_USE_SKIP] = 0
            params[P_OPEN_ROOTS] = 1  # the roots phase walks the entry's open roots
            if below + sc[C_HEIGHT] > max_depth or not viable:
                words[:] = 0
                params[P_OPEN_ROOTS] = 0
                sc[C_PHASE] = PH_FULL
            elif (n == 1 or n_roots == 0) and tab[tab[T_PLAIN] + g]:
                sc[C_DIRECT] = 1  # the accept set is the whole mask
                sc[C_PHASE] = PH_BEGIN
                return 1
            else:
                if computed:
                    words[:] = new_words
                else:
                    words[:] = known_words
                sc[C_PHASE] = PH_ROOTS if n > 1 and n_roots > 0 else PH_SYMBOLS
        elif phase == PH_ROOTS and sc[C_MODE] == MODE_KNOWN:
            if not _walk_step(params, orig, known_roots, gnext, calls, info, byte_class, rec,
                              parent, token_start, token_ids, byte_token, byte_token, lv, cells,
                              path, ok_below, words, open_out, io, firsts):  # fmt: skip
                return 0
            sc[C_PHASE] = PH_SYMBOLS
        elif phase in (PH_ROOTS, PH_FULL):
            roots = whole if phase == PH_FULL else open_out[: sc[C_NOPEN]]
            if not _walk_step(params, orig, roots, gnext, calls, info, byte_class, rec, parent,
                              token_start, token_ids, byte_token, byte_token, lv, cells, path,
                              ok_below, words, open_out, io, firsts):  # fmt: skip
                return 0
            sc[C_PHASE] = PH_SYMBOLS
        else:
            _symbols(tab, n, gnext, calls, info, lv, cells, orig, ok_below, words)
            sc[C_PHASE] = PH_BEGIN
            return 1


def _symbols(tab, n, gnext, calls, info, lv, cells, orig, ok_below, words):
    """Set the special tokens the grammar admits at `orig[:n]` and, when every frame may end
    there, the EOS ids (`add_symbol_tokens`, compiled)."""
    max_depth = tab[T_MAX_DEPTH]
    n_spec = tab[T_NSPEC]
    if n_spec:
        _enter_now(orig, n, info, max_depth, ok_below, cells, lv)
        for k in range(n_spec):
            sym = tab[tab[T_SPEC_SYMS] + k]
            status = _step(1, sym, lv, cells, gnext, calls, info, ok_below, max_depth,
                           tab[T_MAX_STEPS], False, n + tab[T_STRIDE])  # fmt: skip
            if status == OK:
                t = tab[tab[T_SPEC_IDS] + k]
                words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
    for p in range(n):
        frame = orig[p]
        if not info[ACCEPTING, frame & LOW32] or frame >= NEEDED_ONE:
            return
    for k in range(tab[T_NEOS]):
        t = tab[tab[T_EOS] + k]
        words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)


_walk_step = _walk  # what `_cold` calls: the compiled `_walk` once `_cold_jitted` has run


@functools.cache
def _cold_jitted():
    """The compiled `_cold` (its callees are compiled globals, as for `_walk`)."""
    from numba import njit

    global _walk_step, _symbols, _live_views
    _walk_step = _jitted()
    _live_views = njit(cache=True, nogil=True)(_live_views)
    _symbols = njit(cache=True, nogil=True)(_symbols)
    return njit(cache=True, nogil=True)(_cold)


def _packed(parts: list[np.ndarray], header: list[int], dtype) -> tuple[np.ndarray, list[int]]:
    """`header` then every part, flattened into one read-only array; the parts' offsets."""
    offsets = []
    at = len(header)
    for part in parts:
        offsets.append(at)
        at += part.size
    out = np.empty(at, dtype=dtype)
    out[: len(header)] = header
    for part, start in zip(parts, offsets, strict=True):
        out[start : start + part.size] = part.reshape(-1)
    return out, offsets


def live_trie(binding: Binding) -> np.ndarray:
    """The tokenizer's trie packed for `_cold` (int32, read-only; built once per tokenizer)."""
    shared = binding.vocab._lazy
    found = shared.get("live.trie")
    if found is None:
        first = np.flatnonzero(binding.node_depth == 1)  # preorder: ascending bytes
        parts = [binding.parent, binding.token_start, binding.token_ids, first,
                 binding.node_byte[first]]  # fmt: skip
        header = [int(binding.node_byte.shape[0]), int(binding.token_ids.shape[0]), first.size]
        found, _ = _packed([np.asarray(a, dtype=np.int32) for a in parts], header, np.int32)
        found.flags.writeable = False
        found = shared.setdefault("live.trie", found)
    return found


class LiveTables:
    """The binding's tables packed for `_cold` (built once per binding, shared): one int64
    array (`tab`, header `T_*`) and the tokenizer's packed trie."""

    def __init__(self, binding: Binding) -> None:
        from trgc.engine.precompute import plain_states  # precompute imports this module

        kt = KernelTables.of(binding)
        t = binding.tables
        parts = [t.next, kt.calls, kt.info, t.byte_class, binding.special_ids,
                 binding.special_syms, binding.eos_ids, t.has_caller, plain_states(binding)]  # fmt: skip
        header = [0] * T_HEADER
        header[T_G], header[T_S] = (int(v) for v in t.next.shape)
        header[T_K] = int(kt.calls.shape[0])
        header[T_NSPEC] = int(binding.special_ids.shape[0])
        header[T_NEOS] = int(binding.eos_ids.shape[0])
        header[T_MAX_DEPTH], header[T_MAX_STEPS] = kt.max_depth, kt.max_steps
        header[T_STRIDE], header[T_WORDS] = kt.stride, binding.n_words
        tab, at = _packed([np.asarray(a, dtype=np.int64) for a in parts], header, np.int64)
        for field, start in zip((T_NEXT, T_CALLS, T_INFO, T_CLASS, T_SPEC_IDS, T_SPEC_SYMS,
                                 T_EOS, T_CALLER, T_PLAIN), at, strict=True):  # fmt: skip
            tab[field] = start
        tab.flags.writeable = False
        self.tab = tab
        self.trie = live_trie(binding)
        self.rec = node_records(binding)
        self.byte_token = read_only(binding.byte_token)

    @staticmethod
    def of(binding: Binding) -> LiveTables:
        return binding.derived("live", LiveTables)


_NO_WORDS = np.zeros(0, dtype=np.uint32)
_NO_ROOTS = np.zeros(0, dtype=np.int32)
_NO_ROOTS.flags.writeable = False
_NO_KNOWN = np.zeros(0, dtype=np.uint32)
_NO_KNOWN.flags.writeable = False


def cold_mask(
    scratch: Scratch,
    keys: Config,
    words: np.ndarray,
    known=None,
    new_words: np.ndarray | None = None,
) -> bool:
    """The mask at the configuration whose frame keys are `keys` (`mask_key`), in one compiled
    call (`_cold`; more only when a walk is longer than a chunk, with a cancellation checkpoint
    between): with `known`, the top frame's `FrameEntry`, else that entry is walked now into
    `new_words` (fresh uint32 words) and its open roots and height are left in
    the scratch (`computed_entry`). Writes `words` and returns False, or returns True without
    writing them when the entry's accept set alone is the mask (a direct row)."""
    live = scratch.live
    sc = scratch.sc
    n = len(keys)
    o = scratch.orig_at
    if n == 1:  # most configurations: an item is cheaper to set than a slice
        sc[o] = keys[0]
    else:
        sc[o : o + n] = keys
    sc[C_N] = n
    sc[C_PHASE] = PH_BEGIN
    sc[C_TRACE] = 0
    if known is None:
        sc[C_MODE] = MODE_COMPUTE
        known_words, known_roots = _NO_KNOWN, _NO_ROOTS
    else:
        sc[C_MODE] = MODE_KNOWN
        sc[C_HEIGHT] = known.height
        known_words, known_roots = read_only(known.accept), read_only(known.open_roots)
        sc[C_NROOTS] = known_roots.shape[0]
        new_words = _NO_WORDS
    cold = _cold_jitted()
    args = (live.tab, live.trie, live.rec, live.byte_token, sc, scratch.ro, known_words,
            known_roots, new_words, words)  # fmt: skip
    while not cold(*args):
        cancellation_checkpoint()
    return sc.item(C_DIRECT) != 0


def walked_mask(scratch: Scratch, top: int) -> np.ndarray:
    """The mask of the one-frame configuration `(top,)` (a frame key without counters),
    walked with its entry by `cold_mask` into the scratch: its entry's buffer when the accept
    set is the whole mask, else its words (a full walk near `max_depth`). Valid until the
    scratch's next walk."""
    if cold_mask(scratch, (top,), scratch.words, None, scratch.entry):
        return scratch.entry
    return scratch.words


def one_frame_masks(binding: Binding, tops: list[int]) -> list[np.ndarray]:
    """`walked_mask` of each of `tops`, as new arrays, over a scratch of their own, so that a
    thread other than the matcher's can call it (the mask store's publisher:
    `MaskStore.add_walked`)."""
    scratch = Scratch(binding)
    return [walked_mask(scratch, top).copy() for top in tops]


def computed_entry(scratch: Scratch) -> tuple[np.ndarray, int]:
    """(open roots, height) of the entry the last `cold_mask` without `known` walked."""
    sc = scratch.sc
    n_open = sc.item(C_NOPEN)  # a Python int, without a numpy scalar on the way
    if not n_open:  # most cheap frames: one shared empty array
        return _NO_ROOTS, sc.item(C_HEIGHT)
    roots = scratch.ro[1 : 1 + n_open].copy()
    roots.setflags(write=False)
    return roots, sc.item(C_HEIGHT)


def phases_run(scratch: Scratch) -> set[int]:
    """The `PH_*` phases the last `cold_mask` over `scratch` went through (tests use it to
    show that every branch of `_cold` was compared with the reference)."""
    trace = int(scratch.sc[C_TRACE])
    return {p for p in range(PH_SYMBOLS + 1) if trace >> p & 1}
