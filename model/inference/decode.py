"""Decoding that keeps the attention: greedy, beam search (section 6.1), and next-token sampling.

Conventions (shared with the trainer and the corpus code):
    source  = tokenizer.encode(text) + [eos]     (no BOS on the source side)
    target  = [bos] + ids + [eos]                (decoder input [bos] + ids, labels ids + [eos])

Attention record. Decoding feeds one token per step through a per-layer KV cache. The record
the inspector shows is instead computed afterwards by ONE teacher-forced forward pass over the
source and [bos] + tokens with return_attention=True. Both give the same numbers: with causal
masking, decoder position t only sees positions <= t, so its self-attention row, its cross-
attention row and its logits do not depend on anything generated later. Row t of every decoder
matrix is therefore exactly what the model computed at step t, when it chose token t
(tests/model/test_decode.py checks this to 1e-5). Rows align with `steps`: row t predicts steps[t].
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from model.nn.masks import pad_batch
from model.nn.transformer import Intermediates, Transformer

TOP_K_SHOWN = 10
PAPER_EXTRA_OUTPUT = 50  # section 6.1: at most input length + 50 output tokens


@dataclass
class StepInfo:
    token: int  # the token chosen at this step (the last step may be EOS)
    prob: float  # its probability under the model
    top: list[tuple[int, float]] = field(default_factory=list)  # the top-10 candidates (id, prob)


@dataclass
class DecodeResult:
    tokens: list[int]  # generated ids, without BOS and without EOS
    steps: list[StepInfo]  # one per decoder row; len(tokens) + 1 when EOS was produced
    attention: Intermediates | None = None  # teacher-forced pass over src and [bos] + tokens (B = 1)
    score: float = 0.0  # sum of log-probs (greedy) / length-normalised log-prob (beam)
    finished: bool = False  # True when the model produced EOS within max_len


@contextlib.contextmanager
def _eval_mode(model: torch.nn.Module):
    """inference_mode + eval (no dropout) for the duration, then restore the training flag."""
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            yield
    finally:
        model.train(was_training)


def _step_budget(model: Transformer, max_len: int) -> int:
    """Decoder positions 0 .. cfg.max_len-1 exist, and the final pass feeds [bos] + tokens."""
    return max(1, min(max_len, model.config.max_len - 1))


def top_candidates(probs: torch.Tensor, k: int = TOP_K_SHOWN) -> list[tuple[int, float]]:
    """The k most probable tokens of a distribution (V,), best first, as (id, probability)."""
    p, i = probs.topk(min(k, probs.numel()))  # (k,), (k,)
    return [(int(a), float(b)) for a, b in zip(i.tolist(), p.tolist())]


def without_banned(logits: torch.Tensor, banned) -> torch.Tensor:
    """logits (..., V) with the banned ids set to -inf: a token the model must never produce (Marian's
    pad, which is also its decoder's start token) gets probability 0 and is never chosen."""
    if not banned:
        return logits
    idx = torch.tensor(sorted(set(banned)), dtype=torch.long, device=logits.device)
    return logits.index_fill(-1, idx, float("-inf"))


def _check_encoder_decoder(model: Transformer) -> None:
    if model.config.architecture != "encoder-decoder":
        raise ValueError(f"needs an encoder-decoder model, got {model.config.architecture!r}")


def _final_pass(model: Transformer, src: torch.Tensor, tokens: list[int], bos_id: int, banned=()):
    """Teacher-forced pass: returns (probs (Lt, V), Intermediates) over [bos] + tokens."""
    tgt = torch.tensor([[bos_id] + tokens], dtype=torch.long, device=src.device)  # (1, Lt)
    out = model(src, tgt, return_attention=True)
    return without_banned(out.logits[0].float(), banned).softmax(-1), out.attention  # (Lt, V)


def _steps_from_probs(probs: torch.Tensor, chosen: list[int]) -> list[StepInfo]:
    """probs: (>= len(chosen), V); row t is the distribution that chose chosen[t]."""
    return [StepInfo(tok, float(probs[t, tok]), top_candidates(probs[t])) for t, tok in enumerate(chosen)]


# -----------------------------------------------------------------------------
# greedy

def greedy_decode(model: Transformer, src_ids: list[int], *, bos_id: int, eos_id: int,
                  max_len: int = 64, record: bool = True, banned: tuple[int, ...] = ()) -> DecodeResult:
    """Pick the most probable token at every step, encoding the source once and feeding one new
    token per step through the KV cache. `max_len` bounds the steps (EOS included). With
    record=True the result carries the attention of the full sequence (see the module docstring).
    `banned` ids are never chosen (probability 0; see without_banned)."""
    _check_encoder_decoder(model)
    if not src_ids:
        raise ValueError("empty source")
    with _eval_mode(model):
        src = torch.tensor([src_ids], dtype=torch.long, device=model.device)  # (1, Ls)
        memory = model.encode(src)  # (1, Ls, D)
        cache: list = []
        tokens: list[int] = []
        steps: list[StepInfo] = []
        score, finished, tok = 0.0, False, bos_id
        for t in range(_step_budget(model, max_len)):
            new = torch.tensor([[tok]], dtype=torch.long, device=src.device)  # (1, 1)
            h = model.decode(new, memory, cache=cache, offset=t)  # (1, 1, D)
            probs = without_banned(model.project(h[:, -1]).float(), banned).softmax(-1)[0]  # (V,)
            tok = int(probs.argmax())
            steps.append(StepInfo(tok, float(probs[tok]), top_candidates(probs)))
            score += math.log(max(float(probs[tok]), 1e-45))
            if tok == eos_id:
                finished = True
                break
            tokens.append(tok)
        attention = _final_pass(model, src, tokens, bos_id, banned)[1] if record else None
    return DecodeResult(tokens, steps, attention, score, finished)


def greedy_decode_batch(model: Transformer, sources: list[list[int]], *, bos_id: int, eos_id: int,
                        pad_id: int | None = None, max_len: int = 64,
                        banned: tuple[int, ...] = ()) -> list[list[int]]:
    """Greedy decoding of many sources at once (for BLEU on a test set); no attention kept.
    Returns the generated ids of each source, without BOS/EOS; same tokens as greedy_decode."""
    _check_encoder_decoder(model)
    if not sources:
        return []
    pad = model.config.pad_id if pad_id is None else pad_id
    with _eval_mode(model):
        src, src_mask = pad_batch(sources, pad)  # (B, Ls) each, filled on the CPU, moved once
        B = src.size(0)
        src, src_mask = src.to(model.device), src_mask.to(model.device)
        memory = model.encode(src, src_mask)  # (B, Ls, D)
        cache: list = []
        out = torch.zeros(B, 0, dtype=torch.long, device=src.device)  # (B, T)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)  # (B,)
        tok = torch.full((B, 1), bos_id, dtype=torch.long, device=src.device)  # (B, 1)
        for t in range(_step_budget(model, max_len)):
            h = model.decode(tok, memory, src_mask, cache=cache, offset=t)  # (B, 1, D)
            tok = without_banned(model.project(h[:, -1]), banned).argmax(-1, keepdim=True)  # (B, 1)
            tok = tok.masked_fill(done[:, None], eos_id)
            out = torch.cat([out, tok], dim=1)  # (B, t+1)
            done |= tok[:, 0] == eos_id
            if bool(done.all()):
                break
    results = []
    for row in out.tolist():
        results.append(row[: row.index(eos_id)] if eos_id in row else row)
    return results


# -----------------------------------------------------------------------------
# beam search

def length_penalty(length: int, alpha: float) -> float:
    """GNMT (Wu et al., 2016) as used in the paper (alpha = 0.6): lp(Y) = (5 + |Y|)^a / 6^a."""
    return ((5.0 + length) ** alpha) / (6.0 ** alpha)


def beam_search(model: Transformer, src_ids: list[int], *, bos_id: int, eos_id: int, beam_size: int = 4,
                alpha: float = 0.6, max_len: int = 64, record: bool = True,
                banned: tuple[int, ...] = ()) -> DecodeResult:
    """Beam search, all beams in one batch through the KV cache. A hypothesis ends when it picks
    EOS among the top `beam_size` candidates of a step; its score is log P(Y) / lp(|Y|) with |Y|
    counting EOS. Search stops once `beam_size` hypotheses have ended and no live beam can beat
    the best of them any more (or after max_len steps, when the unfinished beams compete too).
    beam_size=1 is not always greedy: with alpha > 0 a hypothesis that outlives an early EOS can
    win on its length-normalised score (as in tensor2tensor's beam search); translate() sends
    beam_size <= 1 to greedy_decode.
    `steps` come from the final teacher-forced pass and describe the best hypothesis."""
    _check_encoder_decoder(model)
    if not src_ids:
        raise ValueError("empty source")
    K = max(1, int(beam_size))
    with _eval_mode(model):
        dev = model.device
        src = torch.tensor([src_ids], dtype=torch.long, device=dev)  # (1, Ls)
        memory = model.encode(src).expand(K, -1, -1)  # (K, Ls, D)
        V = model.config.vocab_size
        cache: list = []
        seqs: list[list[int]] = [[] for _ in range(K)]
        scores = torch.full((K,), float("-inf"), device=dev)  # (K,) sum of log-probs
        scores[0] = 0.0  # all beams start identical: only the first one may expand at step 0
        tok = torch.full((K, 1), bos_id, dtype=torch.long, device=dev)  # (K, 1)
        finished: list[tuple[float, list[int], bool]] = []  # (normalised score, tokens, ended by EOS)
        n_steps = _step_budget(model, max_len)
        for t in range(n_steps):
            h = model.decode(tok, memory, cache=cache, offset=t)  # (K, 1, D)
            logp = F.log_softmax(without_banned(model.project(h[:, -1]).float(), banned), dim=-1)  # (K, V)
            cand = (scores[:, None] + logp).view(-1)  # (K*V,)
            top_s, top_i = cand.topk(min(2 * K, K * V))  # (2K,)
            beam_idx, tok_ids = top_i // V, top_i % V  # (2K,), (2K,)
            keep_b, keep_t, keep_s = [], [], []
            for rank, (s, b, w) in enumerate(zip(top_s.tolist(), beam_idx.tolist(), tok_ids.tolist())):
                if s == float("-inf"):
                    break
                if w == eos_id:
                    if rank < K:  # EOS only ends a hypothesis when it is among the best K
                        finished.append((s / length_penalty(t + 1, alpha), seqs[b], True))
                    continue
                if len(keep_b) < K:
                    keep_b.append(b), keep_t.append(w), keep_s.append(s)
            if not keep_b:
                break
            if len(finished) >= K:
                # Stop only when no live beam can still win: a live beam's log-prob can only
                # fall, and its length penalty is at most lp(n_steps), so s / lp(n_steps) bounds it.
                best_done = max(f[0] for f in finished)
                if max(keep_s) / length_penalty(n_steps, alpha) <= best_done:
                    break
            while len(keep_b) < K:  # (tiny vocabularies) pad with dead beams
                keep_b.append(keep_b[0]), keep_t.append(keep_t[0]), keep_s.append(float("-inf"))
            sel = torch.tensor(keep_b, device=dev)  # (K,)
            for layer in cache:  # reorder the self-attention cache; cross K/V are equal across beams
                layer["self"]["k"] = layer["self"]["k"].index_select(0, sel)  # (K, H, t+1, dh)
                layer["self"]["v"] = layer["self"]["v"].index_select(0, sel)
            seqs = [seqs[b] + [w] for b, w in zip(keep_b, keep_t)]
            scores = torch.tensor(keep_s, device=dev)  # (K,)
            tok = torch.tensor(keep_t, device=dev)[:, None]  # (K, 1)
        else:  # ran out of steps: unfinished beams compete, normalised by their own length
            for s, seq in zip(scores.tolist(), seqs):
                if s > float("-inf"):
                    finished.append((s / length_penalty(len(seq), alpha), seq, False))
        if not finished:  # (degenerate vocabularies) nothing ended and nothing could continue
            finished = [(s / length_penalty(max(len(q), 1), alpha), q, False)
                        for s, q in zip(scores.tolist(), seqs) if s > float("-inf")] or [(0.0, [], False)]
        best_score, best, ended = max(finished, key=lambda f: f[0])
        probs, attention = _final_pass(model, src, best, bos_id, banned)  # (Lt, V)
        steps = _steps_from_probs(probs, best + ([eos_id] if ended else []))
    return DecodeResult(list(best), steps, attention if record else None, float(best_score), ended)


# -----------------------------------------------------------------------------
# decoder-only language models

def _lm_forward(model: Transformer, ids: list[int], temperature: float, top_k: int, record: bool):
    if model.config.architecture != "decoder-only":
        raise ValueError(f"needs a decoder-only model, got {model.config.architecture!r}")
    if not ids:
        raise ValueError("empty context")
    ids = ids[-model.config.max_len:]  # keep the most recent context the positions allow
    with _eval_mode(model):
        x = torch.tensor([ids], dtype=torch.long, device=model.device)  # (1, L)
        out = model(x, return_attention=record)
        logits = out.logits[0, -1].float()  # (V,)
        if temperature <= 0:  # greedy limit: all the mass on the argmax
            probs = F.one_hot(logits.argmax(), logits.numel()).float()  # (V,)
        else:
            logits = logits / temperature
            if 0 < top_k < logits.numel():
                kth = logits.topk(top_k).values[-1]  # the k-th largest logit
                logits = logits.masked_fill(logits < kth, float("-inf"))
            probs = logits.softmax(-1)  # (V,)
    return probs, out.attention


def lm_next_token(model: Transformer, ids: list[int], temperature: float = 1.0, top_k: int = 0):
    """Next-token distribution of a decoder-only model after `ids` (the last cfg.max_len of them).
    Returns (probs (V,) summing to 1, Intermediates with decoder_self per layer). top_k > 0 keeps
    the k most probable tokens (ties at the k-th may keep a few more); temperature <= 0 is greedy."""
    return _lm_forward(model, ids, temperature, top_k, record=True)


def lm_sample(model: Transformer, ids: list[int], *, temperature: float = 1.0, top_k: int = 0,
              generator: torch.Generator | None = None, seed: int | None = None) -> int:
    """Draw one next token. A CPU torch.Generator, or a seed (a fresh generator seeded with it),
    makes the draw reproducible."""
    if generator is None and seed is not None:
        generator = torch.Generator().manual_seed(seed)
    probs, _ = _lm_forward(model, ids, temperature, top_k, record=False)
    return int(torch.multinomial(probs.cpu(), 1, generator=generator))


# -----------------------------------------------------------------------------
# text in, text out

@dataclass
class TranslationResult:
    src_ids: list[int]  # encoder input: tokenizer.encode(text)[: max_len - 2] + [eos]
    src_pieces: list[str]  # one per src id (the encoder axis of the attention maps)
    out_ids: list[int]  # generated, without BOS/EOS
    out_pieces: list[str]  # one per out id
    text: str  # tokenizer.decode(out_ids)
    attention: Intermediates | None  # decoder axis = [bos] + out_ids (see tgt_pieces)
    steps: list[StepInfo]
    truncated: bool  # the source was cut to fit the model's positions
    tgt_pieces: list[str] = field(default_factory=list)  # [bos] + out pieces: decoder query axis
    score: float = 0.0
    finished: bool = False


def translate(loaded, text: str, *, beam_size: int = 4, alpha: float = 0.6, greedy: bool = False,
              max_len: int | None = None) -> TranslationResult:
    """Translate `text` with a LoadedModel (model.training.checkpoint.load_model_dir). Beam search by
    default (beam 4, alpha 0.6, as in the paper); greedy=True or beam_size=1 decodes greedily.

    max_len (the most output tokens, EOS included) defaults to the paper's cap, input length + 50
    (section 6.1: "We set the maximum output length during inference to input length + 50, but
    terminate early when possible"), where the input length is the encoder input (`src_ids`, its EOS
    included). The model's positions bound it: the decoder reads [bos] + output, so at most
    cfg.max_len - 1 tokens come out, and min(len(src_ids) + 50, cfg.max_len - 1) is the default. An
    explicit max_len is bounded the same way."""
    tok, model = loaded.tokenizer, loaded.model
    if tok is None:
        raise ValueError("this model has no tokenizer, so it cannot translate text")
    _check_encoder_decoder(model)
    ids = tok.encode(text)
    limit = max(1, model.config.max_len - 2)
    truncated = len(ids) > limit
    src_ids = ids[:limit] + [tok.eos_id]
    if max_len is None:
        max_len = min(len(src_ids) + PAPER_EXTRA_OUTPUT, model.config.max_len - 1)
    # a tokenizer may name ids the model must never produce (Marian: its pad / decoder start token)
    kw = dict(bos_id=tok.bos_id, eos_id=tok.eos_id, max_len=max_len, banned=tuple(getattr(tok, "banned_ids", ())))
    if greedy or beam_size <= 1:
        res = greedy_decode(model, src_ids, **kw)
    else:
        res = beam_search(model, src_ids, beam_size=beam_size, alpha=alpha, **kw)
    out_pieces = [tok.id_to_piece(i) for i in res.tokens]
    source_piece = getattr(tok, "source_piece", tok.id_to_piece)  # separate source/target vocabularies (Marian)
    return TranslationResult(
        src_ids=src_ids, src_pieces=[source_piece(i) for i in src_ids], out_ids=res.tokens,
        out_pieces=out_pieces, text=tok.decode(res.tokens), attention=res.attention, steps=res.steps,
        truncated=truncated, tgt_pieces=[tok.id_to_piece(tok.bos_id)] + out_pieces, score=res.score,
        finished=res.finished,
    )
