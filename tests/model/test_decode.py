"""Decoding: KV-cache greedy == recompute greedy, attention record == step-wise attention,
beam 1 == greedy, and the decoder-only next-token helpers."""
import math

import pytest
import torch

from model import PRESETS, Transformer
from model.training.checkpoint import LoadedModel
from model.inference.decode import (
    beam_search, greedy_decode, greedy_decode_batch, length_penalty, lm_next_token, lm_sample, top_candidates,
    translate,
)
from model.nn.transformer import Intermediates

BOS, EOS = 2, 3


@pytest.fixture(scope="module")
def model():
    """A seeded random encoder-decoder whose greedy outputs vary (untied, noisy softmax layer)."""
    torch.manual_seed(0)
    m = Transformer(PRESETS["tiny"].replace(tie_embeddings=False)).eval()
    with torch.no_grad():
        m.generator.weight.normal_(0, 0.5)
        m.generator.weight[EOS] += 0.3 * m.generator.weight[EOS].sign()  # EOS now and then
    return m


def sources(n=6, seed=1):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        L = int(torch.randint(3, 10, (1,), generator=g))
        out.append(torch.randint(4, 64, (L,), generator=g).tolist() + [EOS])
    return out


def greedy_recompute(model, src_ids, max_len):
    """Reference: no cache, the whole prefix goes through the decoder at every step."""
    src = torch.tensor([src_ids])
    tgt, probs = [BOS], []
    with torch.no_grad():
        for _ in range(max_len):
            p = model(src, torch.tensor([tgt])).logits[0, -1].softmax(-1)  # (V,)
            tok = int(p.argmax())
            probs.append(float(p[tok]))
            if tok == EOS:
                break
            tgt.append(tok)
    return tgt[1:], probs


def test_greedy_cache_equals_recompute(model):
    for src in sources():
        res = greedy_decode(model, src, bos_id=BOS, eos_id=EOS, max_len=20, record=False)
        ref, probs = greedy_recompute(model, src, 20)
        assert res.tokens == ref
        assert [s.prob for s in res.steps] == pytest.approx(probs, abs=1e-5)
        assert len(res.steps) == len(res.tokens) + int(res.finished)
        assert [s.token for s in res.steps] == res.tokens + ([EOS] if res.finished else [])
        assert res.steps[0].top[0][0] == res.steps[0].token and len(res.steps[0].top) == 10


def test_final_pass_attention_equals_stepwise(model):
    """Row t of the teacher-forced record is what the cached decoder computed at step t."""
    src = sources(1, seed=0)[0]  # 12 tokens, no EOS within max_len
    res = greedy_decode(model, src, bos_id=BOS, eos_id=EOS, max_len=12)
    assert len(res.tokens) >= 5  # a non-trivial sequence
    att = res.attention
    n_dec = model.config.n_decoder_layers
    assert len(att.cross) == len(att.decoder_self) == n_dec
    assert len(att.encoder_self) == model.config.n_encoder_layers
    Lt, Ls = len(res.tokens) + 1, len(src)
    assert att.cross[0].shape == (1, model.config.n_heads, Lt, Ls)
    assert att.encoder_self[0].shape == (1, model.config.n_heads, Ls, Ls)
    with torch.inference_mode():
        s = torch.tensor([src])
        memory = model.encode(s)
        cache = []
        for t, tok in enumerate([BOS] + res.tokens):
            rec = Intermediates()
            model.decode(torch.tensor([[tok]]), memory, record=rec, cache=cache, offset=t)
            for layer in range(n_dec):
                torch.testing.assert_close(rec.cross[layer][0, :, 0], att.cross[layer][0, :, t], atol=1e-5, rtol=0)
                torch.testing.assert_close(rec.decoder_self[layer][0, :, 0], att.decoder_self[layer][0, :, t, : t + 1],
                                           atol=1e-5, rtol=0)
                assert float(att.decoder_self[layer][0, :, t, t + 1:].abs().sum()) == 0.0  # causal


def test_attention_rows_sum_to_one(model):
    res = beam_search(model, sources(1, seed=0)[0], bos_id=BOS, eos_id=EOS, beam_size=3, max_len=10)
    for kind in ("encoder_self", "decoder_self", "cross"):
        for w in getattr(res.attention, kind):
            torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]), atol=1e-5, rtol=0)


def test_beam_one_equals_greedy(model):
    for src in sources(8, seed=2):
        g = greedy_decode(model, src, bos_id=BOS, eos_id=EOS, max_len=16, record=False)
        b = beam_search(model, src, bos_id=BOS, eos_id=EOS, beam_size=1, max_len=16, record=False)
        assert b.tokens == g.tokens and b.finished == g.finished


def test_beam_scores(model):
    for src in sources(4, seed=4):
        for k in (2, 4):
            b = beam_search(model, src, bos_id=BOS, eos_id=EOS, beam_size=k, alpha=0.6, max_len=16)
            assert math.isfinite(b.score)
            assert len(b.steps) == len(b.tokens) + int(b.finished)
            # the reported score is log P(Y) / lp(|Y|) of the returned hypothesis
            logp = sum(math.log(s.prob) for s in b.steps)
            assert b.score == pytest.approx(logp / length_penalty(len(b.steps), 0.6), abs=1e-4)
    assert length_penalty(1, 0.6) == pytest.approx(1.0)
    assert length_penalty(10, 0.0) == 1.0


def test_batch_greedy_matches_single(model):
    srcs = sources(5, seed=7)
    batch = greedy_decode_batch(model, srcs, bos_id=BOS, eos_id=EOS, max_len=12)
    for src, out in zip(srcs, batch):
        assert out == greedy_decode(model, src, bos_id=BOS, eos_id=EOS, max_len=12, record=False).tokens


def test_max_len_capped_and_mode_restored(model):
    model.train()
    try:
        res = greedy_decode(model, [5, 6, EOS], bos_id=BOS, eos_id=99999, max_len=10_000, record=True)
        assert model.training  # restored
    finally:
        model.eval()
    assert len(res.tokens) == model.config.max_len - 1  # positions run out, not max_len
    assert res.attention.cross[0].shape[2] == model.config.max_len
    with pytest.raises(ValueError):
        greedy_decode(model, [], bos_id=BOS, eos_id=EOS)


class CharTokenizer:
    """Stands in for model.data.tokenizer: a..z -> 4..29."""
    pad_id, unk_id, bos_id, eos_id = 0, 1, 2, 3
    vocab_size = 30

    def encode(self, text):
        return [4 + ord(c) - 97 for c in text if "a" <= c <= "z"]

    def decode(self, ids):
        return "".join(chr(97 + i - 4) for i in ids if 4 <= i < 30)

    def id_to_piece(self, i):
        return ["<pad>", "<unk>", "<s>", "</s>"][i] if i < 4 else (chr(97 + i - 4) if i < 30 else "<unk>")

    def pieces(self, text):
        return [self.id_to_piece(i) for i in self.encode(text)]


def test_translate(model):
    loaded = LoadedModel(model=model, tokenizer=CharTokenizer(), config=model.config)
    r = translate(loaded, "hello", beam_size=2, max_len=8)
    assert r.src_ids == CharTokenizer().encode("hello") + [EOS] and not r.truncated
    assert r.src_pieces == list("hello") + ["</s>"]
    assert len(r.out_pieces) == len(r.out_ids) and r.tgt_pieces[0] == "<s>"
    assert r.attention.cross[0].shape[2:] == (len(r.out_ids) + 1, len(r.src_ids))
    long = translate(loaded, "ab" * 100, greedy=True, max_len=4)
    assert long.truncated and len(long.src_ids) == model.config.max_len - 1
    assert len(long.out_ids) <= 4


@pytest.fixture(scope="module")
def lm():
    torch.manual_seed(0)
    return Transformer(PRESETS["tiny"].replace(architecture="decoder-only")).eval()


def test_lm_next_token(lm):
    ids = [2, 5, 9, 11, 7]
    probs, att = lm_next_token(lm, ids)
    assert probs.shape == (lm.config.vocab_size,)
    assert float(probs.sum()) == pytest.approx(1.0, abs=1e-5)
    assert len(att.decoder_self) == lm.config.n_decoder_layers and not att.cross
    assert att.decoder_self[0].shape == (1, lm.config.n_heads, len(ids), len(ids))
    p5, _ = lm_next_token(lm, ids, temperature=0.7, top_k=5)
    assert int((p5 > 0).sum()) == 5 and float(p5.sum()) == pytest.approx(1.0, abs=1e-5)
    assert set(p5.nonzero().flatten().tolist()) == set(probs.topk(5).indices.tolist())
    p0, _ = lm_next_token(lm, ids, temperature=0)
    assert float(p0.max()) == 1.0 and int(p0.argmax()) == int(probs.argmax())
    draws = [lm_sample(lm, ids, temperature=1.0, top_k=3, generator=torch.Generator().manual_seed(s)) for s in range(5)]
    again = [lm_sample(lm, ids, temperature=1.0, top_k=3, generator=torch.Generator().manual_seed(s)) for s in range(5)]
    assert draws == again and set(draws) <= set(probs.topk(3).indices.tolist())
    seeded = [lm_sample(lm, ids, temperature=1.0, top_k=3, seed=s) for s in range(5)]  # what the inspector uses
    assert seeded == draws
    with pytest.raises(ValueError):
        greedy_decode(lm, [5], bos_id=BOS, eos_id=EOS)


def test_top_candidates_best_first():
    probs = torch.tensor([0.1, 0.4, 0.05, 0.3, 0.15])
    top = top_candidates(probs, 3)
    assert [i for i, _ in top] == [1, 3, 4]
    assert [p for _, p in top] == pytest.approx([0.4, 0.3, 0.15])
    assert len(top_candidates(probs, 10)) == 5  # never more than the vocabulary


class NoEosTokenizer(CharTokenizer):
    """Bans EOS, so decoding runs to its length cap and the output's length is the cap."""
    banned_ids = (EOS,)


@pytest.mark.parametrize("greedy", [True, False])
def test_translate_caps_output_at_input_length_plus_50(model, greedy):
    """Section 6.1: 'maximum output length during inference to input length + 50', where the model's
    positions allow it (decoder positions 0 .. max_len-1, the first is BOS)."""
    loaded = LoadedModel(model=model, tokenizer=NoEosTokenizer(), config=model.config)
    short = translate(loaded, "abc", greedy=greedy, beam_size=2)
    assert len(short.src_ids) == 4 and not short.finished
    assert len(short.out_ids) == min(4 + 50, model.config.max_len - 1) == 54
    long = translate(loaded, "ab" * 100, greedy=greedy, beam_size=2)
    assert long.truncated and len(long.out_ids) == model.config.max_len - 1
