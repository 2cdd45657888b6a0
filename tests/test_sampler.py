"""Every edge case of the normative sampler, by name (report: "Sampling order and edge cases")."""

from __future__ import annotations

import math

import numpy as np
import pytest

from trgc.decode.rng import Xoshiro256StarStar
from trgc.decode.sampler import (
    STOP_EMPTY_SET,
    STOP_EOS,
    STOP_EOS_FORCED,
    STOP_POSITIVE_INFINITY,
    STOP_SAMPLING_FAILURE,
    SamplerSettings,
    StepLogits,
    sample,
    summarize,
)
from trgc.errors import TrgcError

V = 8
EOS = (7,)


def run(logits, allowed, *, accepting=True, seed=1, counts=None, **settings):
    logits = np.asarray(logits, dtype=np.float64)
    ids = np.asarray(allowed, dtype=np.int64)
    rng = Xoshiro256StarStar.from_seed(seed)
    decision = sample(
        ids,
        summarize(logits, ids),
        eos_ids=EOS,
        accepting=accepting,
        settings=SamplerSettings(**settings),
        counts=np.zeros(V, dtype=np.int64) if counts is None else np.asarray(counts),
        rng=rng,
    )
    return decision, rng


def test_nan_logits_are_forbidden_and_counted():
    logits = [5.0, math.nan, 1.0, math.nan, 0.0, 0.0, 0.0, 0.0]
    for seed in range(50):
        decision, _ = run(logits, [1, 2, 3], seed=seed)
        assert decision.token == 2  # the only allowed non-NaN token
        assert decision.nan == 2  # counted over the whole vocabulary, allowed or not


def test_all_allowed_nan_is_sampling_failure():
    decision, rng = run([0.0, math.nan, math.nan, 0, 0, 0, 0, 0], [1, 2])
    assert decision.stop == STOP_SAMPLING_FAILURE and decision.token is None and rng.draws == 0


@pytest.mark.parametrize("where", [0, 3])  # disallowed and allowed positions
def test_positive_infinity_is_an_explicit_failure(where):
    logits = [0.0] * V
    logits[where] = math.inf
    decision, rng = run(logits, [1, 2, 3])
    assert decision.stop == STOP_POSITIVE_INFINITY and decision.token is None and rng.draws == 0


def test_negative_infinity_is_zero_mass():
    decision, _ = run([0.0, -math.inf, 2.0, 0, 0, 0, 0, 0], [1, 2], temperature=1.0)
    assert decision.token == 2


def test_all_surviving_logits_negative_infinity_is_sampling_failure():
    decision, _ = run([0.0, -math.inf, -math.inf, 0, 0, 0, 0, 0], [1, 2])
    assert decision.stop == STOP_SAMPLING_FAILURE
    decision, _ = run([0.0, -math.inf, -math.inf, 0, 0, 0, 0, 0], [1, 2], temperature=0)
    assert decision.stop == STOP_SAMPLING_FAILURE


def test_grammar_mask_is_respected():
    logits = [9.0, 0.0, 0.0, 9.0, 0.0, 0.0, 0.0, 9.0]
    seen = {run(logits, [1, 2], seed=s)[0].token for s in range(200)}
    assert seen == {1, 2}


def test_empty_set_is_constraint_empty_set():
    decision, rng = run([0.0] * V, [])
    assert decision.stop == STOP_EMPTY_SET and decision.token is None and rng.draws == 0


def test_eos_impossible_before_accepting_state():
    # A (buggy) constraint offering EOS in a non-accepting state: the sampler removes it.
    logits = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 50.0]
    for seed in range(20):
        assert run(logits, [2, 7], accepting=False, seed=seed)[0].token == 2
    decision, _ = run(logits, [7], accepting=False)
    assert decision.stop == STOP_EMPTY_SET


def test_only_eos_allowed_stops_without_a_draw():
    decision, rng = run([0.0] * V, [7], accepting=True)
    assert decision.stop == STOP_EOS_FORCED and decision.token == 7 and decision.draw is None
    assert rng.draws == 0


def test_policy_mask_bans_tokens_after_the_grammar():
    logits = [0.0, 10.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    for seed in range(20):
        assert run(logits, [1, 2], seed=seed, banned_ids=(1,))[0].token == 2
    # policy leaves only EOS: stop without a draw
    decision, rng = run(logits, [1, 7], banned_ids=(1,))
    assert decision.stop == STOP_EOS_FORCED and rng.draws == 0
    # policy removes everything: all mass removed
    decision, _ = run(logits, [1, 2], banned_ids=(1, 2))
    assert decision.stop == STOP_SAMPLING_FAILURE


def test_drawn_eos_stops_with_eos():
    decision, rng = run([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 30.0], [1, 7], accepting=True)
    assert decision.stop == STOP_EOS and decision.token == 7 and rng.draws == 1


def test_temperature_zero_is_argmax_ties_to_smallest_id():
    logits = [0.0, 3.0, 5.0, 5.0, 1.0, 5.0, 0.0, 0.0]
    decision, rng = run(logits, [1, 2, 3, 5], temperature=0)
    assert decision.token == 2 and decision.draw is None and rng.draws == 0
    decision, _ = run(logits, [1, 3, 5], temperature=0)
    assert decision.token == 3 and decision.rank == 0


def test_penalties_apply_to_survivors_only():
    counts = np.zeros(V, dtype=np.int64)
    counts[[1, 4]] = 3
    logits = [0.0, 4.0, 3.0, 0.0, 9.0, 0.0, 0.0, 0.0]
    # repetition penalty 4 divides token 1's logit to 1.0 < 3.0: argmax moves to token 2
    assert run(logits, [1, 2], temperature=0, counts=counts, repetition_penalty=4.0)[0].token == 2
    # frequency 0.5 * 3 = 1.5 -> 2.5 < 3.0
    assert run(logits, [1, 2], temperature=0, counts=counts, frequency_penalty=0.5)[0].token == 2
    assert run(logits, [1, 2], temperature=0, counts=counts, presence_penalty=1.5)[0].token == 2
    # negative logits are multiplied by the repetition penalty
    neg = [0.0, -1.0, -2.5, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert run(neg, [1, 2], temperature=0, counts=counts, repetition_penalty=3.0)[0].token == 2
    # token 4 (disallowed, large logit) is untouched and never chosen; the intervention sees it
    decision, _ = run(logits, [1, 2], temperature=0, counts=counts, repetition_penalty=4.0)
    assert decision.intervention == 9.0 - 3.0


def test_min_p_removes_tokens_below_fraction_of_top():
    logits = [0.0, 0.0, math.log(0.5), math.log(0.01), 0.0, 0.0, 0.0, 0.0]
    seen = {run(logits, [1, 2, 3], seed=s, min_p=0.1)[0].token for s in range(300)}
    assert seen == {1, 2}


def test_top_k_keeps_k_best_ties_by_smallest_id():
    logits = [0.0, 1.0, 2.0, 2.0, 2.0, 0.0, 0.0, 0.0]
    seen = {run(logits, [1, 2, 3, 4], seed=s, top_k=2)[0].token for s in range(300)}
    assert seen == {2, 3}
    assert {run(logits, [1, 2, 3, 4], seed=s, top_k=1)[0].token for s in range(50)} == {2}


def test_top_p_keeps_smallest_prefix_reaching_mass():
    logits = [0.0, math.log(0.5), math.log(0.3), math.log(0.2), 0.0, 0.0, 0.0, 0.0]
    seen = {run(logits, [1, 2, 3], seed=s, top_p=0.75)[0].token for s in range(300)}
    assert seen == {1, 2}
    seen = {run(logits, [1, 2, 3], seed=s, top_p=0.5)[0].token for s in range(100)}
    assert seen == {1}


def test_one_draw_maps_to_first_cumulative_exceeding_u_total():
    logits = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]  # four equal weights 1.0, total 4.0
    for seed in range(100):
        decision, rng = run(logits, [1, 2, 3, 4], seed=seed)
        u = Xoshiro256StarStar.from_seed(seed).next_bits53() / 2**53
        assert decision.draw == Xoshiro256StarStar.from_seed(seed).next_bits53()
        assert decision.token == [1, 2, 3, 4][int(u * 4.0)]
        assert rng.draws == 1
        assert decision.candidates == 4


def test_temperature_sharpens_and_flattens():
    logits = [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    cold = [run(logits, [1, 2], seed=s, temperature=0.05)[0].token for s in range(200)]
    hot = [run(logits, [1, 2], seed=s, temperature=50.0)[0].token for s in range(400)]
    assert cold.count(2) == 200
    assert 150 < hot.count(1) < 250


def test_rank_and_intervention():
    logits = [7.0, 1.0, 3.0, 3.0, 2.0, 0.0, 0.0, 0.0]
    decision, _ = run(logits, [1, 2, 3, 4], temperature=0)
    assert decision.token == 2 and decision.rank == 0 and decision.intervention == 4.0
    decision, _ = run(logits, [1, 3, 4], temperature=0)
    assert decision.rank == 0


def test_sampler_settings_validation():
    for bad in (
        {"temperature": -1},
        {"top_p": 0},
        {"top_k": -1},
        {"min_p": 2},
        {"temperature": math.nan},
        {"repetition_penalty": 0.5},
    ):
        with pytest.raises(TrgcError) as info:
            SamplerSettings(**bad)
        assert info.value.code == "E_SAMPLER_SETTINGS"
    settings = SamplerSettings(temperature=0.7, top_k=5, banned_ids=(3, 1))
    assert SamplerSettings.from_dict(settings.to_dict()) == settings
    with pytest.raises(TrgcError):
        SamplerSettings.from_dict({**settings.to_dict(), "typical_p": 0.9})


def test_sampler_is_deterministic_across_calls():
    rng = np.random.default_rng(11)
    logits = rng.normal(0, 3, V)
    a = [
        run(logits, [0, 1, 2, 3, 4, 5, 6], seed=s, top_p=0.9, top_k=5, min_p=0.01)[0]
        for s in range(30)
    ]
    b = [
        run(logits, [0, 1, 2, 3, 4, 5, 6], seed=s, top_p=0.9, top_k=5, min_p=0.01)[0]
        for s in range(30)
    ]
    assert a == b


def test_step_logits_summary():
    summary = summarize(np.array([1.0, math.nan, 5.0, math.inf, -2.0]), np.array([0, 4]))
    assert list(summary.allowed) == [1.0, -2.0]
    assert summary.outside_nan == 1 and summary.outside_posinf and summary.outside_max == math.inf
    summary = summarize(np.array([1.0, math.nan]), np.array([0]))
    assert summary.outside_max == -math.inf and not summary.outside_posinf
    assert isinstance(summary, StepLogits)


def test_partial_top_prefix_equals_full_stable_sort():
    from trgc.decode.sampler import _top

    rng = np.random.default_rng(5)
    for trial in range(200):
        n = int(rng.integers(1, 400))
        weights = (
            rng.choice([0.0, 0.25, 0.5, 1.0, 0.125], size=n)
            if trial % 2
            else rng.random(n) * (rng.random(n) > 0.3)
        )
        alive = np.flatnonzero(weights > 0)
        full = alive[np.argsort(-weights[alive], kind="stable")]
        for m in (1, 3, 17, 256, 1000):
            assert np.array_equal(_top(weights, m), full[:m])


class FixedDraws:
    """A stand-in generator that hands the sampler chosen 53-bit draws, to hit boundaries."""

    def __init__(self, *bits: int) -> None:
        self.bits = list(bits)
        self.draws = 0

    def next_bits53(self) -> int:
        self.draws += 1
        return self.bits.pop(0)


def run_with_draw(logits, allowed, bits, **settings):
    ids = np.asarray(allowed, dtype=np.int64)
    return sample(
        ids,
        summarize(np.asarray(logits, dtype=np.float64), ids),
        eos_ids=EOS,
        accepting=True,
        settings=SamplerSettings(**settings),
        counts=np.zeros(V, dtype=np.int64),
        rng=FixedDraws(bits),
    )


def test_a_draw_exactly_on_a_cumulative_boundary_takes_the_next_token():
    """Four weights 1.0 (cumulative 1, 2, 3, 4): u * total landing exactly on cumulative[k]
    belongs to token k + 1 ("the first index whose cumulative weight exceeds u * total")."""
    logits = [0.0] * V
    allowed = [1, 2, 3, 4]
    for k, expected in enumerate(allowed):
        bits = k * 2**51  # u = k / 4 exactly, so u * total = k = cumulative[k - 1]
        assert run_with_draw(logits, allowed, bits).token == expected
    assert run_with_draw(logits, allowed, 2**51 - 1).token == 1  # just below the boundary
    assert run_with_draw(logits, allowed, 2**53 - 1).token == 4  # the largest draw


def test_a_zero_weight_token_is_never_drawn_even_on_its_boundary():
    """top_k=2 zeroes token 2 (cumulative 1, 1, 2): the draw u * total = 1.0 sits on the
    boundary shared with the dead token and must go past it to token 3."""
    logits = [0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    decision = run_with_draw(logits, [1, 2, 3], 2**52, top_k=2)  # u = 1/2, u * total = 1.0
    assert decision.candidates == 2
    assert decision.token == 3


def test_min_p_keeps_a_token_whose_weight_equals_the_threshold():
    """min-p drops weights strictly below min_p: a token exactly at the threshold stays."""
    from trgc.decode.portable_math import exp_portable_array

    logits = [0.0, 0.0, -1.0, -3.0, 0.0, 0.0, 0.0, 0.0]
    at = float(exp_portable_array(np.asarray([-1.0]))[0])  # token 2's weight, bit for bit
    # u * total just below 1 + at: inside token 2's share when token 2 is kept
    bits = int((1.0 + at * 0.5) / (1.0 + at) * 2**53)
    decision = run_with_draw(logits, [1, 2, 3], bits, min_p=at)
    assert decision.candidates == 2
    assert decision.token == 2


def test_min_p_one_keeps_exactly_the_tied_maxima():
    """min_p = 1 keeps every token of weight 1.0 (the maxima) and nothing else."""
    logits = [0.0, 2.0, 2.0, 1.9, 0.0, 0.0, 0.0, 0.0]
    decision = run_with_draw(logits, [1, 2, 3], 2**52 + 1, min_p=1.0)
    assert decision.stop is None
    assert decision.candidates == 2
    assert decision.token == 2
