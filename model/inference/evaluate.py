"""How well a model in training does: validation loss and accuracy with a few sample predictions
(at every evaluation), and the test-split scores of an exported model (BLEU, exact match, perplexity)."""
from __future__ import annotations

import math

import torch
import torch.nn as nn

from model.data.train_data import TaskData, encode_pairs, make_batch

SAMPLE_COUNT = 3  # fixed validation examples decoded at every evaluation
SAMPLE_CHARS = 300  # each sample's source / target / prediction is cut to this many characters (+ "…"):
                    # samples go into status.json and metrics.jsonl at every evaluation


def clip(text: str, limit: int = SAMPLE_CHARS) -> str:
    """`text` cut to `limit` characters with an ellipsis, so one huge corpus line cannot swell the run files."""
    return text if len(text) <= limit else text[:limit] + "…"


def sample(source: str, target: str, prediction: str) -> dict:
    return {"source": clip(source), "target": clip(target), "prediction": clip(prediction)}


@torch.no_grad()
def evaluate(model, data: TaskData, device, batch_size=100, max_exact=200) -> dict:
    """Validation loss (no smoothing), token accuracy (teacher forcing) and exact match
    (greedy decoding) on up to max_exact examples; plus a few sample predictions."""
    from model.inference.decode import greedy_decode_batch, lm_next_token
    tok = data.tokenizer
    raw = model.module if hasattr(model, "module") else model
    raw.eval()
    total_loss = total_tok = correct = 0.0
    for i in range(0, len(data.valid), batch_size):
        idx = range(i, min(i + batch_size, len(data.valid)))
        src, tin, tout = make_batch(data.valid, idx, tok.pad_id, tok.bos_id, tok.eos_id, data.decoder_only, device)
        logits = raw(src if src is not None else tin, tin if src is not None else None,
                     src_pad_mask=(src != tok.pad_id) if src is not None else None).logits
        mask = tout != tok.pad_id
        total_loss += nn.functional.cross_entropy(logits[mask], tout[mask], reduction="sum").item()
        correct += (logits.argmax(-1)[mask] == tout[mask]).sum().item()
        total_tok += mask.sum().item()
    result = {"val_loss": total_loss / max(total_tok, 1), "val_token_acc": correct / max(total_tok, 1)}
    samples = []
    if not data.decoder_only:
        n = min(max_exact, len(data.valid))
        hyps = greedy_decode_batch(raw, [s for s, _ in data.valid[:n]], bos_id=tok.bos_id, eos_id=tok.eos_id,
                                   max_len=raw.config.max_len - 1)
        result["val_exact"] = sum(h == t for h, (_, t) in zip(hyps, data.valid[:n])) / max(n, 1)
        for h, (s, t) in zip(hyps[:SAMPLE_COUNT], data.valid_text[:SAMPLE_COUNT]):
            samples.append(sample(s, t, tok.decode(h)))
    else:
        for s, _ in data.valid_text[:SAMPLE_COUNT]:
            ids = [tok.bos_id] + tok.encode(s)[: raw.config.max_len - 1]  # what fits the model
            prefix = ids[: max(2, len(ids) // 2)]
            out = list(prefix)
            for _ in range(len(ids) - len(prefix) + 1):
                probs, _ = lm_next_token(raw, out[-(raw.config.max_len - 1):])
                nxt = int(probs.argmax())
                if nxt == tok.eos_id:
                    break
                out.append(nxt)
            samples.append(sample(tok.decode(prefix[1:]), s, tok.decode(out[1:])))
    result["samples"] = samples
    raw.train()
    return result


@torch.no_grad()
def score_test(model, data: TaskData, beam_size: int = 4, alpha: float = 0.6) -> dict:
    """Test-split scores: exact match and BLEU for translation, loss/perplexity for a language model."""
    from model.inference.decode import beam_search, greedy_decode_batch
    from model.inference.metrics import bleu, exact_match
    tok = data.tokenizer
    model.eval()
    if data.decoder_only:
        enc = encode_pairs(tok, data.test_text, model.config.max_len)
        ev = evaluate(model, TaskData(tok, [], enc, data.test_text, True, []), model.device)
        return {"test_sentences": len(enc), "test_loss": ev["val_loss"], "test_perplexity": math.exp(ev["val_loss"]),
                "test_next_token_accuracy": ev["val_token_acc"]}
    sources = [s for s, _ in encode_pairs(tok, data.test_text, model.config.max_len)]
    refs = [t for _, t in data.test_text]
    greedy = [tok.decode(h) for h in greedy_decode_batch(model, sources, bos_id=tok.bos_id, eos_id=tok.eos_id,
                                                          max_len=model.config.max_len - 1)]
    beam = [tok.decode(beam_search(model, s, bos_id=tok.bos_id, eos_id=tok.eos_id, beam_size=beam_size,
                                   alpha=alpha, max_len=model.config.max_len - 1).tokens) for s in sources]
    korean = any("\uac00" <= ch <= "\ud7a3" for r in refs[:50] for ch in r)
    out = {"test_sentences": len(refs)}
    for name, hyps in (("greedy", greedy), (f"beam{beam_size}", beam)):
        out[f"exact_match_{name}"] = exact_match(hyps, refs)
        out[f"bleu_{name}"] = bleu(hyps, refs, korean=korean)
        out[f"bleu_words_{name}"] = bleu(hyps, refs, tokenize="13a")
    out["examples"] = [{"source": s, "reference": r, "beam": b} for (s, r), b in zip(data.test_text[:5], beam[:5])]
    out["errors"] = [{"source": s, "reference": r, "beam": b}
                     for (s, r), b in zip(data.test_text, beam) if b.strip() != r.strip()][:10]
    return out
