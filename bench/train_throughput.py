"""Training throughput of model.Transformer against torch.nn.Transformer, same process, same sizes.

    python bench/train_throughput.py [--device cpu|cuda] [--bf16] [--repeats 5] [--steps 5] [--plain-adam]

Both models: encoder-decoder, shared embeddings scaled by sqrt(d_model), sinusoidal positions,
tied output projection, dropout 0.1, label smoothing 0.1, the trainer's Adam(0.9, 0.98, 1e-9) (fused
kernel; --plain-adam: Adam's per-parameter loop). Tokens/s counts
source + target tokens. FLOPs of one training step are counted by torch's FlopCounterMode on the
real step (not a formula), and compared with a measured matmul peak on the same device."""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from model.training.allocator import keep_freed_memory, request_huge_pages  # noqa: E402  (imports no torch)

if "--default-malloc" not in sys.argv:  # the trainer process's settings (model/training/allocator.py); before torch's import
    request_huge_pages()

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from bench.common import machine, matmul_peak, sync, table, write  # noqa: E402
from model import Transformer, TransformerConfig, positional_encoding  # noqa: E402
from model.training.tasks import adam  # noqa: E402

SIZES = {
    "tiny": dict(d_model=128, n_heads=4, layers=2, d_ff=512, vocab=1000, batch=32, length=32),
    "small": dict(d_model=256, n_heads=8, layers=3, d_ff=1024, vocab=8000, batch=32, length=64),
}


class TorchBaseline(nn.Module):
    """torch.nn.Transformer with the same embeddings, positions and output projection."""

    def __init__(self, s, paper_dropout: bool = False):
        super().__init__()
        self.d = s["d_model"]
        self.embed = nn.Embedding(s["vocab"], self.d)
        self.register_buffer("pe", positional_encoding(512, self.d), persistent=False)
        self.drop = nn.Dropout(0.1)
        self.core = nn.Transformer(self.d, s["n_heads"], s["layers"], s["layers"], s["d_ff"], 0.1, batch_first=True)
        if paper_dropout:  # drop only where the paper does: sub-layer outputs (and embeddings)
            for layer in [*self.core.encoder.layers, *self.core.decoder.layers]:
                layer.dropout = nn.Identity()  # the FFN's hidden activations
                for attn in (layer.self_attn, getattr(layer, "multihead_attn", None)):
                    if attn is not None:
                        attn.dropout = 0.0  # attention weights

    def forward(self, src, tgt):
        e = lambda x: self.drop(self.embed(x) * math.sqrt(self.d) + self.pe[: x.size(1)])
        L = tgt.size(1)
        mask = nn.Transformer.generate_square_subsequent_mask(L, device=tgt.device)
        h = self.core(e(src), e(tgt), tgt_mask=mask, tgt_is_causal=True)
        return F.linear(h, self.embed.weight)


def ours(s):
    """The trainer's step (model/training/steps.py): the loss comes out of forward(labels=...), a block of rows at a time."""
    cfg = TransformerConfig(vocab_size=s["vocab"], d_model=s["d_model"], n_heads=s["n_heads"], d_ff=s["d_ff"],
                            n_encoder_layers=s["layers"], n_decoder_layers=s["layers"], dropout=0.1, max_len=512,
                            label_smoothing=0.1)  # the batches hold no padding (ids from 4 up), as for the baseline
    m = Transformer(cfg)
    return m, (lambda src, tgt, out: m(src, tgt, labels=out).loss)


def logits_loss(fwd):
    """The loss of a contender that returns logits: the whole logits tensor, then F.cross_entropy."""
    def loss(src, tgt, out):
        logits = fwd(src, tgt)
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), out.reshape(-1), label_smoothing=0.1)
    return loss


def ours_logits(s):
    """Lever check: the same model, its whole logits tensor, then F.cross_entropy (the baseline's loss)."""
    m, _ = ours(s)
    return m, logits_loss(lambda src, tgt: m(src, tgt).logits)


def ours_explicit(s):
    """Lever check: the same model forced onto the explicit (weights-returning) attention path."""
    m, _ = ours(s)
    return m, logits_loss(lambda src, tgt: m(src, tgt, return_attention=True).logits)


def baseline(s):
    m = TorchBaseline(s)
    return m, logits_loss(m)


def baseline_paper_dropout(s):
    m = TorchBaseline(s, paper_dropout=True)
    return m, logits_loss(m)


def make_step(module, loss_fn, device, bf16, fused_adam=True):
    # The trainer's Adam (model.training.tasks.adam: torch's fused kernel on the CPU and CUDA) for every contender;
    # --plain-adam measures with Adam's per-parameter loop instead (the older trainer).
    opt = adam(module.parameters(), lr=1e-4) if fused_adam else \
        torch.optim.Adam(module.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)

    def step(src, tgt_in, tgt_out):
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(src, tgt_in, tgt_out)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss
    return step


def batch(s: dict, device):
    """The size's fixed batch (seed 0, no padding: ids from 4 up): src, tgt_in, tgt_out and its token count."""
    torch.manual_seed(0)
    B, L, V = s["batch"], s["length"], s["vocab"]
    src = torch.randint(4, V, (B, L), device=device)
    tgt = torch.randint(4, V, (B, L + 1), device=device)
    return src, tgt[:, :-1], tgt[:, 1:], B * L * 2


def run(size: str, device, bf16: bool, repeats: int, steps: int, peak: float, fused_adam: bool = True) -> list[dict]:
    s = SIZES[size]
    src, tgt_in, tgt_out, tokens = batch(s, device)
    contenders = {}
    for name, build in (("model.Transformer", ours), ("model.Transformer, whole logits + F.cross_entropy", ours_logits),
                        ("model.Transformer, explicit path", ours_explicit),
                        ("torch.nn.Transformer", baseline),
                        ("torch.nn.Transformer, paper's dropout placement", baseline_paper_dropout)):
        module, loss_fn = build(s)
        module.to(device).train()
        step = make_step(module, loss_fn, device, bf16, fused_adam)
        for _ in range(3):  # warm-up
            step(src, tgt_in, tgt_out)
        with FlopCounterMode(display=False) as fc:
            step(src, tgt_in, tgt_out)
        contenders[name] = {"step": step, "times": [], "flops": fc.get_total_flops(),
                            "params": sum(p.numel() for p in module.parameters())}
    sync(device)
    for _ in range(repeats):  # alternate, so drift on a shared machine hits both alike
        for c in contenders.values():
            sync(device)
            t0 = time.perf_counter()
            for _ in range(steps):
                c["step"](src, tgt_in, tgt_out)
            sync(device)
            c["times"].append((time.perf_counter() - t0) / steps)
    rows = []
    base = statistics.median(contenders["torch.nn.Transformer"]["times"])
    for name, c in contenders.items():
        t = statistics.median(c["times"])
        rows.append({"size": size, "model": name, "params": c["params"], "tokens/s": round(tokens / t),
                     "ms/step": round(t * 1e3, 1), "speed-up": round(base / t, 2),
                     "GFLOP/step": round(c["flops"] / 1e9, 2), "achieved GFLOP/s": round(c["flops"] / t / 1e9, 1),
                     "share of peak": f"{c['flops'] / t / peak:.0%}"})
    return rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cpu")
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--sizes", default="tiny,small")
    p.add_argument("--plain-adam", action="store_true", help="Adam's per-parameter loop instead of the fused kernel")
    p.add_argument("--name", default="", help="result file name (default: train_throughput_<device>...)")
    p.add_argument("--default-malloc", action="store_true",
                   help="leave glibc's malloc thresholds and torch's page size as they are (the trainer "
                        "raises the one and asks for huge pages: model/training/allocator.py)")
    args = p.parse_args()
    kept = False if args.default_malloc else keep_freed_memory()  # the trainer's process setting, for every contender
    device = torch.device(args.device)
    dtype = torch.bfloat16 if args.bf16 else torch.float32
    peak = matmul_peak(device, dtype, n=2048 if device.type == "cuda" else 1024)
    rows = []
    for size in args.sizes.split(","):
        rows += run(size, device, args.bf16, args.repeats, args.steps, peak, not args.plain_adam)
        peak = max(peak, matmul_peak(device, dtype, n=2048 if device.type == "cuda" else 1024))
    print(f"matmul peak ({dtype}): {peak / 1e9:.1f} GFLOP/s")
    print(table(rows))
    name = args.name or (f"train_throughput_{device.type}{'_bf16' if args.bf16 else ''}"
                         f"{'_plain_adam' if args.plain_adam else ''}")
    print("wrote", write(name, {"machine": machine(), "keep_freed_memory": kept,
                                "huge_pages": os.environ.get("THP_MEM_ALLOC_ENABLE"), "peak_flops": peak, "dtype": str(dtype),
                                "rows": rows}))


if __name__ == "__main__":
    main()
