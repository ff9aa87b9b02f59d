"""One training run between the steps of the main loop (model/training/train.py): the model, its optimiser
and schedule, the step reached, the checkpoint on disk, and what the current logging window has counted.
Each method is one step of the loop: set up (__init__), one_step, log_if_due, evaluate_and_save_if_due,
finish, say_how_it_ended."""
from __future__ import annotations

import os
import time
from pathlib import Path

import torch

from model.atomic import atomic_write_json
from model.messages import Message
from model.nn.device import describe_device
from model.training.averaging import Averaging
from model.training.checkpoint import CheckpointError, load_training_state, save_training_state
from model.training.faults import GiveUp, SaveFailed, nan_message
from model.training.options import command_line
from model.training.run_files import Run
from model.training.tasks import bounded, task_for


class Trainer:
    def __init__(self, args, run: Run, device: torch.device, world: int, rank: int):
        """Set up: the task and its data, the model, the optimiser and schedule; a --resume continues from
        the checkpoint. GiveUp when the corpus, the config or the checkpoint cannot be used."""
        self.args, self.run, self.device, self.world, self.rank = args, run, device, world, rank
        self.out = Path(args.out)
        self.task = task_for(args)
        cfg, problem = self.task.config(args)
        if problem is not None:
            raise GiveUp(problem, 2, step=0, total_steps=args.steps)
        torch.manual_seed(args.seed)
        self.model = self.task.build(cfg).to(device)
        self.opt, self.sched = self.task.optimizer(self.model, args)
        self.step, self.prior_seconds = 0, 0.0
        self.saved_at = None  # the step of the checkpoint on disk that belongs to this run (None: none yet)
        self.checkpoint = self.out / "checkpoint.pt"
        note = self._resume() if args.resume else None
        self.averaging = Averaging(self.out / "avg", args.average_last) if args.average_last and run.writer else None
        if self.averaging is not None:
            self.averaging.forget_after(self.step)  # snapshots a killed run wrote after its last checkpoint
        if run.writer:
            atomic_write_json(self.out / "config.json", cfg.to_dict())
            atomic_write_json(self.out / "args.json", {k: v for k, v in vars(args).items() if k != "resume"})
        self.ddp_model = self.model
        if world > 1:
            from torch.nn.parallel import DistributedDataParallel as DDP
            self.ddp_model = DDP(self.model, device_ids=[device.index] if device.type == "cuda" else None)
        self.started = time.time()
        run.update(state="running", step=self.step, total_steps=args.steps, message=note, pid=os.getpid(),
                   task=args.task, device=describe_device(device), world_size=world,
                   parameters=self.model.num_parameters() if hasattr(self.model, "num_parameters")
                   else sum(p.numel() for p in self.model.parameters()),
                   started_at=run.status.get("started_at", self.started), resumable=True, averaged=None)
        self.start_step = self.step
        self._new_window()
        self.model.train()

    def _resume(self) -> Message | None:
        """Continue from the checkpoint: the weights, the optimiser, the schedule, the step, the time spent
        and the random state (dropout masks continue as if never stopped). Without a checkpoint the run starts
        from step 0 and says so, since its curves restart instead of continuing."""
        if not self.checkpoint.exists():
            return Message("train.status.no_checkpoint")
        try:
            state = load_training_state(self.checkpoint, self.model, self.opt, self.sched)
        except CheckpointError as e:
            raise GiveUp(Message("train.status.cannot_resume", {"detail": str(e)}), 3) from None
        self.step, extra = state["step"], state["extra"]
        self.prior_seconds = float(extra.get("train_seconds", 0.0))
        if isinstance(extra.get("rng"), torch.Tensor):
            torch.set_rng_state(extra["rng"])
        self.saved_at = self.step
        return None

    def seconds(self) -> float:
        """Training time of the whole run, the time before a resume included."""
        return self.prior_seconds + time.time() - self.started

    def _new_window(self) -> None:
        """Start counting a logging window: tokens, losses, and the seconds spent evaluating and saving."""
        self.tokens_seen, self.window_start, self.loss_sum, self.loss_n, self.paused = 0, time.time(), 0.0, 0, 0.0

    # -------------------------------------------------------------------------
    # the steps of the loop

    def one_step(self) -> None:
        """One batch: forward and loss, backward, the optimiser and the schedule. GiveUp on a NaN loss."""
        args = self.args
        batch = self.task.batch(self.step, args.seed, self.rank, args.batch_size, self.device)
        loss, n_tok = self.task.loss(self.ddp_model, self.model, batch)
        if args.fail_at_step and self.step + 1 >= args.fail_at_step:
            loss = loss * float("nan")
        if not torch.isfinite(loss):
            msg, extra = nan_message(str(loss.item()), self.step, self.sched.get_last_lr()[0], self.saved_at)
            raise GiveUp(msg, 4, step=self.step, **extra)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        self.sched.step()
        self.step += 1
        self.tokens_seen += n_tok * self.world
        self.loss_sum += loss.item()
        self.loss_n += 1

    def log_if_due(self) -> None:
        """Every --log-every steps (and the last; the first with --log-first): the window's mean loss, the
        rate and the training speed into metrics.jsonl and status.json."""
        args, step = self.args, self.step
        if not (step % args.log_every == 0 or step == args.steps or (args.log_first and step == self.start_step + 1)):
            return
        dt = time.time() - self.window_start
        tps = self.tokens_seen / max(dt - self.paused, 1e-9)  # training speed: evaluation time left out
        rec = {"kind": "train", "step": step, "loss": self.loss_sum / self.loss_n, "lr": self.sched.get_last_lr()[0],
               "tokens_per_second": tps, "time": time.time()}
        self.run.log(rec)
        remaining = (args.steps - step) * dt / max(self.loss_n, 1)
        self.run.update(step=step, loss=rec["loss"], lr=rec["lr"], tokens_per_second=tps,
                        eta_seconds=remaining, elapsed_seconds=self.seconds())
        self._new_window()

    def evaluate_and_save_if_due(self) -> None:
        """Every --eval-every steps an evaluation, every --ckpt-every steps a checkpoint (and both at the
        last step); their time is left out of the training speed."""
        args, step = self.args, self.step
        t_pause = time.time()
        if self.run.writer and (step % args.eval_every == 0 or step == args.steps):
            ev = bounded(self.task.evaluate(self.model, self.device))
            self.run.log({"kind": "eval", "step": step, **ev, "time": time.time()})
            self.run.update(**ev)
        if step % args.ckpt_every == 0 or step == args.steps:
            self.save()
        self.paused += time.time() - t_pause

    def save(self) -> None:
        """The checkpoint, the model folder, and with --average-last a weights snapshot (regular checkpoints
        only, not a stop's). SaveFailed when the disk refuses (full, read-only)."""
        args, step = self.args, self.step
        if self.run.writer:
            try:
                save_training_state(self.checkpoint, self.model, self.opt, self.sched, step,
                                    {"task": args.task, "train_seconds": self.seconds(),
                                     "rng": torch.get_rng_state()})
                self.saved_at = step  # written whole (model.atomic): resumable whatever fails next
                self.task.save(self.out / "model", self.model, {"task": args.task, "step": step,
                                                                "source": "training page", "run": self.out.name})
                if self.averaging is not None and (step % args.ckpt_every == 0 or step == args.steps):
                    self.averaging.add(self.model, step)
            except (OSError, RuntimeError) as e:  # disk full (torch: "inline_container.cc: unexpected pos"), read-only
                raise SaveFailed(e, step, self.saved_at) from None
        self.saved_at = step

    def finish(self) -> None:
        """After the loop: a checkpoint of the steps since the last one, the replicas' checksums, the mean of
        the last checkpoints (--average-last), and the export (--export)."""
        args, step = self.args, self.step
        if step > (self.saved_at if self.saved_at is not None else self.start_step):
            self.save()
        if self.world > 1:
            import torch.distributed as dist
            self.run.update(replica_checksums=replica_checksums(self.model, self.world))
            dist.destroy_process_group()
        final, self.averaged = self.model, None
        if self.averaging is not None and step >= args.steps and len(self.averaging.steps()) > 1:
            final, self.averaged = self.averaging.average(self.model)
            ev = bounded(self.task.evaluate(final, self.device))
            self.run.update(averaged={"steps": self.averaged, **{k: v for k, v in ev.items() if k != "samples"}})
            self.run.log({"kind": "averaged", "step": step, "steps": self.averaged, **ev, "time": time.time()})
            try:
                self.task.save(self.out / "model", final, {"task": args.task, "step": step, "source": "training page",
                                                           "run": self.out.name, "averaged_steps": self.averaged})
            except (OSError, RuntimeError) as e:
                raise SaveFailed(e, step, self.saved_at) from None
        if args.export and self.run.writer and step >= args.steps:
            self.run.update(message=Message("train.status.scoring"))
            self.task.export(final, args, Path(args.export), self.seconds(), command_line(args), self.averaged)

    def say_how_it_ended(self, stopped: bool) -> None:
        """status.json's last word: stopped (SIGTERM / SIGINT before the last step) or done."""
        step, seconds, averaged = self.step, self.seconds(), self.averaged
        if stopped and step < self.args.steps:
            self.run.update(state="stopped", step=step, message=Message("train.status.stopped", {"at": step}))
        elif averaged:
            self.run.update(state="done", step=step, eta_seconds=0,
                            message=Message("train.status.finished_averaged",
                                            {"total": step, "seconds": seconds, "count": len(averaged),
                                             "steps": ", ".join(map(str, averaged))}))
        else:
            self.run.update(state="done", step=step, eta_seconds=0,
                            message=Message("train.status.finished", {"total": step, "seconds": seconds}))


def replica_checksums(model, world: int) -> list[list[float]]:
    """Replicas must hold the same weights: gather a checksum of every rank's parameters."""
    import torch.distributed as dist
    vec = torch.cat([p.detach().double().flatten() for p in model.parameters()])
    sums = torch.tensor([vec.sum().item(),
                         (vec * torch.arange(len(vec), dtype=torch.double, device=vec.device)).sum().item()],
                        dtype=torch.double, device=vec.device)
    gathered = [torch.zeros_like(sums) for _ in range(world)]
    dist.all_gather(gathered, sums)
    return [g.tolist() for g in gathered]
