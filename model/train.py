"""Train a Transformer: the paper's recipe on a small task, one process or many (torchrun).

    python -m model.train --task en-ko --steps 3000 --out runs/en-ko
    python -m model.train --task copy --config runs/x/config.json --out runs/x   # exactly this model
    python -m model.train --resume runs/en-ko            # continue from the last checkpoint
    torchrun --nproc_per_node 2 -m model.train --task copy --steps 200 --out runs/ddp

The model is either --config (a TransformerConfig as JSON text or a JSON file, used exactly as
given) or a --preset with the size flags below it.

Files in --out (all written atomically; rank 0 writes; see model/run_files.py):
    args.json        the command's options            config.json   the model configuration
    status.json      state (queued/running/done/failed/stopped), step, loss, tokens/s, message
                     (a Message: {"code": "train.status.<name>", "args": {...}})
    metrics.jsonl    append-only, one JSON object a line ("train" and "eval" records)
    checkpoint.pt    model + optimiser + schedule state (plain dicts, torch.load weights_only)
    model/           the latest weights as a model directory (safetensors), for the inspector
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sys
import time
from pathlib import Path

import torch

from .atomic import atomic_write_json
from .checkpoint import CheckpointError, load_training_state, save_model_dir, save_training_state
from .config import PRESETS, TransformerConfig
from .corpus import TASKS
from .family import FAMILY_TASKS, family_task, is_family_task, save_family_dir
from .device import best_device, describe_device
from .messages import Message, UserError
from .run_files import Run, read_json
from .schedule import ADAM_BETAS, ADAM_EPS, noam_lambda
from .train_data import load_task, make_batch
from .transformer import Transformer

# Flags that describe the model; --config replaces all of them.
MODEL_FLAGS = ("preset", "architecture", "d_model", "heads", "d_ff", "layers", "dropout", "label_smoothing",
               "positional", "norm_first", "max_len")


# -----------------------------------------------------------------------------
# options

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m model.train", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", choices=TASKS + ("tsv",) + tuple(FAMILY_TASKS), default="copy",
                   help="a translation/LM task, a TSV corpus, or a member of the Transformer family "
                        "(mlm: BERT-style masked LM, vit-digits: ViT on 8x8 digits, detr-shapes: DETR)")
    p.add_argument("--tsv", help="a UTF-8 TSV file of source<TAB>target lines (with --task tsv)")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--out", help="run directory")
    p.add_argument("--resume", help="continue the run in this directory from its checkpoint")
    p.add_argument("--config", help="the model: a TransformerConfig as JSON text or a JSON file (replaces "
                                    "--preset and the size flags)")
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


def read_config_object(value) -> dict:
    """--config as a dict: a dict, JSON text ("{...}") or the path of a JSON file. ValueError says what is wrong."""
    if isinstance(value, str):
        text = value if value.lstrip().startswith("{") else None
        if text is None:
            try:
                text = Path(value).read_text(encoding="utf-8")
            except OSError as e:
                raise ValueError(f"cannot read {value}: {e.strerror or e}") from None
        try:
            value = json.loads(text)
        except ValueError as e:
            raise ValueError(f"not valid JSON ({e})") from None
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    return value


def read_config(value, config_class=TransformerConfig):
    """--config as a config object (a TransformerConfig, or a family member's config class)."""
    try:
        return config_class.from_dict(read_config_object(value))
    except TypeError as e:
        raise ValueError(str(e)) from None


def model_config(args, vocab_size: int) -> TransformerConfig:
    """The model to train: --config exactly as given, else the preset with the size flags applied."""
    if args.config:
        return read_config(args.config)
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


def config_problem(cfg: TransformerConfig, vocab_size: int, decoder_only: bool) -> Message | None:
    """Why this model cannot learn this task (a --config made for another one), or None."""
    if cfg.vocab_size < vocab_size:
        return Message("train.status.vocab_too_small", {"size": cfg.vocab_size, "needed": vocab_size})
    if (cfg.architecture == "decoder-only") != decoder_only or cfg.architecture == "encoder-only":
        return Message("train.status.wrong_architecture", {"architecture": cfg.architecture})
    return None


def command_line(args) -> str:
    """The command that recreates this run (for the model card)."""
    parts = ["python -m model.train"]
    defaults = vars(build_parser().parse_args([]))
    for k, v in vars(args).items():
        if k in ("resume", "fail_at_step") or v == defaults.get(k) or v is None:
            continue
        flag = "--" + k.replace("_", "-")
        if isinstance(v, dict):
            v = json.dumps(v, separators=(",", ":"))
        parts.append(flag if v is True else f"{flag} {shlex.quote(str(v))}")
    return " ".join(parts)


# -----------------------------------------------------------------------------
# the run

def _devices(args) -> tuple[torch.device, int, int]:
    """(device, world size, rank); joins the process group when torchrun started several processes."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    device = best_device() if args.device == "auto" else torch.device(args.device)
    if world > 1:
        import torch.distributed as dist
        backend = "nccl" if device.type == "cuda" else "gloo"
        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(device)
        dist.init_process_group(backend)
    if args.threads:
        torch.set_num_threads(args.threads)
    return device, world, rank


def _replica_checksums(model, world: int) -> list[list[float]]:
    """Replicas must hold the same weights: gather a checksum of every rank's parameters."""
    import torch.distributed as dist
    vec = torch.cat([p.detach().double().flatten() for p in model.parameters()])
    sums = torch.tensor([vec.sum().item(),
                         (vec * torch.arange(len(vec), dtype=torch.double, device=vec.device)).sum().item()],
                        dtype=torch.double, device=vec.device)
    gathered = [torch.zeros_like(sums) for _ in range(world)]
    dist.all_gather(gathered, sums)
    return [g.tolist() for g in gathered]


def train(args) -> int:
    """Run the training; SIGTERM / SIGINT stop it at the next step with a checkpoint. The previous
    signal handlers are restored afterwards (a test calling main() keeps its own)."""
    stop = {"flag": False}
    handlers = {sig: signal.signal(sig, lambda *_: stop.__setitem__("flag", True))
                for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        return _train(args, stop)
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def _give_up(run: Run, message: Message, code: int, **fields) -> int:
    run.update(state="failed", message=message, **fields)
    print(f"error: {message}", file=sys.stderr)
    return code


class _Seq2Seq:
    """The translation / language-model tasks (and a user's TSV corpus) for the training loop."""

    def __init__(self, args, data):
        self.args, self.data, self.tok = args, data, data.tokenizer

    def config(self, args):
        cfg = model_config(args, self.tok.vocab_size)
        return cfg, config_problem(cfg, self.tok.vocab_size, self.data.decoder_only)

    def build(self, cfg):
        return Transformer(cfg)

    def optimizer(self, model, args):
        opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=ADAM_BETAS, eps=ADAM_EPS)
        return opt, torch.optim.lr_scheduler.LambdaLR(opt, noam_lambda(model.config.d_model, args.warmup,
                                                                         args.lr_factor))

    def batch(self, step, seed, rank, batch_size, device):
        # Batches depend only on (seed, step, rank): a resumed run sees the same data.
        g = torch.Generator().manual_seed(seed * 1_000_003 + step * 7919 + rank)
        idx = torch.randint(len(self.data.train), (batch_size,), generator=g).tolist()
        tok = self.tok
        return make_batch(self.data.train, idx, tok.pad_id, tok.bos_id, tok.eos_id, self.data.decoder_only, device)

    def loss(self, model, raw, batch):
        src, tin, tout = batch
        pad = self.tok.pad_id
        logits = model(src, tin, src_pad_mask=src != pad).logits if src is not None else model(tin).logits
        n_tok = int((tout != pad).sum()) + (int((src != pad).sum()) if src is not None else 0)
        return raw.loss(logits, tout), n_tok

    def evaluate(self, model, device):
        from .evaluate import evaluate
        return evaluate(model, self.data, device)

    def save(self, directory, model, meta):
        save_model_dir(directory, model, self.tok, meta)

    def export(self, model, args, dest, seconds, command):
        from .export import export_model
        export_model(model, self.data, args, dest, seconds, command)


class _Family:
    """A member of the Transformer family (model/family): the task object does the work."""

    def __init__(self, args):
        self.task = family_task(args.task, args.seed)

    def config(self, args):
        if args.config:
            try:
                return self.task.config_class.from_dict(dict(args.config)), None
            except (TypeError, ValueError) as e:
                return None, Message("train.status.bad_config", {"detail": str(e)[:300]})
        return self.task.default_config(args), None

    def build(self, cfg):
        return self.task.build(cfg)

    def optimizer(self, model, args):
        return self.task.optimizer(model, args)

    def batch(self, step, seed, rank, batch_size, device):
        return self.task.batch(step, seed, rank, batch_size, device)

    def loss(self, model, raw, batch):
        return self.task.loss(model, batch)

    def evaluate(self, model, device):
        raw = model.module if hasattr(model, "module") else model
        was = raw.training
        raw.eval()
        try:
            with torch.no_grad():
                ev = dict(self.task.evaluate(raw, device))
        finally:
            raw.train(was)
        ev.update({std: ev[key] for std, key in self.task.standard_metrics.items() if key in ev})
        return ev

    def save(self, directory, model, meta):
        save_family_dir(directory, self.task, model, meta)

    def export(self, model, args, dest, seconds, command):
        from .export import export_family
        export_family(self.task, model, args, dest, seconds, command)


def _train(args, stop: dict) -> int:
    device, world, rank = _devices(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    run = Run(out, writer=(rank == 0))

    if is_family_task(args.task):
        job = _Family(args)
    else:
        max_len = read_config(args.config).max_len if args.config else args.max_len
        try:
            data = load_task(args.task, args.seed, args.tsv, max_len)
        except UserError as e:
            return _give_up(run, Message("train.status.corpus", {"problem": e.message}), 2, step=0,
                            total_steps=args.steps)
        except OSError as e:
            return _give_up(run, Message("train.status.corpus_unreadable", {"detail": str(e)}), 2, step=0,
                            total_steps=args.steps)
        job = _Seq2Seq(args, data)
    cfg, problem = job.config(args)
    if problem is not None:
        return _give_up(run, problem, 2, step=0, total_steps=args.steps)
    torch.manual_seed(args.seed)
    model = job.build(cfg).to(device)
    opt, sched = job.optimizer(model, args)

    step, prior_seconds, note = 0, 0.0, None
    ckpt = out / "checkpoint.pt"
    if args.resume and not ckpt.exists():  # say so: the curves restart instead of continuing
        note = Message("train.status.no_checkpoint")
    if args.resume and ckpt.exists():
        try:
            state = load_training_state(ckpt, model, opt, sched)
            step, extra = state["step"], state["extra"]
            prior_seconds = float(extra.get("train_seconds", 0.0))
            if isinstance(extra.get("rng"), torch.Tensor):  # dropout masks continue as if never stopped
                torch.set_rng_state(extra["rng"])
        except CheckpointError as e:
            return _give_up(run, Message("train.status.cannot_resume", {"detail": str(e)}), 3)
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
            job.save(out / "model", model, {"task": args.task, "step": step_now,
                                            "source": "training page", "run": out.name})

    started = time.time()
    run.update(state="running", step=step, total_steps=args.steps, message=note, pid=os.getpid(),
               task=args.task, device=describe_device(device), world_size=world,
               parameters=model.num_parameters() if hasattr(model, "num_parameters")
               else sum(p.numel() for p in model.parameters()),
               started_at=run.status.get("started_at", started))
    tokens_seen, window_start, loss_sum, loss_n = 0, time.time(), 0.0, 0
    paused = 0.0  # seconds of evaluation and saving inside the current logging window
    last_saved = step
    model.train()
    while step < args.steps:
        if stop["flag"]:
            break
        batch = job.batch(step, args.seed, rank, args.batch_size, device)
        loss, n_tok = job.loss(ddp_model, model, batch)
        if args.fail_at_step and step + 1 >= args.fail_at_step:
            loss = loss * float("nan")
        if not torch.isfinite(loss):
            return _give_up(run, Message("train.status.nan_loss", {"value": str(loss.item()), "at": step + 1,
                                                                "lr": sched.get_last_lr()[0], "saved": last_saved}),
                         4, step=step)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        step += 1
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
            ev = job.evaluate(model, device)
            run.log({"kind": "eval", "step": step, **ev, "time": time.time()})
            run.update(**ev)
        if step % args.ckpt_every == 0 or step == args.steps:
            save(step)
            last_saved = step
        paused += time.time() - t_pause
    if step > last_saved:
        save(step)
    if world > 1:
        import torch.distributed as dist
        run.update(replica_checksums=_replica_checksums(model, world))
        dist.destroy_process_group()
    if args.export and run.writer and step >= args.steps:
        run.update(message=Message("train.status.scoring"))
        job.export(model, args, Path(args.export), prior_seconds + time.time() - started, command_line(args))
    if stop["flag"] and step < args.steps:
        run.update(state="stopped", step=step, message=Message("train.status.stopped", {"at": step}))
    else:
        run.update(state="done", step=step, eta_seconds=0,
                   message=Message("train.status.finished", {"total": step,
                                                              "seconds": prior_seconds + time.time() - started}))
    return 0


# -----------------------------------------------------------------------------
# the command line

def main(argv=None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    explicit = {a.dest for a in parser._actions if any(o in argv for o in a.option_strings)}
    if args.resume:
        saved = read_json(Path(args.resume) / "args.json")
        if not isinstance(saved, dict):
            parser.error(f"{args.resume}: no readable args.json (missing or damaged), nothing to resume")
        merged = {**saved, **{k: v for k, v in vars(args).items() if k in explicit}}
        args = argparse.Namespace(**{**vars(parser.parse_args([])), **merged, "resume": args.resume,
                                     "out": args.resume})
    elif not args.out:
        parser.error("--out DIR is required (or --resume DIR)")
    if args.config:
        clash = ["--" + name.replace("_", "-") for name in MODEL_FLAGS if name in explicit]
        if clash:
            parser.error(f"--config gives the whole model; leave out {', '.join(clash)}")
        try:
            cls = family_task(args.task).config_class if is_family_task(args.task) else TransformerConfig
            args.config = read_config(args.config, cls).to_dict()  # args.json keeps the config itself
        except ValueError as e:
            parser.error(f"--config: {e}")
    for name in ("steps", "eval_every", "log_every", "ckpt_every", "batch_size", "warmup", "max_len"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    return train(args)


if __name__ == "__main__":
    sys.exit(main())
