"""The paper's second limit, measured: the decoder writes one token at a time. Without a cache every step runs
the decoder over the whole output so far (step t costs O(t) positions through every layer, O(t^2) scores);
with the key/value cache of model/inference/decode.py a step runs only the new token and reads the stored keys
and values. Both give the same tokens; the cache costs memory that grows with every token."""
from __future__ import annotations

import time

import torch

from model.nn.config import PRESETS, TransformerConfig


def timed_greedy(model, src_ids: list[int], *, bos_id: int, steps: int, cache: bool) -> dict:
    """Greedy decoding of exactly `steps` tokens (past EOS too, so the output keeps growing), with or without the
    KV cache. Returns the tokens and the seconds each step took (the source encoded once, outside the steps)."""
    if not src_ids:
        raise ValueError("empty source")
    steps = max(1, min(steps, model.config.max_len))
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            src = torch.tensor([src_ids], dtype=torch.long, device=model.device)  # (1, Ls)
            memory = model.encode(src)  # (1, Ls, D)
            kv: list | None = [] if cache else None
            tokens, seconds = [bos_id], []
            for t in range(steps):
                t0 = time.perf_counter()
                if cache:
                    new = torch.tensor([[tokens[-1]]], dtype=torch.long, device=src.device)  # (1, 1)
                    h = model.decode(new, memory, cache=kv, offset=t)  # (1, 1, D)
                else:
                    seq = torch.tensor([tokens], dtype=torch.long, device=src.device)  # (1, t + 1)
                    h = model.decode(seq, memory)  # (1, t + 1, D): every position again
                tokens.append(int(model.project(h[:, -1]).argmax(-1)))
                seconds.append(time.perf_counter() - t0)
    finally:
        model.train(was_training)
    return {"tokens": tokens[1:], "seconds": seconds}


def compare(model, src_ids: list[int], *, bos_id: int, steps: int, repeats: int = 3) -> dict:
    """Both ways on one thread: per-step seconds (each step's fastest of `repeats` runs, so a moment the machine
    gave to other work does not count as the step's cost), tokens per second, and whether the tokens are the same."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        timed_greedy(model, src_ids, bos_id=bos_id, steps=2, cache=True)  # warm-up
        runs = {mode: [timed_greedy(model, src_ids, bos_id=bos_id, steps=steps, cache=mode)
                       for _ in range(max(1, repeats))] for mode in (True, False)}
    finally:
        torch.set_num_threads(threads)
    fastest = lambda rs: {"tokens": rs[0]["tokens"], "seconds": [min(s) for s in zip(*(r["seconds"] for r in rs))]}  # noqa: E731
    with_cache, without = fastest(runs[True]), fastest(runs[False])
    rate = lambda r: len(r["seconds"]) / max(sum(r["seconds"]), 1e-12)  # noqa: E731
    return {"cache": with_cache["seconds"], "no_cache": without["seconds"],
            "tokens_per_second": {"cache": rate(with_cache), "no_cache": rate(without)},
            "same_tokens": with_cache["tokens"] == without["tokens"], "tokens": with_cache["tokens"]}


def kv_bytes_per_token(cfg: TransformerConfig, bytes_per_value: int = 2) -> int:
    """Bytes the decoder's self-attention cache grows by per generated token: a key and a value (d_k and d_v
    numbers) per key/value head per decoder layer. Grouped-query attention stores n_kv_heads of them, not
    n_heads."""
    return cfg.n_decoder_layers * cfg.kv_heads * (cfg.head_k + cfg.head_v) * bytes_per_value


def cache_rows(context: int = 4096, bytes_per_value: int = 2) -> list[dict]:
    """The paper's base model with its 8 key/value heads, then grouped-query (2) and multi-query (1): bytes per
    token and for a `context`-token output, at `bytes_per_value` (2: 16-bit numbers)."""
    base = PRESETS["paper_base"]
    out = []
    for kv in (base.n_heads, 2, 1):
        cfg = base.replace(n_kv_heads=None if kv == base.n_heads else kv)
        per = kv_bytes_per_token(cfg, bytes_per_value)
        out.append({"kv_heads": kv, "heads": cfg.n_heads, "layers": cfg.n_decoder_layers,
                    "bytes_per_token": per, "bytes_context": per * context})
    return out


def decoding_demo(loaded, text: str, steps: int) -> dict:
    """compare() on a LoadedModel's tokenizer and network: `text` encoded as the translator does (EOS last),
    `steps` tokens written both ways (at most the decoder's positions, max_len - 1)."""
    tok, model = loaded.tokenizer, loaded.model
    ids = tok.encode(text)[: max(1, model.config.max_len - 2)] + [tok.eos_id]
    steps = max(1, min(int(steps), model.config.max_len - 1))
    out = compare(model, ids, bos_id=tok.bos_id, steps=steps)
    eos = out["tokens"].index(tok.eos_id) if tok.eos_id in out["tokens"] else len(out["tokens"])
    return {**out, "text": tok.decode(out["tokens"][:eos]), "steps": steps}


_LOADED: dict = {}  # (folder, stamp) -> LoadedModel: the one model a measuring process keeps between calls


def decoding_demo_in(folder: str, stamp: float, text: str, steps: int) -> dict:
    """decoding_demo() on the model in `folder` as of `stamp` (its weights' version), loaded on the best device
    there is by this process and kept for its next call: what a process of its own that times the decoder runs."""
    from model.nn.device import best_device
    from model.training.checkpoint import load_model_dir
    key = (folder, stamp)
    if key not in _LOADED:
        _LOADED.clear()
        _LOADED[key] = load_model_dir(folder, device=best_device())
    return decoding_demo(_LOADED[key], text, steps)
