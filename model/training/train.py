"""Train a Transformer: the paper's recipe on a small task, one process or many (torchrun).

    python -m model.training.train --task en-ko --steps 3000 --out runs/en-ko
    python -m model.training.train --task copy --config runs/x/config.json --out runs/x   # exactly this model
    python -m model.training.train --resume runs/en-ko            # continue from the last checkpoint
    torchrun --nproc_per_node 2 -m model.training.train --task copy --steps 200 --out runs/ddp

The model is either --config (a TransformerConfig as JSON text or a JSON file, used exactly as
given) or a --preset with the size flags below it.

Files in --out (all written atomically; rank 0 writes; see model/training/run_files.py):
    args.json        the command's options            config.json   the model configuration
    status.json      state (queued/running/done/failed/stopped), step, loss, tokens/s, message
                     (a Message: {"code": "train.status.<name>", "args": {...}})
    metrics.jsonl    append-only, one JSON object a line ("train" and "eval" records)
    checkpoint.pt    model + optimiser + schedule state (plain dicts, torch.load weights_only)
    model/           the latest weights as a model directory (safetensors), for the inspector; with
                     --average-last K, at the end the mean of the last K checkpoints' weights
    avg/             with --average-last K: step-N.safetensors, the weights of the last K checkpoints
    .trainer.lock    held (flock) by the one trainer working in the folder; a second one refuses

Exit codes: 0 done or stopped, 2 bad options / corpus / config, 3 cannot resume, 4 the loss became
NaN, 5 a save failed (disk full, read-only), 6 another trainer holds the folder. A failure is written
to status.json ("failed", a message, "resumable": whether resuming can help) whenever the disk allows.
"""
from __future__ import annotations

import argparse
import contextlib
import errno
import json
import math
import os
import shlex
import shutil
import signal
import sys
import time
from pathlib import Path

import torch

from model.training.allocator import keep_freed_memory
from model.atomic import atomic_write_json
from model.training.checkpoint import (
    CheckpointError, average_into, load_training_state, save_model_dir, save_training_state, save_weights,
)
from model.nn.config import PRESETS, TransformerConfig
from model.data.corpus import TASKS
from model.family import FAMILY_TASKS, family_task, is_family_task, save_family_dir
from model.nn.device import best_device, describe_device
from model.messages import Message, UserError
from model.training.run_files import Run, TrainerLock, read_json
from model.training.schedule import ADAM_BETAS, ADAM_EPS, noam_lambda
from model.data.train_data import TokenBatches, load_task, make_batch
from model.nn.transformer import Transformer

# Flags that describe the model; --config replaces all of them.
MODEL_FLAGS = ("preset", "architecture", "d_model", "heads", "d_ff", "layers", "dropout", "label_smoothing",
               "positional", "norm_first", "max_len")


# -----------------------------------------------------------------------------
# options

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m model.training.train", description=__doc__, allow_abbrev=False,
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
    p.add_argument("--batch-tokens", type=int, default=0, metavar="N",
                   help="batch by tokens instead: sentences of similar length together, at most N tokens of "
                        "padded source + target per step (per process); 0 = off, --batch-size decides")
    p.add_argument("--warmup", type=int, default=400)
    p.add_argument("--lr-factor", type=float, default=1.0, help="multiplies the warm-up schedule")
    p.add_argument("--cooldown", type=float, default=0.0, metavar="FRACTION",
                   help="the last FRACTION of --steps lowers the rate linearly towards 0 (0 = the paper's schedule)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-every", type=int, default=200)
    p.add_argument("--log-every", type=int, default=20)
    p.add_argument("--log-first", action="store_true",
                   help="also log the first step of the run (and of a resumed run): the page shows it at once")
    p.add_argument("--ckpt-every", type=int, default=200)
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, mps")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0 = torch's default)")
    p.add_argument("--average-last", type=int, default=0, metavar="K",
                   help="keep the weights of the last K checkpoints (avg/) and make the final model their "
                        "mean, as the paper does (section 6.1: the last 5 for base models, 20 for big); 0 = off")
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
    parts = ["python -m model.training.train"]
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
    keep_freed_memory()  # each step's tensors in the last step's pages, not fresh ones (model/training/allocator.py)
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


class _SaveFailed(Exception):
    """A checkpoint, model folder or weights snapshot could not be written (`error` says why)."""

    def __init__(self, error: BaseException, step: int):
        super().__init__(str(error))
        self.error, self.step = error, step


DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _free_mb(folder: Path) -> int | None:
    try:
        return int(shutil.disk_usage(folder).free // 2**20)
    except OSError:
        return None


def save_problem(error: BaseException, step: int, folder: Path) -> Message:
    """What a failed write means for the learner: the disk is full (with what is left), or why else."""
    cause = error
    while isinstance(cause, CheckpointError) and (cause.__cause__ or cause.__context__) is not None:
        cause = cause.__cause__ or cause.__context__
    text = str(error)
    free = _free_mb(folder)
    full = (isinstance(cause, OSError) and cause.errno in DISK_ERRNOS) or "unexpected pos" in text \
        or "No space left" in text or "file write failed" in text
    if full and free is not None:
        return Message("train.status.disk_full", {"free_mb": free, "step": step})
    detail = cause.strerror if isinstance(cause, OSError) and cause.strerror else text
    if isinstance(cause, OSError) and cause.filename:
        detail = f"{detail}: {cause.filename}"
    if full:
        detail = f"disk full ({detail})"
    return Message("train.status.save_failed", {"detail": " ".join(detail.split())[:300], "step": step})


def remove_leftovers(out: Path) -> list[Path]:
    """Temporary files a trainer killed during a save leaves behind (model.atomic names them
    `.<name>.<random>.tmp`): the checkpoint's, the model folder's and the averaging snapshots'.
    Only the trainer writes these, and it holds the folder's lock, so none is in use."""
    gone = []
    for pattern in (".checkpoint.pt.*.tmp", "model/.*.tmp", "avg/.*.tmp"):
        for p in out.glob(pattern):
            with contextlib.suppress(OSError):
                p.unlink()
                gone.append(p)
    return gone


def train(args) -> int:
    """Run the training; SIGTERM / SIGINT stop it at the next step with a checkpoint. The previous
    signal handlers are restored afterwards (a test calling main() keeps its own).
    Rank 0 holds the folder's lock for the whole run: a second trainer on the same --out refuses."""
    out = Path(args.out)
    rank = int(os.environ.get("RANK", "0"))
    lock = None
    if rank == 0:
        try:
            out.mkdir(parents=True, exist_ok=True)
            lock = TrainerLock(out)
            holder = lock.acquire()
        except OSError as e:
            print(f"error: cannot use the run folder {out}: {e.strerror or e}", file=sys.stderr)
            return 5
        if holder is not None:
            pid = f" (pid {holder})" if holder else ""
            print(f"error: {out} is in use by another trainer{pid}; wait for it to finish or stop it first. "
                  f"Nothing was written.", file=sys.stderr)
            return 6
        remove_leftovers(out)
    stop = {"flag": False}
    handlers = {sig: signal.signal(sig, lambda *_: stop.__setitem__("flag", True))
                for sig in (signal.SIGTERM, signal.SIGINT)}
    ctx: dict = {}
    try:
        return _train(args, stop, ctx)
    except _SaveFailed as e:
        return _save_failed(ctx.get("run") or Run(out, writer=rank == 0), save_problem(e.error, e.step, out))
    except OSError as e:
        if e.errno not in DISK_ERRNOS + (errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO):
            raise
        return _save_failed(ctx.get("run") or Run(out, writer=rank == 0), save_problem(e, ctx.get("step", 0), out))
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        if lock is not None:
            lock.release()


def _save_failed(run: Run, message: Message) -> int:
    """Say why the run ended, in status.json if the disk still takes it, and on stderr always."""
    if message.code == "train.status.disk_full":
        print(f"error: disk full ({message.args['free_mb']:,} MB free) while saving step {message.args['step']}; "
              f"the last complete checkpoint is kept", file=sys.stderr)
    else:
        print(f"error: could not save at step {message.args['step']}: {message.args['detail']}", file=sys.stderr)
    if run.writer:
        fields = dict(state="failed", message=message, resumable=True)
        try:
            run.update(**fields)
        except OSError:  # no room even for status.json's temporary file: overwrite it in place
            try:
                run.update_in_place(**fields)
            except OSError as e:
                print(f"error: could not write status.json either ({e.strerror or e})", file=sys.stderr)
    return 5


def _give_up(run: Run, message: Message, code: int, **fields) -> int:
    fields.setdefault("resumable", False)  # a bad corpus, config or checkpoint: the same resume fails again
    run.update(state="failed", message=message, **fields)
    print(f"error: {message}", file=sys.stderr)
    return code


def adam(params, lr: float = 1.0) -> torch.optim.Adam:
    """The paper's Adam (beta1 0.9, beta2 0.98, eps 1e-9), with torch's fused kernel where the parameters
    live on the CPU or a CUDA device: one kernel for all parameters instead of a dozen ops each (on the
    CPU 16 ms instead of 62 ms a step for the teaching model, docs/benchmarks.md); plain Adam elsewhere."""
    params = list(params)
    if params and all(p.device.type in ("cpu", "cuda") and p.is_floating_point() for p in params):
        try:
            return torch.optim.Adam(params, lr=lr, betas=ADAM_BETAS, eps=ADAM_EPS, fused=True)
        except (RuntimeError, TypeError, ValueError):
            pass
    return torch.optim.Adam(params, lr=lr, betas=ADAM_BETAS, eps=ADAM_EPS)


class _Seq2Seq:
    """The translation / language-model tasks (and a user's TSV corpus) for the training loop."""

    def __init__(self, args, data):
        self.args, self.data, self.tok = args, data, data.tokenizer
        self.by_tokens = (TokenBatches(data.train, args.batch_tokens, data.decoder_only)
                          if getattr(args, "batch_tokens", 0) else None)

    def config(self, args):
        cfg = model_config(args, self.tok.vocab_size)
        return cfg, config_problem(cfg, self.tok.vocab_size, self.data.decoder_only)

    def build(self, cfg):
        return Transformer(cfg)

    def optimizer(self, model, args):
        opt = adam(model.parameters())
        return opt, torch.optim.lr_scheduler.LambdaLR(opt, noam_lambda(model.config.d_model, args.warmup,
                                                                         args.lr_factor, total=args.steps,
                                                                         cooldown=args.cooldown))

    def batch(self, step, seed, rank, batch_size, device):
        # Batches depend only on (seed, step, rank): a resumed run sees the same data.
        if self.by_tokens is not None:
            idx = self.by_tokens.indices(seed, step, rank)
        else:
            g = torch.Generator().manual_seed(seed * 1_000_003 + step * 7919 + rank)
            idx = torch.randint(len(self.data.train), (batch_size,), generator=g).tolist()
        tok = self.tok
        return make_batch(self.data.train, idx, tok.pad_id, tok.bos_id, tok.eos_id, self.data.decoder_only, device)

    def loss(self, model, raw, batch):
        src, tin, tout = batch
        pad = self.tok.pad_id
        # The loss comes out of forward() (through DDP's forward, so data-parallel gradients are synchronised),
        # computed a block of rows at a time without the whole logits tensor (model/nn/fast_loss.py).
        out = model(src, tin, src_pad_mask=src != pad, labels=tout) if src is not None else model(tin, labels=tout)
        n_tok = int((tout != pad).sum()) + (int((src != pad).sum()) if src is not None else 0)
        return out.loss, n_tok

    def evaluate(self, model, device):
        from model.inference.evaluate import evaluate
        return evaluate(model, self.data, device)

    def save(self, directory, model, meta):
        save_model_dir(directory, model, self.tok, meta)

    def export(self, model, args, dest, seconds, command, averaged=None):
        from model.training.export import export_model
        export_model(model, self.data, args, dest, seconds, command, averaged_steps=averaged)


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

    def export(self, model, args, dest, seconds, command, averaged=None):
        from model.training.export import export_family
        export_family(self.task, model, args, dest, seconds, command, averaged_steps=averaged)


def _train(args, stop: dict, ctx: dict) -> int:
    device, world, rank = _devices(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    run = ctx["run"] = Run(out, writer=(rank == 0))

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
    saved_at = None  # the step of the checkpoint on disk that belongs to this run (None: none yet)
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
            saved_at = step
        except CheckpointError as e:
            return _give_up(run, Message("train.status.cannot_resume", {"detail": str(e)}), 3)
    averaging = Averaging(out / "avg", args.average_last) if args.average_last and run.writer else None
    if averaging is not None:
        averaging.forget_after(step)  # snapshots a killed run wrote after its last checkpoint
    if run.writer:
        atomic_write_json(out / "config.json", cfg.to_dict())
        atomic_write_json(out / "args.json", {k: v for k, v in vars(args).items() if k != "resume"})
    ddp_model = model
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel as DDP
        ddp_model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)

    def save(step_now: int):
        if not run.writer:
            return
        try:
            save_training_state(ckpt, model, opt, sched, step_now,
                                {"task": args.task, "train_seconds": prior_seconds + time.time() - started,
                                 "rng": torch.get_rng_state()})
            job.save(out / "model", model, {"task": args.task, "step": step_now,
                                            "source": "training page", "run": out.name})
            if averaging is not None and (step_now % args.ckpt_every == 0 or step_now == args.steps):
                averaging.add(model, step_now)  # the regular checkpoints only, not a stop's
        except (OSError, RuntimeError) as e:  # disk full (torch: "inline_container.cc: unexpected pos"), read-only
            raise _SaveFailed(e, step_now) from None

    started = time.time()
    run.update(state="running", step=step, total_steps=args.steps, message=note, pid=os.getpid(),
               task=args.task, device=describe_device(device), world_size=world,
               parameters=model.num_parameters() if hasattr(model, "num_parameters")
               else sum(p.numel() for p in model.parameters()),
               started_at=run.status.get("started_at", started), resumable=True, averaged=None)
    tokens_seen, window_start, loss_sum, loss_n = 0, time.time(), 0.0, 0
    paused = 0.0  # seconds of evaluation and saving inside the current logging window
    start_step = step
    model.train()
    while step < args.steps:
        ctx["step"] = step
        if stop["flag"]:
            break
        batch = job.batch(step, args.seed, rank, args.batch_size, device)
        loss, n_tok = job.loss(ddp_model, model, batch)
        if args.fail_at_step and step + 1 >= args.fail_at_step:
            loss = loss * float("nan")
        if not torch.isfinite(loss):
            msg, extra = nan_message(str(loss.item()), step, sched.get_last_lr()[0], saved_at)
            return _give_up(run, msg, 4, step=step, **extra)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        step += 1
        tokens_seen += n_tok * world
        loss_sum += loss.item()
        loss_n += 1
        if step % args.log_every == 0 or step == args.steps or (args.log_first and step == start_step + 1):
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
            ev = bounded(job.evaluate(model, device))
            run.log({"kind": "eval", "step": step, **ev, "time": time.time()})
            run.update(**ev)
        if step % args.ckpt_every == 0 or step == args.steps:
            save(step)
            saved_at = step
        paused += time.time() - t_pause
    ctx["step"] = step
    if step > (saved_at if saved_at is not None else start_step):
        save(step)
    if world > 1:
        import torch.distributed as dist
        run.update(replica_checksums=_replica_checksums(model, world))
        dist.destroy_process_group()
    final, averaged = model, None
    if averaging is not None and step >= args.steps and len(averaging.steps()) > 1:
        final, averaged = averaging.average(job, model)
        ev = bounded(job.evaluate(final, device))
        run.update(averaged={"steps": averaged, **{k: v for k, v in ev.items() if k != "samples"}})
        run.log({"kind": "averaged", "step": step, "steps": averaged, **ev, "time": time.time()})
        try:
            job.save(out / "model", final, {"task": args.task, "step": step, "source": "training page",
                                            "run": out.name, "averaged_steps": averaged})
        except (OSError, RuntimeError) as e:
            raise _SaveFailed(e, step) from None
    if args.export and run.writer and step >= args.steps:
        run.update(message=Message("train.status.scoring"))
        job.export(final, args, Path(args.export), prior_seconds + time.time() - started, command_line(args),
                   averaged)
    seconds = prior_seconds + time.time() - started
    if stop["flag"] and step < args.steps:
        run.update(state="stopped", step=step, message=Message("train.status.stopped", {"at": step}))
    elif averaged:
        run.update(state="done", step=step, eta_seconds=0,
                   message=Message("train.status.finished_averaged",
                                   {"total": step, "seconds": seconds, "count": len(averaged),
                                    "steps": ", ".join(map(str, averaged))}))
    else:
        run.update(state="done", step=step, eta_seconds=0,
                   message=Message("train.status.finished", {"total": step, "seconds": seconds}))
    return 0


def nan_message(value: str, step: int, lr: float, saved_at: int | None) -> tuple[Message, dict]:
    """The message after a NaN loss at step+1, true to what is on disk, and whether resuming can help:
    not without a checkpoint, nor from the very state whose next batch gave the NaN (batches depend
    only on the seed and the step, so a resume would repeat it)."""
    args = {"value": value, "at": step + 1, "lr": lr}
    if saved_at is None:
        return Message("train.status.nan_loss_no_checkpoint", args), {"resumable": False}
    if saved_at >= step:
        return Message("train.status.nan_loss_bad_checkpoint", {**args, "saved": saved_at}), {"resumable": False}
    return Message("train.status.nan_loss", {**args, "saved": saved_at}), {"resumable": True}


def bounded(ev: dict) -> dict:
    """An evaluation's record with its sample strings cut short (a family task's too): it is written
    into status.json and metrics.jsonl at every evaluation."""
    from model.inference.evaluate import clip
    samples = ev.get("samples")
    if isinstance(samples, list):
        ev = {**ev, "samples": [{k: clip(v) if isinstance(v, str) else v for k, v in s.items()}
                                if isinstance(s, dict) else s for s in samples[:10]]}
    return ev


class Averaging:
    """--average-last K: the weights of the last K checkpoints in `folder` (step-N.safetensors, written
    atomically, the oldest pruned), and their mean at the end of training (the paper, section 6.1)."""

    def __init__(self, folder: Path, k: int):
        self.folder, self.k = Path(folder), k

    def _files(self) -> dict[int, Path]:
        found = {}
        for p in self.folder.glob("step-*.safetensors"):
            n = p.name[len("step-"):-len(".safetensors")]
            if n.isdigit():
                found[int(n)] = p
        return found

    def steps(self) -> list[int]:
        return sorted(self._files())[-self.k:]

    def forget_after(self, step: int) -> None:
        for n, p in self._files().items():
            if n > step:
                p.unlink(missing_ok=True)

    def add(self, model, step: int) -> None:
        save_weights(self.folder / f"step-{step}.safetensors", model)
        files = self._files()
        for n in sorted(files)[:-self.k]:
            files[n].unlink(missing_ok=True)

    def average(self, job, model):
        """A copy of `model` holding the mean of the kept snapshots, and their steps."""
        import copy
        steps = self.steps()
        files = self._files()
        averaged = copy.deepcopy(model)
        average_into(averaged, [files[n] for n in steps])
        return averaged, steps


# -----------------------------------------------------------------------------
# the command line

def explicit_options(argv: list[str]) -> set[str]:
    """The options the command line really gives, however spelt (`--steps 4`, `--steps=4`): argv parsed
    again with every default suppressed, so only what was given lands in the namespace."""
    probe = build_parser()
    for action in probe._actions:
        action.default = argparse.SUPPRESS
    return set(vars(probe.parse_args(argv)))


POSITIVE_INTS = ("steps", "eval_every", "log_every", "ckpt_every", "batch_size", "warmup", "max_len")
SIZE_FLAGS = ("d_model", "heads", "d_ff", "layers")  # None (the preset's) or positive
COUNTS = ("threads", "seed", "average_last", "fail_at_step", "batch_tokens")  # 0 or more
FRACTIONS = ("dropout", "label_smoothing", "cooldown")  # None (the preset's) or in [0, 1)


def option_problem(args) -> str | None:
    """Why these options make no sense (a sentence naming the flag), or None."""
    def flag(name):
        return "--" + name.replace("_", "-")
    for name in POSITIVE_INTS:
        if getattr(args, name) <= 0:
            return f"{flag(name)} must be positive"
    for name in SIZE_FLAGS:
        if getattr(args, name) is not None and getattr(args, name) <= 0:
            return f"{flag(name)} must be positive"
    for name in COUNTS:
        if getattr(args, name, 0) < 0:
            return f"{flag(name)} must be 0 or more"
    if getattr(args, "batch_tokens", 0) and is_family_task(args.task):
        return f"--batch-tokens is for the translation and language-model tasks, not {args.task}"
    if not (math.isfinite(args.lr_factor) and args.lr_factor > 0):
        return f"--lr-factor must be a positive number, got {args.lr_factor}"
    for name in FRACTIONS:
        v = getattr(args, name)
        if v is not None and not (math.isfinite(v) and 0 <= v < 1):
            return f"{flag(name)} must be at least 0 and below 1, got {v}"
    return None


def main(argv=None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    explicit = explicit_options(argv)
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
    problem = option_problem(args)
    if problem:
        parser.error(problem)
    return train(args)


if __name__ == "__main__":
    sys.exit(main())
