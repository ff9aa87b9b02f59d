"""A trainer started ahead of time, so that a run's first step does not wait for `import torch` (seconds).

    python -m model.training.standby [--idle-seconds 900]

The job manager (app/jobs/standby.py) starts one while a training slot is free. It imports torch and the trainer,
says "ready" on stdout, and waits on stdin for one line of JSON: {"argv": [trainer options], "dir": the run
folder}. Then it moves into the run folder (so /proc/<pid>/cwd names the run, as a trainer's command line
does: app.jobs.pid_alive), appends its output to the folder's train.log, answers "taken", and runs
`model.training.train.main(argv)` exactly as `python -m model.training.train ARGV` would, with the same exit code.
End of input (the server went away) or `--idle-seconds` without a run: it exits 0 having done nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import select
import sys

READY, TAKEN = "ready", "taken"


def wait_for_job(idle_seconds: float) -> dict | None:
    """The job line from stdin, or None on end of input, a malformed line or the idle timeout."""
    ready, _, _ = select.select([sys.stdin], [], [], idle_seconds)
    if not ready:
        return None
    line = sys.stdin.readline()
    try:
        job = json.loads(line) if line.strip() else None
    except ValueError:
        return None
    if not (isinstance(job, dict) and isinstance(job.get("argv"), list) and isinstance(job.get("dir"), str)
            and all(isinstance(a, str) for a in job["argv"])):
        return None
    return job


def take(job: dict) -> None:
    """Become the run's trainer process: its folder as the working directory, its log as stdout and stderr."""
    os.chdir(job["dir"])
    log = os.open(os.path.join(job["dir"], "train.log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    sys.stdout.write(TAKEN + "\n")
    sys.stdout.flush()
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    null = os.open(os.devnull, os.O_RDONLY)  # as a plain trainer's stdin; the manager's pipe is done with
    os.dup2(null, 0)
    os.close(null)


def warm_up() -> None:
    """What a trainer's first step would otherwise do first: torch's optimiser pulls in torch._dynamo on its
    first use and autograd starts its engine; done once on a throwaway parameter."""
    import torch

    from model.training.schedule import noam_lambda
    from model.training.tasks import adam
    p = torch.nn.Parameter(torch.ones(8, 8))
    opt = adam([p])
    sched = torch.optim.lr_scheduler.LambdaLR(opt, noam_lambda(8, 10, 1.0))
    torch.nn.functional.cross_entropy(p @ p, torch.zeros(8, dtype=torch.long)).backward()
    opt.step()
    sched.step()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--idle-seconds", type=float, default=900.0)
    args = p.parse_args()
    from model.training import train  # torch and everything the trainer uses, before "ready"
    warm_up()
    sys.stdout.write(READY + "\n")
    sys.stdout.flush()
    job = wait_for_job(args.idle_seconds)
    if job is None:
        return 0
    try:
        take(job)
    except OSError as e:  # the folder went away: the manager sees no "taken" and starts a plain trainer
        print(f"standby: {e}", file=sys.stderr)
        return 1
    sys.argv = [train.__file__, *job["argv"]]  # argparse's messages name the trainer, as a plain start does
    return train.main(job["argv"])


if __name__ == "__main__":
    sys.exit(main())
