"""Train a Transformer: the paper's recipe on a small task, one process or many (torchrun).

    python -m model.train --task en-ko --steps 3000 --out runs/en-ko
    python -m model.train --resume runs/en-ko            # continue from the last checkpoint
    torchrun --nproc_per_node 2 -m model.train --task copy --steps 200 --out runs/ddp

Files in --out (all written atomically; rank 0 writes):
    args.json        the command's options            config.json   the model configuration
    status.json      state (queued/running/done/failed/stopped), step, loss, tokens/s, message
    metrics.jsonl    append-only, one JSON object a line ("train" and "eval" records)
    checkpoint.pt    model + optimiser + schedule state (plain dicts, torch.load weights_only)
    model/           the latest weights as a model directory (safetensors), for the inspector
"""
from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn as nn

from .checkpoint import (CheckpointError, atomic_write_json, load_training_state, save_model_dir,
                         save_training_state)
from .config import PRESETS, TransformerConfig
from .corpus import ALPHABET, TASKS, CorpusError, read_tsv_corpus, split_pairs, task_pairs
from .device import best_device, describe_device
from .schedule import ADAM_BETAS, ADAM_EPS, noam_lambda
from .transformer import Transformer

STATES = ("queued", "running", "done", "failed", "stopped")
SAMPLE_COUNT = 3  # fixed validation examples decoded at every evaluation


# -----------------------------------------------------------------------------
# files

def read_json(path: Path, default=None):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return default


def read_metrics(path: Path) -> list[dict]:
    """All complete records of a metrics.jsonl (a half-written last line is skipped)."""
    out = []
    try:
        with open(path, "rb") as f:  # bytes: one damaged (non-UTF-8) line must not hide the others
            for line in f:
                if line.endswith(b"\n"):
                    try:
                        record = json.loads(line.decode("utf-8"))
                    except ValueError:  # also UnicodeDecodeError
                        continue
                    if isinstance(record, dict):
                        out.append(record)
    except OSError:
        pass
    return out


def append_jsonl(path: Path, record: dict) -> None:
    """One write() of one whole line, then fsync: readers see whole lines or nothing new."""
    data = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


# -----------------------------------------------------------------------------
# data

@dataclass
class TaskData:
    tokenizer: object
    train: list[tuple[list[int], list[int]]]  # (source ids + [eos], target ids) per example
    valid: list[tuple[list[int], list[int]]]
    valid_text: list[tuple[str, str]]
    decoder_only: bool
    test_text: list[tuple[str, str]]


def build_tokenizer(task: str):
    from .tokenizer import SymbolTokenizer, load_tokenizer
    if task in ("copy", "reverse", "sort"):
        return SymbolTokenizer(tuple(ALPHABET))
    return load_tokenizer()  # the shipped shared EN/KO sentencepiece model (byte fallback)


def load_task(task: str, seed: int, tsv: str | None = None, max_len: int = 128) -> TaskData:
    if task == "tsv":
        if not tsv:
            raise CorpusError("--task tsv needs --tsv FILE")
        splits = split_pairs(read_tsv_corpus(Path(tsv)), seed=seed)
    else:
        splits = task_pairs(task, seed=seed)
    if not splits["train"] or not splits["valid"]:
        raise CorpusError(f"the corpus leaves {len(splits['train'])} training and {len(splits['valid'])} "
                          f"validation pairs; both must be at least 1")
    tok = build_tokenizer(task)
    limit = max_len - 2

    def enc(pairs):
        return [(tok.encode(s)[:limit] + [tok.eos_id], tok.encode(t)[:limit]) for s, t in pairs]

    return TaskData(tok, enc(splits["train"]), enc(splits["valid"]), list(splits["valid"]), task == "lm",
                    list(splits["test"]))


def make_batch(examples, idx, pad, bos, eos, decoder_only, device):
    """Pad a batch. Encoder-decoder: src (B, Ls), tgt_in [bos]+y (B, Lt), tgt_out y+[eos].
    Decoder-only: the sequence [bos]+y+[eos] shifted by one."""
    rows = [examples[i] for i in idx]
    if decoder_only:
        seqs = [[bos] + t + [eos] for _, t in rows]
        L = max(len(s) for s in seqs) - 1
        x = torch.full((len(rows), L), pad, dtype=torch.long)
        y = torch.full((len(rows), L), pad, dtype=torch.long)
        for b, s in enumerate(seqs):
            x[b, : len(s) - 1] = torch.tensor(s[:-1])
            y[b, : len(s) - 1] = torch.tensor(s[1:])
        return None, x.to(device), y.to(device)
    Ls = max(len(s) for s, _ in rows)
    Lt = max(len(t) for _, t in rows) + 1
    src = torch.full((len(rows), Ls), pad, dtype=torch.long)
    tin = torch.full((len(rows), Lt), pad, dtype=torch.long)
    tout = torch.full((len(rows), Lt), pad, dtype=torch.long)
    for b, (s, t) in enumerate(rows):
        src[b, : len(s)] = torch.tensor(s)
        tin[b, : len(t) + 1] = torch.tensor([bos] + t)
        tout[b, : len(t) + 1] = torch.tensor(t + [eos])
    return src.to(device), tin.to(device), tout.to(device)


# -----------------------------------------------------------------------------
# options

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m model.train", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", choices=TASKS + ("tsv",), default="copy")
    p.add_argument("--tsv", help="a UTF-8 TSV file of source<TAB>target lines (with --task tsv)")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--out", help="run directory")
    p.add_argument("--resume", help="continue the run in this directory from its checkpoint")
    p.add_argument("--preset", choices=sorted(PRESETS), default="teaching")
    p.add_argument("--architecture", choices=("encoder-decoder", "decoder-only"))
    p.add_argument("--d-model", type=int)
    p.add_argument("--heads", type=int)
    p.add_argument("--d-ff", type=int)
    p.add_argument("--layers", type=int, help="encoder and decoder layers each")
    p.add_argument("--dropout", type=float)
    p.add_argument("--label-smoothing", type=float)
    p.add_argument("--positional", choices=("sinusoidal", "learned"))
    p.add_argument("--norm-first", action="store_true", help="pre-LN instead of the paper's post-LN")
    p.add_argument("--max-len", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=64, help="sentences per step (per process)")
    p.add_argument("--warmup", type=int, default=400)
    p.add_argument("--lr-factor", type=float, default=1.0, help="multiplies the warm-up schedule")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-every", type=int, default=200)
    p.add_argument("--log-every", type=int, default=20)
    p.add_argument("--ckpt-every", type=int, default=200)
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, mps")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0 = torch's default)")
    p.add_argument("--export", help="after training, score on the test split and write a shippable "
                                    "model directory with a model card here (e.g. assets/models/en-ko)")
    p.add_argument("--fail-at-step", type=int, default=0, help=argparse.SUPPRESS)  # tests: inject a NaN loss
    return p


def model_config(args, vocab_size: int) -> TransformerConfig:
    base = PRESETS[args.preset]
    arch = args.architecture or ("decoder-only" if args.task == "lm" else "encoder-decoder")
    changes = dict(vocab_size=vocab_size, architecture=arch, max_len=args.max_len)
    for name, attr in (("d_model", "d_model"), ("n_heads", "heads"), ("d_ff", "d_ff"),
                       ("dropout", "dropout"), ("label_smoothing", "label_smoothing"),
                       ("positional", "positional")):
        if getattr(args, attr) is not None:
            changes[name] = getattr(args, attr)
    if args.layers is not None:
        changes["n_encoder_layers"] = changes["n_decoder_layers"] = args.layers
    if args.norm_first:
        changes["norm_first"] = True
    return base.replace(**changes)


# -----------------------------------------------------------------------------
# the run

class Run:
    """Status and metrics of one run directory; only rank 0 writes."""

    def __init__(self, out: Path, writer: bool):
        self.out, self.writer = out, writer
        status = read_json(out / "status.json", {})
        self.status: dict = status if isinstance(status, dict) else {}  # a damaged file: start afresh

    def update(self, **fields):
        self.status.update(fields, updated_at=time.time())
        if self.writer:
            atomic_write_json(self.out / "status.json", self.status)

    def log(self, record: dict):
        if self.writer:
            append_jsonl(self.out / "metrics.jsonl", record)


@torch.no_grad()
def evaluate(model, data: TaskData, device, batch_size=100, max_exact=200):
    """Validation loss (no smoothing), token accuracy (teacher forcing) and exact match
    (greedy decoding) on up to max_exact examples; plus a few sample predictions."""
    from .decode import greedy_decode_batch
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
            samples.append({"source": s, "target": t, "prediction": tok.decode(h)})
    else:
        from .decode import lm_next_token
        for s, _ in data.valid_text[:SAMPLE_COUNT]:
            ids = [tok.bos_id] + tok.encode(s)
            prefix = ids[: max(2, len(ids) // 2)]
            out = list(prefix)
            for _ in range(len(ids) - len(prefix) + 1):
                probs, _ = lm_next_token(raw, out[-(raw.config.max_len - 1):])
                nxt = int(probs.argmax())
                if nxt == tok.eos_id:
                    break
                out.append(nxt)
            samples.append({"source": tok.decode(prefix[1:]), "target": s, "prediction": tok.decode(out[1:])})
    result["samples"] = samples
    raw.train()
    return result


def train(args) -> int:
    # ---- distributed set-up (torchrun sets these variables)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if args.device == "auto":
        device = best_device()
    else:
        device = torch.device(args.device)
    if world > 1:
        import torch.distributed as dist
        backend = "nccl" if device.type == "cuda" else "gloo"
        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(device)
        dist.init_process_group(backend)
    if args.threads:
        torch.set_num_threads(args.threads)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    run = Run(out, writer=(rank == 0))
    stop = {"flag": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__("flag", True))
    signal.signal(signal.SIGINT, lambda *_: stop.__setitem__("flag", True))

    try:
        data = load_task(args.task, args.seed, args.tsv, args.max_len)
    except (CorpusError, OSError) as e:
        run.update(state="failed", message=f"corpus: {e}", step=0, total_steps=args.steps)
        print(f"error: {e}", file=sys.stderr)
        return 2
    tok = data.tokenizer
    cfg = model_config(args, tok.vocab_size)
    torch.manual_seed(args.seed)
    model = Transformer(cfg).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=ADAM_BETAS, eps=ADAM_EPS)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, noam_lambda(cfg.d_model, args.warmup, args.lr_factor))

    step, prior_seconds, note = 0, 0.0, ""
    ckpt = out / "checkpoint.pt"
    if args.resume and not ckpt.exists():  # say so: the curves restart instead of continuing
        note = "no checkpoint.pt to resume from: training starts again from step 0"
    if args.resume and ckpt.exists():
        try:
            state = load_training_state(ckpt, model, opt, sched)
            step, extra = state["step"], state["extra"]
            prior_seconds = float(extra.get("train_seconds", 0.0))
            if isinstance(extra.get("rng"), torch.Tensor):  # dropout masks continue as if never stopped
                torch.set_rng_state(extra["rng"])
        except CheckpointError as e:
            run.update(state="failed", message=f"cannot resume: {e}")
            print(f"error: {e}", file=sys.stderr)
            return 3
    if run.writer:
        atomic_write_json(out / "config.json", cfg.to_dict())
        atomic_write_json(out / "args.json", {k: v for k, v in vars(args).items() if k != "resume"})
    ddp_model = model
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel as DDP
        ddp_model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)

    def save(step_now: int):
        if run.writer:
            save_training_state(ckpt, model, opt, sched, step_now,
                                {"task": args.task, "train_seconds": prior_seconds + time.time() - started,
                                 "rng": torch.get_rng_state()})
            save_model_dir(out / "model", model, tok, {"task": args.task, "step": step_now,
                                                       "source": "training page", "run": out.name})

    started = time.time()
    run.update(state="running", step=step, total_steps=args.steps, message=note, pid=os.getpid(),
               task=args.task, device=describe_device(device), world_size=world,
               parameters=model.num_parameters(), started_at=run.status.get("started_at", started))
    n_train = len(data.train)
    tokens_seen, window_start, loss_sum, loss_n = 0, time.time(), 0.0, 0
    paused = 0.0  # seconds of evaluation and saving inside the current logging window
    last_saved = step
    model.train()
    while step < args.steps:
        if stop["flag"]:
            break
        # Batches depend only on (seed, step, rank): a resumed run sees the same data.
        g = torch.Generator().manual_seed(args.seed * 1_000_003 + step * 7919 + rank)
        idx = torch.randint(n_train, (args.batch_size,), generator=g).tolist()
        src, tin, tout = make_batch(data.train, idx, tok.pad_id, tok.bos_id, tok.eos_id, data.decoder_only, device)
        if src is not None:
            logits = ddp_model(src, tin, src_pad_mask=src != tok.pad_id).logits
        else:
            logits = ddp_model(tin).logits
        loss = model.loss(logits, tout)
        if args.fail_at_step and step + 1 >= args.fail_at_step:
            loss = loss * float("nan")
        if not torch.isfinite(loss):
            msg = (f"the loss became {loss.item()} at step {step + 1} (learning rate "
                   f"{sched.get_last_lr()[0]:.2e}); training stopped. The checkpoint from step "
                   f"{last_saved} is kept. Try a lower learning-rate factor or more warm-up steps.")
            run.update(state="failed", message=msg, step=step)
            print(f"error: {msg}", file=sys.stderr)
            return 4
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        step += 1
        n_tok = int((tout != tok.pad_id).sum()) + (int((src != tok.pad_id).sum()) if src is not None else 0)
        tokens_seen += n_tok * world
        loss_sum += loss.item()
        loss_n += 1
        if step % args.log_every == 0 or step == args.steps:
            dt = time.time() - window_start
            tps = tokens_seen / max(dt - paused, 1e-9)  # training speed: evaluation time left out
            elapsed = prior_seconds + time.time() - started
            rec = {"kind": "train", "step": step, "loss": loss_sum / loss_n, "lr": sched.get_last_lr()[0],
                   "tokens_per_second": tps, "time": time.time()}
            run.log(rec)
            remaining = (args.steps - step) * dt / max(loss_n, 1)
            run.update(step=step, loss=rec["loss"], lr=rec["lr"], tokens_per_second=tps,
                       eta_seconds=remaining, elapsed_seconds=elapsed)
            tokens_seen, window_start, loss_sum, loss_n, paused = 0, time.time(), 0.0, 0, 0.0
        t_pause = time.time()
        if run.writer and (step % args.eval_every == 0 or step == args.steps):
            ev = evaluate(model, data, device)
            run.log({"kind": "eval", "step": step, **ev, "time": time.time()})
            run.update(**{k: v for k, v in ev.items()})
        if step % args.ckpt_every == 0 or step == args.steps:
            save(step)
            last_saved = step
        paused += time.time() - t_pause
    if step > last_saved:
        save(step)
    if world > 1:
        import torch.distributed as dist
        # Replicas must hold the same weights: gather a checksum of every rank's parameters.
        vec = torch.cat([p.detach().double().flatten() for p in model.parameters()])
        sums = torch.tensor([vec.sum().item(), (vec * torch.arange(len(vec), dtype=torch.double, device=vec.device)).sum().item()],
                            dtype=torch.double, device=vec.device)
        gathered = [torch.zeros_like(sums) for _ in range(world)]
        dist.all_gather(gathered, sums)
        run.update(replica_checksums=[g.tolist() for g in gathered])
        dist.destroy_process_group()
    if args.export and run.writer and step >= args.steps:
        run.update(message="scoring on the test split for the export")
        export_model(model, data, args, Path(args.export), prior_seconds + time.time() - started)
    if stop["flag"] and step < args.steps:
        run.update(state="stopped", step=step, message=f"stopped at step {step}; resume to continue")
    else:
        run.update(state="done", step=step, message=f"finished {step} steps in {prior_seconds + time.time() - started:.0f} s",
                   eta_seconds=0)
    return 0


def command_line(args) -> str:
    """The command that recreates this run (for the model card)."""
    parts = ["python -m model.train"]
    defaults = vars(build_parser().parse_args([]))
    for k, v in vars(args).items():
        if k in ("resume", "fail_at_step") or v == defaults.get(k) or v is None:
            continue
        flag = "--" + k.replace("_", "-")
        parts.append(flag if v is True else f"{flag} {v}")
    return " ".join(parts)


@torch.no_grad()
def score_test(model, data: TaskData, beam_size: int = 4, alpha: float = 0.6) -> dict:
    """Test-split scores: exact match and BLEU for translation, loss/perplexity for a language model."""
    from .decode import beam_search, greedy_decode_batch
    from .metrics import bleu, exact_match
    tok = data.tokenizer
    model.eval()
    if data.decoder_only:
        enc = [(tok.encode(s)[: model.config.max_len - 2] + [tok.eos_id], tok.encode(t)[: model.config.max_len - 2])
               for s, t in data.test_text]
        tmp = TaskData(tok, [], enc, data.test_text, True, [])
        ev = evaluate(model, tmp, model.device)
        return {"test_sentences": len(enc), "test_loss": ev["val_loss"], "test_perplexity": math.exp(ev["val_loss"]),
                "test_next_token_accuracy": ev["val_token_acc"]}
    sources = [tok.encode(s)[: model.config.max_len - 2] + [tok.eos_id] for s, _ in data.test_text]
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


def layer_text(cfg: TransformerConfig) -> str:
    if cfg.architecture == "encoder-decoder":
        return f"layers={cfg.n_encoder_layers} encoder + {cfg.n_decoder_layers} decoder"
    if cfg.architecture == "decoder-only":
        return f"layers={cfg.n_decoder_layers} decoder"
    return f"layers={cfg.n_encoder_layers} encoder"


def export_model(model, data: TaskData, args, dest: Path, seconds: float) -> dict:
    """Write a shippable model directory: weights, config, tokenizer, meta.json with test scores,
    and a human-readable card (CARD.md)."""
    t0 = time.time()
    scores = score_test(model, data)
    meta = {"task": args.task, "steps": args.steps, "seed": args.seed, "train_seconds": round(seconds, 1),
            "score_seconds": round(time.time() - t0, 1), "command": command_line(args),
            "parameters": model.num_parameters(), "device": describe_device(model.device),
            "torch": torch.__version__, "scores": scores, "source": "shipped"}
    save_model_dir(dest, model, data.tokenizer, meta)
    cfg = model.config
    lines = [f"# Model card: {dest.name}", "",
             f"- Task: `{args.task}`; architecture: {cfg.architecture}, {'pre-LN' if cfg.norm_first else 'post-LN (as in the paper)'}",
             f"- Size: d_model={cfg.d_model}, heads={cfg.n_heads}, d_ff={cfg.d_ff}, {layer_text(cfg)}, "
             f"vocab={cfg.vocab_size} (shared sentencepiece), {model.num_parameters():,} parameters",
             f"- Recipe: Adam(0.9, 0.98, 1e-9), warm-up schedule (warmup={args.warmup}, factor={args.lr_factor}), "
             f"label smoothing {cfg.label_smoothing}, dropout {cfg.dropout}, batch {args.batch_size} sentences, seed {args.seed}",
             f"- Trained for {args.steps} steps in {seconds / 60:.1f} min on {describe_device(model.device)} (torch {torch.__version__})",
             "", "## Recreate", "", "```bash", command_line(args), "```", "", "## Test-split scores", ""]
    for k, v in scores.items():
        if not isinstance(v, list):
            lines.append(f"- {k}: {v:.4f}" if isinstance(v, float) else f"- {k}: {v}")
    if "bleu_greedy" in scores:
        lines += ["", "BLEU is sacrebleu corpus BLEU. `bleu_*` uses character tokenisation for Korean "
                  "(one token per Hangul syllable; sacrebleu's ko-mecab needs MeCab, not available offline); "
                  "`bleu_words_*` uses 13a on space-separated words (eojeol), a harsher measure.",
                  "The test split holds subject–verb combinations never seen in training "
                  "(see `model.corpus.held_out_combinations`)."]
    if scores.get("errors"):
        lines += ["", "## Errors on the test split (first 10)", ""]
        lines += [f"- {e['source']} → `{e['beam']}` (reference `{e['reference']}`)" for e in scores["errors"]]
    (dest / "CARD.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in scores.items() if not isinstance(v, list)}, indent=1))
    return scores


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.resume:
        saved = read_json(Path(args.resume) / "args.json")
        if not isinstance(saved, dict):
            parser.error(f"{args.resume}: no readable args.json (missing or damaged), nothing to resume")
        explicit = {a.dest for a in parser._actions if any(o in (argv or sys.argv[1:]) for o in a.option_strings)}
        merged = {**saved, **{k: v for k, v in vars(args).items() if k in explicit}}
        args = argparse.Namespace(**{**vars(parser.parse_args([])), **merged, "resume": args.resume,
                                     "out": args.resume})
    elif not args.out:
        parser.error("--out DIR is required (or --resume DIR)")
    for name in ("steps", "eval_every", "log_every", "ckpt_every", "batch_size", "warmup", "max_len"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    return train(args)


if __name__ == "__main__":
    sys.exit(main())
