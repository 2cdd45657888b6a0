"""trgc.torch: XGrammar-layout bitmasks for torch code; fill_bitmask on torch tensors."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import trgc  # noqa: E402
from engine_fixtures import STRUCTURAL, structural_table  # noqa: E402
from trgc.engine.bits import n_words  # noqa: E402
from trgc.engine.cache import MaskCache  # noqa: E402
from trgc.errors import TrgcError  # noqa: E402
from trgc.torch import (  # noqa: E402
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
    fill_next_token_bitmask,
)

TOK = structural_table()
ID = {piece: i for i, piece in enumerate(STRUCTURAL)}
LIST = '%trg 1\n%start s\ns ::= "[" ( "x" ( "," "x" )* )? "]" ;\n'
PREFIXES = [[], [ID[b"["]], [ID[b"[x"]], [ID[b"[x"], ID[b","]], [ID[b"[x]"]]]


def matchers(cache: MaskCache | None = None) -> list[trgc.Matcher]:
    art = trgc.compile_grammar(LIST)
    out = []
    for prefix in PREFIXES * 4:
        m = trgc.Matcher(art, TOK, cache=cache)
        for t in prefix:
            m.advance(t)
        out.append(m)
    return out


def test_import_does_not_load_torch():
    code = "import sys, trgc.torch; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_allocate_is_all_allowed_int32():
    mask = allocate_token_bitmask(3, 100)
    assert mask.dtype == torch.int32 and tuple(mask.shape) == (3, 4) and (mask == -1).all()
    with pytest.raises(TrgcError) as err:
        allocate_token_bitmask(0, 100)
    assert err.value.code == "E_ARGUMENT_TYPE"


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_fill_many_rows_equals_each_matchers_mask(threads):
    ms = matchers(MaskCache())  # one cache shared across the fill threads
    mask = allocate_token_bitmask(len(ms) + 1, TOK.vocab_size)
    fill_next_token_bitmask(ms, mask, threads=threads)
    for row, m in enumerate(ms):
        assert (mask[row].numpy() == m.allowed_tokens_packed()).all()
    assert (mask[len(ms)] == -1).all()  # rows without a matcher are left alone


def test_fill_with_indices_none_and_bad_rows():
    ms = matchers()[:3]
    mask = allocate_token_bitmask(6, TOK.vocab_size)
    fill_next_token_bitmask([ms[0], None, ms[2]], mask, indices=[5, 0, 2], threads=2)
    assert (mask[5].numpy() == ms[0].allowed_tokens_packed()).all()
    assert (mask[2].numpy() == ms[2].allowed_tokens_packed()).all()
    assert (mask[[0, 1, 3, 4]] == -1).all()
    for indices in ([0, 0, 1], [0, 1], [0, 1, 6]):
        with pytest.raises(TrgcError) as err:
            fill_next_token_bitmask(ms, mask, indices=indices)
        assert err.value.code == "E_BITMASK_BUFFER"


def test_fill_bitmask_accepts_cpu_tensors_and_refuses_wrong_ones():
    m = matchers()[1]
    buffer = torch.zeros((2, n_words(TOK.vocab_size)), dtype=torch.int32)
    m.fill_bitmask(buffer, 1)
    assert (buffer[1].numpy() == m.allowed_tokens_packed()).all() and not buffer[0].any()
    for bad in (
        torch.zeros((2, n_words(TOK.vocab_size)), dtype=torch.int64),
        torch.zeros((n_words(TOK.vocab_size), 2), dtype=torch.int32).T,
    ):
        with pytest.raises(TrgcError) as err:
            m.fill_bitmask(bad)
        assert err.value.code == "E_BITMASK_BUFFER"


def reference_apply(logits: np.ndarray, words: np.ndarray) -> np.ndarray:
    out = logits.copy()
    for r in range(out.shape[0]):
        for t in range(out.shape[1]):
            w = t // 32
            if w >= words.shape[1] or not (int(words[r, w]) >> (t % 32)) & 1:
                out[r, t] = -np.inf
    return out


def test_apply_matches_a_plain_loop_including_padded_columns():
    rng = np.random.default_rng(3)
    words = rng.integers(-(2**31), 2**31, size=(3, 2), dtype=np.int64).astype(np.int32)
    logits = rng.normal(size=(3, 77)).astype(np.float32)  # 13 columns past the 64 covered
    got = torch.from_numpy(logits.copy())
    apply_token_bitmask_inplace(got, torch.from_numpy(words))
    assert np.array_equal(got.numpy(), reference_apply(logits, words))


def test_apply_with_indices_touches_only_those_rows():
    rng = np.random.default_rng(4)
    words = rng.integers(-(2**31), 2**31, size=(2, 3), dtype=np.int64).astype(np.int32)
    logits = rng.normal(size=(4, 96)).astype(np.float32)
    got = torch.from_numpy(logits.copy())
    apply_token_bitmask_inplace(got, words, indices=[3, 1])
    want = logits.copy()
    want[[3, 1]] = reference_apply(logits[[3, 1]], words)
    assert np.array_equal(got.numpy(), want)
    with pytest.raises(TrgcError) as err:
        apply_token_bitmask_inplace(got, words, indices=[4, 1])
    assert err.value.code == "E_BITMASK_BUFFER"
    with pytest.raises(TrgcError) as err:
        apply_token_bitmask_inplace(got, words.astype(np.int64))
    assert err.value.code == "E_BITMASK_BUFFER"


def test_the_torch_path_agrees_with_the_numpy_path():
    """bfloat16 and grad-tracking logits take torch ops (the path other devices use)."""
    rng = np.random.default_rng(5)
    words = rng.integers(-(2**31), 2**31, size=(3, 2), dtype=np.int64).astype(np.int32)
    logits = rng.normal(size=(3, 70)).astype(np.float32)
    want = np.isneginf(reference_apply(logits, words))
    tensor = torch.from_numpy(logits.copy()).to(torch.bfloat16)
    apply_token_bitmask_inplace(tensor, torch.from_numpy(words))
    assert np.array_equal(torch.isneginf(tensor).numpy(), want)
    leaf = torch.from_numpy(logits.copy()).requires_grad_(True)
    with torch.no_grad():
        apply_token_bitmask_inplace(leaf, torch.from_numpy(words))
    assert np.array_equal(torch.isneginf(leaf.detach()).numpy(), want)
    masked = torch.from_numpy(logits.copy()).to(torch.bfloat16)
    apply_token_bitmask_inplace(masked, words[[2, 0]], indices=[0, 2])
    assert np.array_equal(torch.isneginf(masked).numpy()[[0, 2]], want[[2, 0]])
    assert not torch.isneginf(masked[1]).any()
