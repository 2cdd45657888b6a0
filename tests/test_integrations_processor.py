"""TrgcLogitsProcessor on a tiny random-weight Llama whose vocabulary is a synthetic token table:
masks reach the scores, matchers advance with the chosen tokens, greedy and sampling produce
only grammar members, and a foreign token table is refused."""

from __future__ import annotations

import numpy as np
import pytest

import trgc
from trgc.errors import TrgcError
from trgc.tokenizer.table import KIND_NORMAL, KIND_SPECIAL, make_table

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from trgc.integrations.transformers import TrgcLogitsProcessor  # noqa: E402

GRAMMAR = '%trg 1\n%start s\ns ::= "{\\"a\\":" [0-9]{1,3} ("," " "? "\\"b\\":" ("true" | "false"))? "}" ;\n'
MULTI = [b'{"a":', b"12", b"345", b'"b":', b"true", b"false", b", ", b"}"]
PAD = 5  # the model scores a few more columns than the table has ids, as real models do


def _table(extra: bytes = b""):
    pieces: list[bytes | None] = [bytes([b]) for b in range(256)] + MULTI
    if extra:
        pieces.append(extra)
    pieces.append(None)
    kinds = np.array([KIND_NORMAL] * (len(pieces) - 1) + [KIND_SPECIAL], dtype=np.uint8)
    eos = len(pieces) - 1
    return make_table(
        pieces,
        kinds,
        special_tokens={"<eos>": eos},
        added_tokens={},
        eos_ids=(eos,),
        metadata={"family": "synthetic"},
    )


TABLE = _table()
EOS = TABLE.eos_ids[0]
ARTIFACT = trgc.compile_grammar(GRAMMAR)


def _model(seed: int = 0):
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        vocab_size=TABLE.vocab_size + PAD,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
        eos_token_id=EOS,
        pad_token_id=EOS,
        bos_token_id=0,
    )
    return transformers.LlamaForCausalLM(config).eval()


def _generate(model, processor, **kwargs):
    prompt = torch.tensor([[65, 66, 67]])
    out = model.generate(
        prompt,
        attention_mask=torch.ones_like(prompt),
        logits_processor=transformers.LogitsProcessorList([processor]),
        max_new_tokens=24,
        eos_token_id=EOS,
        pad_token_id=EOS,
        **kwargs,
    )
    return out[0, prompt.shape[1] :].tolist()


def _output_bytes(ids: list[int]) -> bytes:
    return b"".join(TABLE.token_bytes(i) for i in ids if i != EOS)


def test_mask_reaches_scores_and_padding_columns():
    matcher = trgc.Matcher(ARTIFACT, TABLE)
    processor = TrgcLogitsProcessor(matcher, TABLE)
    scores = torch.randn(1, TABLE.vocab_size + PAD, generator=torch.Generator().manual_seed(1))
    out = processor(torch.tensor([[1, 2]]), scores.clone())
    allowed = torch.from_numpy(np.concatenate([matcher.allowed_tokens(), np.zeros(PAD, bool)]))
    assert allowed.sum() == 2  # b"{" and b'{"a":'
    assert torch.all(out[0, ~allowed] == float("-inf"))
    assert torch.equal(out[0, allowed], scores[0, allowed])


def test_unpack_matches_matcher_on_every_configuration_of_a_walk():
    matcher = trgc.Matcher(ARTIFACT, TABLE)
    processor = TrgcLogitsProcessor(matcher, TABLE)
    width = TABLE.vocab_size + PAD
    for token in [256, ord("7"), 257, 262, 259, 260, 263]:  # {"a": 7 12 ,␠ "b": true }
        words = torch.from_numpy(matcher.allowed_tokens_packed()[None, :])
        got = processor.unpack(torch, words, width)[0].numpy()
        assert np.array_equal(got[: TABLE.vocab_size], matcher.allowed_tokens())
        assert not got[TABLE.vocab_size :].any()
        matcher.advance(token)
    assert matcher.is_accepting()


def test_matcher_advances_with_the_token_generate_chose():
    matcher = trgc.Matcher(ARTIFACT, TABLE)
    processor = TrgcLogitsProcessor(matcher, TABLE)
    scores = torch.zeros(1, TABLE.vocab_size + PAD)
    processor(torch.tensor([[1, 2]]), scores)
    assert matcher.n_advanced == 0
    start = matcher.config_id()
    out = processor(torch.tensor([[1, 2, 256]]), scores)
    assert matcher.n_advanced == 1 and matcher.config_id() != start
    digits = [ord(c) for c in "0123456789"] + [257, 258]
    assert sorted(torch.nonzero(out[0] > float("-inf"))[:, 0].tolist()) == sorted(digits)


def test_greedy_generate_produces_a_member_and_stops_on_eos():
    matcher = trgc.Matcher(ARTIFACT, TABLE)
    processor = TrgcLogitsProcessor(matcher, TABLE)
    ids = _generate(_model(), processor, do_sample=False)
    assert ids[-1] == EOS
    assert trgc.check(ARTIFACT, _output_bytes(ids)).accepted
    assert matcher.n_advanced == len(ids) - 1 and matcher.is_accepting()
    processor.sync(torch.tensor([[65, 66, 67, *ids]]))
    assert matcher.is_terminated()


def test_unconstrained_random_model_does_not_produce_a_member():
    """The control: the same model without the processor strays (so the test above is honest)."""
    prompt = torch.tensor([[65, 66, 67]])
    out = _model().generate(
        prompt,
        attention_mask=torch.ones_like(prompt),
        max_new_tokens=12,
        do_sample=False,
        eos_token_id=EOS,
        pad_token_id=EOS,
    )
    ids = [i for i in out[0, 3:].tolist() if i < TABLE.vocab_size]
    assert not trgc.check(ARTIFACT, _output_bytes(ids)).accepted


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_sampling_generate_produces_members(seed):
    matcher = trgc.Matcher(ARTIFACT, TABLE)
    torch.manual_seed(seed)
    ids = _generate(_model(seed), TrgcLogitsProcessor(matcher, TABLE), do_sample=True, top_k=0)
    assert ids[-1] == EOS
    assert trgc.check(ARTIFACT, _output_bytes(ids)).accepted


def test_batch_rows_have_their_own_matchers():
    matchers = [trgc.Matcher(ARTIFACT, TABLE) for _ in range(2)]
    processor = TrgcLogitsProcessor(matchers, TABLE)
    prompt = torch.tensor([[65, 66, 67], [68, 69, 70]])
    out = _model().generate(
        prompt,
        attention_mask=torch.ones_like(prompt),
        logits_processor=transformers.LogitsProcessorList([processor]),
        max_new_tokens=24,
        do_sample=False,
        eos_token_id=EOS,
        pad_token_id=EOS,
    )
    processor.sync(out)
    for row in range(2):
        ids = out[row, 3:].tolist()
        first_eos = ids.index(EOS)
        assert trgc.check(ARTIFACT, _output_bytes(ids[:first_eos])).accepted
        assert matchers[row].is_terminated()


def test_foreign_token_table_is_refused():
    other = _table(extra=b"xyz")
    matcher = trgc.Matcher(ARTIFACT, TABLE)
    with pytest.raises(TrgcError) as info:
        TrgcLogitsProcessor(matcher, other)
    assert info.value.code == "E_TOKENIZER_IDENTITY_MISMATCH"
    with pytest.raises(TrgcError) as info:
        TrgcLogitsProcessor(matcher, "sha256:" + "0" * 64)
    assert info.value.code == "E_TOKENIZER_IDENTITY_MISMATCH"
    TrgcLogitsProcessor(matcher, TABLE.sha256)  # the identity alone is enough


def test_scores_narrower_than_the_table_are_refused():
    processor = TrgcLogitsProcessor(trgc.Matcher(ARTIFACT, TABLE), TABLE)
    with pytest.raises(TrgcError) as info:
        processor(torch.tensor([[1]]), torch.zeros(1, TABLE.vocab_size - 1))
    assert info.value.code == "E_MODEL_VOCAB"


def test_empty_allowed_set_is_an_error_not_a_repair():
    artifact = trgc.compile_grammar('%trg 1\n%start s\ns ::= "\\x01\\x02" ;\n')
    pieces: list[bytes | None] = [b"\x01", b"a", None]  # no token starts with \x02 after \x01
    table = make_table(
        pieces,
        np.array([KIND_NORMAL, KIND_NORMAL, KIND_SPECIAL], dtype=np.uint8),
        special_tokens={"<eos>": 2},
        added_tokens={},
        eos_ids=(2,),
        metadata={},
    )
    matcher = trgc.Matcher(artifact, table)
    processor = TrgcLogitsProcessor(matcher, table)
    processor(torch.tensor([[1]]), torch.zeros(1, 3))
    with pytest.raises(TrgcError) as info:
        processor(torch.tensor([[1, 0]]), torch.zeros(1, 3))
    assert info.value.code == "E_CONSTRAINT_EMPTY_SET"
