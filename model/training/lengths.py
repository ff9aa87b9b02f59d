"""Lengths never seen: does a position scheme carry a model past the lengths it was trained on?

Section 3.5 of the paper chose sinusoids "because we hypothesized it may allow the model to extrapolate to
sequence lengths longer than the ones encountered during training". This study tests that on a task whose
answer depends on position alone: reverse a string of random symbols. A tiny decoder-only Transformer (our
model/nn, causal self-attention) reads `<bos> x1 .. xn <sep>` and must write `xn .. x1`. It trains on lengths
1 .. L and is tested on strings of exactly L, 2L and 4L symbols, once per position scheme (sinusoidal,
learned, rotary, ALiBi) and seed.

    python -m model.training.lengths --out runs/lengths --ship assets/study/lengths.json [--seeds 5] [--threads 1]

Every run uses the same test strings (`split_seed`): a seed changes the initial weights and the training
strings only. Accuracy is the share of answer symbols predicted right with the true answer so far given
(teacher forcing); chance is 1 / symbols. The learned table has rows for the training lengths only
(max_len = 2L + 2, as a learned table is sized to the data it sees): a longer string has no position to
look up, so those cells are refused (null, with the reason) rather than clamped."""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

SCHEMES = ("sinusoidal", "learned", "rotary", "alibi")
DEFAULTS = {"train_len": 8, "symbols": 10, "steps": 800, "batch_size": 64, "lr": 3e-3, "warmup": 100,
            "d_model": 64, "n_heads": 4, "d_ff": 256, "layers": 2, "test_strings": 200, "split_seed": 0,
            "seeds": 5, "threads": 1}
MULTIPLES = (1, 2, 4)
PAD, BOS, SEP = 0, 1, 2  # symbol s is id s + 3


def config_for(scheme: str, opts: dict):
    from model.nn.config import TransformerConfig
    L = opts["train_len"]
    # the longest test sequence is <bos> + 4L symbols + <sep> + 4L answers; the learned table only the training's
    max_len = 2 * L + 2 if scheme == "learned" else 2 * max(MULTIPLES) * L + 2
    return TransformerConfig(vocab_size=opts["symbols"] + 3, d_model=opts["d_model"], n_heads=opts["n_heads"],
                             d_ff=opts["d_ff"], n_encoder_layers=0, n_decoder_layers=opts["layers"], dropout=0.0,
                             max_len=max_len, architecture="decoder-only", positional=scheme, label_smoothing=0.0)


def batch(lengths, opts: dict, gen):
    """ids (B, T) and labels (B, T): labels are PAD (ignored) except where the next token is an answer symbol."""
    import torch
    T = 2 * max(lengths) + 2
    ids = torch.full((len(lengths), T), PAD, dtype=torch.long)
    labels = torch.full((len(lengths), T), PAD, dtype=torch.long)
    for b, n in enumerate(lengths):
        x = torch.randint(0, opts["symbols"], (n,), generator=gen) + 3
        seq = torch.cat([torch.tensor([BOS]), x, torch.tensor([SEP]), x.flip(0)])  # (2n + 2,)
        ids[b, : seq.numel()] = seq
        labels[b, n + 1: 2 * n + 1] = x.flip(0)  # position n+1 (<sep>) predicts the first answer symbol
    return ids, labels


def test_sets(opts: dict) -> dict[int, tuple]:
    """The fixed test strings, one set per multiple of L, the same for every run."""
    import torch
    gen = torch.Generator().manual_seed(10_000 + opts["split_seed"])
    return {m: batch([m * opts["train_len"]] * opts["test_strings"], opts, gen) for m in MULTIPLES}


def accuracy(model, ids, labels) -> float:
    import torch
    with torch.no_grad():
        pred = model(ids).logits.argmax(-1)  # (B, T)
    keep = labels != PAD
    return float((pred[keep] == labels[keep]).float().mean())


def train_one(scheme: str, seed: int, opts: dict, tests: dict) -> dict:
    """Train one (scheme, seed) and score it at every test length."""
    import torch

    from model.nn.transformer import Transformer
    torch.manual_seed(seed)
    cfg = config_for(scheme, opts)
    model = Transformer(cfg)
    optim = torch.optim.Adam(model.parameters(), lr=opts["lr"], betas=(0.9, 0.98), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(optim, lambda s: min(1.0, (s + 1) / opts["warmup"]))
    gen = torch.Generator().manual_seed(seed)
    started = time.perf_counter()
    model.train()
    for _ in range(opts["steps"]):
        lengths = torch.randint(1, opts["train_len"] + 1, (opts["batch_size"],), generator=gen).tolist()
        ids, labels = batch(lengths, opts, gen)
        loss = model(ids, labels=labels).loss
        optim.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optim.step()
        sched.step()
    seconds = time.perf_counter() - started
    model.eval()
    scores, refused = {}, {}
    for m, (ids, labels) in tests.items():
        if ids.size(1) > cfg.max_len:
            scores[str(m)], refused[str(m)] = None, f"{ids.size(1)} positions > the learned table's {cfg.max_len}"
        else:
            scores[str(m)] = accuracy(model, ids, labels)
    return {"scheme": scheme, "seed": seed, "accuracy": scores, "refused": refused,
            "train_seconds": seconds, "final_loss": float(loss.detach())}


def spread(values: list) -> dict:
    vals = [v for v in values if v is not None]
    if not vals:
        return {"median": None, "min": None, "max": None, "n": 0, "values": []}
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals), "n": len(vals), "values": vals}


def table(runs: list[dict], opts: dict) -> list[dict]:
    """One row per scheme: the accuracy's spread over seeds at each test length."""
    rows = []
    for scheme in SCHEMES:
        mine = sorted((r for r in runs if r["scheme"] == scheme), key=lambda r: r["seed"])
        refused = next((r["refused"] for r in mine if r["refused"]), {})
        rows.append({"scheme": scheme, "seeds": len(mine),
                     "accuracy": {str(m): spread([r["accuracy"][str(m)] for r in mine]) for m in MULTIPLES},
                     "refused": refused})
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="folder for one result file per run")
    p.add_argument("--ship", type=Path, help="also write the table here (assets/study/lengths.json)")
    for key, value in DEFAULTS.items():
        p.add_argument("--" + key.replace("_", "-"), type=type(value), default=value)
    p.add_argument("--schemes", default=",".join(SCHEMES))
    args = p.parse_args(argv)
    import torch
    torch.set_num_threads(args.threads)
    opts = {k: getattr(args, k) for k in DEFAULTS}
    schemes = [s for s in args.schemes.split(",") if s]
    args.out.mkdir(parents=True, exist_ok=True)
    tests = test_sets(opts)
    started = time.time()
    runs = []
    for seed in range(opts["seeds"]):
        for scheme in schemes:
            path = args.out / f"{scheme}-s{seed}.json"
            saved = json.loads(path.read_text()) if path.exists() else None
            if not (isinstance(saved, dict) and saved.get("options") == opts):
                saved = {**train_one(scheme, seed, opts, tests), "options": opts}
                path.write_text(json.dumps(saved))
                print(f"{scheme} seed {seed}: {saved['accuracy']} ({saved['train_seconds']:.1f} s)", flush=True)
            runs.append(saved)
    doc = {"study": "lengths", "task": "reverse", "options": opts, "multiples": list(MULTIPLES),
           "chance": 1.0 / opts["symbols"], "rows": table(runs, opts),
           "command": "python -m model.training.lengths " + " ".join(argv if argv is not None else sys.argv[1:]),
           "seconds": time.time() - started,
           "run_seconds": statistics.median(r["train_seconds"] for r in runs) if runs else None,
           "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}",
           "date": time.strftime("%Y-%m-%d", time.gmtime())}
    (args.out / "lengths.json").write_text(json.dumps(doc, indent=1))
    if args.ship:
        args.ship.parent.mkdir(parents=True, exist_ok=True)
        args.ship.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
