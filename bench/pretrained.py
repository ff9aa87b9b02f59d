"""Pretrained-model budgets, measured with random weights of opus-mt-en-de's exact shape
(73.9M parameters: vocab 58,101, d_model 512, 6+6 layers, 8 heads, d_ff 2048, swish, [sin|cos] positions):

1. importing the folder (config + safetensors + tokenizer -> our Transformer)  budget < 5 s
2. one greedy translation of a 20-word sentence with all attention recorded    budget p50 < 300 ms
3. the layers x heads figure for 6 x 8 heads, each of the 3 kinds              budget < 150 ms

Needs `transformers` (requirements-dev.txt) to write the random checkpoint. Run by hand:
    python bench/pretrained.py            (results go to bench/results/pretrained.json)
Random weights decode to no particular words; a random model rarely ends a sentence, so decoding runs
to its length limit (2 x source + 10 tokens): a worst case for time."""
from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SENTENCE = ("The quick brown fox jumps over the lazy dog while the children watch from the old wooden "
            "bridge near the river today")  # 20 words


def build(folder: Path) -> None:
    from transformers import MarianConfig, MarianMTModel

    from tests.hub_fixtures_marian import SOURCE_TEXTS, TARGET_TEXTS, marian_vocab, train_spm
    src, tgt = train_spm(SOURCE_TEXTS, 110), train_spm(TARGET_TEXTS, 130)
    (folder / "source.spm").write_bytes(src)
    (folder / "target.spm").write_bytes(tgt)
    vocab = marian_vocab(src, tgt)
    pad = vocab.pop("<pad>")
    while len(vocab) < 58100:  # opus-mt-en-de's vocabulary size, with filler pieces
        vocab[f"▁filler{len(vocab)}"] = len(vocab)
    vocab["<pad>"] = len(vocab)
    del pad
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    cfg = MarianConfig(vocab_size=len(vocab), decoder_vocab_size=len(vocab), d_model=512, encoder_layers=6,
                       decoder_layers=6, encoder_attention_heads=8, decoder_attention_heads=8,
                       encoder_ffn_dim=2048, decoder_ffn_dim=2048, activation_function="swish",
                       max_position_embeddings=512, scale_embedding=True, pad_token_id=vocab["<pad>"],
                       eos_token_id=0, decoder_start_token_id=vocab["<pad>"], share_encoder_decoder_embeddings=True)
    torch.manual_seed(0)
    MarianMTModel(cfg).save_pretrained(folder)


def timed(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> dict:
    from app.charts.heatmaps import head_grid
    from app.charts.style import ready_figure
    from app.fast.chart import payload
    from model.inference.decode import greedy_decode, translate
    from model.hub import load_pretrained
    from model.lessons.probe import kind_weights

    torch.set_num_threads(max(1, torch.get_num_threads()))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "opus-mt-en-de-random"
        folder.mkdir()
        build(folder)
        loads = timed(lambda: load_pretrained(folder), 3)
        loaded = load_pretrained(folder)
        params = loaded.model.num_parameters()
        # A real opus-mt vocabulary reads 20 English words as about 25 pieces and its translation is about
        # as long; the bench's tiny sentencepiece cuts words into letters, so the budget's case is run on
        # 25 source ids and 27 decoding steps (the random model never ends a sentence on its own).
        tok = loaded.tokenizer
        src = list(range(5, 30)) + [tok.eos_id]
        step = lambda: greedy_decode(loaded.model, src, bos_id=tok.bos_id, eos_id=tok.eos_id, max_len=27,
                                     banned=tuple(tok.banned_ids))
        step()  # warm-up
        runs = timed(step, 5)
        res = translate(loaded, SENTENCE, greedy=True, max_len=27)
        figs = []
        for kind in ("encoder_self", "decoder_self", "cross"):
            w = kind_weights(res.attention, kind)
            figs += timed(lambda: payload(ready_figure(head_grid(w, layer_title="layer", head_title="head")), {}, ""), 3)
    result = {
        "parameters": params, "threads": torch.get_num_threads(),
        "import_s": {"min": min(loads), "median": statistics.median(loads)},
        "translate_25_tokens_27_steps_s": {"p50": statistics.median(runs), "max": max(runs)},
        "head_grid_6x8_s": {"p50": statistics.median(figs), "max": max(figs)},
    }
    out = ROOT / "bench" / "results" / "pretrained.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
