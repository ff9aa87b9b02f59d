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

import os
import signal
import sys
from pathlib import Path

import torch

from model.nn.device import best_device
from model.training.allocator import keep_freed_memory
from model.training.faults import (SAVE_ERRNOS, GiveUp, SaveFailed, give_up, remove_leftovers, save_failed,
                                   save_problem, saved_on_disk)
from model.training.options import build_parser, option_problem, parse_args  # noqa: F401  (imported from here too)
from model.training.run_files import Run, TrainerLock
from model.training.steps import Trainer


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    return train(parse_args(argv, description=__doc__))


def training_loop(args, run: Run, device, world: int, rank: int, stop: dict, ctx: dict) -> None:
    """The main loop. Each step is a method of Trainer (model/training/steps.py)."""
    trainer = ctx["trainer"] = Trainer(args, run, device, world, rank)  # data, model, optimiser; resumed
    while trainer.step < args.steps and not stop["flag"]:
        trainer.one_step()                  # a batch: forward, loss, backward, optimiser and schedule
        trainer.log_if_due()                # loss, rate and speed into metrics.jsonl and status.json
        trainer.evaluate_and_save_if_due()  # the validation split; checkpoint and model folder
    trainer.finish()                        # the last checkpoint, checkpoint averaging, the export
    trainer.say_how_it_ended(stopped=stop["flag"])


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
        device, world, rank = _devices(args)
        out.mkdir(parents=True, exist_ok=True)
        run = ctx["run"] = Run(out, writer=(rank == 0))
        try:
            training_loop(args, run, device, world, rank, stop, ctx)
        except GiveUp as e:  # a bad corpus, config or checkpoint, or a NaN loss
            return give_up(run, e.message, e.code, **e.fields)
        return 0
    except SaveFailed as e:
        return save_failed(ctx.get("run") or Run(out, writer=rank == 0), save_problem(e.error, e.step, out, e.saved_at))
    except OSError as e:
        if e.errno not in SAVE_ERRNOS:
            raise
        step = ctx["trainer"].step if "trainer" in ctx else 0
        return save_failed(ctx.get("run") or Run(out, writer=rank == 0),
                           save_problem(e, step, out, saved_on_disk(out, ctx.get("trainer"))))
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        if lock is not None:
            lock.release()


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


if __name__ == "__main__":
    sys.exit(main())
