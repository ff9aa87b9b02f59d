"""The background-training job manager: one object per server, shared by every session.

Each training run is a subprocess, `python -m model.training.train --config RUNS/<id>/config.json ...
--out RUNS/<id>`, never a thread of the server. Everything about a run lives in its folder, so a
restarted server (a new manager) finds the runs again:

    RUNS/<id>/job.json      written by the manager only: options, the command, pid, queue time
    RUNS/<id>/config.json   the model (a TransformerConfig) the trainer builds, exactly
    RUNS/<id>/status.json   "queued" from the manager; then the trainer's own status (model/training/run_files.py)
    RUNS/<id>/metrics.jsonl the trainer's curves          RUNS/<id>/train.log  its stdout + stderr
    RUNS/<id>/checkpoint.pt, model/, corpus.tsv (an uploaded corpus)

RUNS is `runs/` in the repository, or the folder named by the environment variable
ATLAS_RUNS_DIR. At most `max_running` trainers (default 1, or ATLAS_MAX_RUNS) run at once;
other runs wait in state "queued" and start, oldest first, when `poll()` finds a free slot.
Pages call `poll()` on every refresh; `list_runs()` calls it too. Several servers may share one
RUNS (a file lock, RUNS/.jobs.lock, makes each queue step atomic across processes).

The package, by subject:
    manager.py   JobManager: a run's life (start, the queue, stop, resume, delete); get_manager()
    runs.py      where runs live (runs_dir), reading their files that may be damaged, pid_alive (/proc)
    owners.py    a classroom's server: owner tokens (a browser's cookie), teacher mode, queue limits, disk budget
    standby.py   the trainer started ahead of time (model/training/standby.py)
    threads.py   the cores shared between the trainers and the server's own torch
    options.py   the page's choices (TrainOptions), their limits and checks, the trainer's options
    estimate.py  a run's cost before it starts (computed by model/training/estimate.py), kept per server

Faults: a runs folder that cannot be used (read-only, a file, a full disk) is a UserError
"jobs.errors.runs_folder" / "jobs.errors.disk_full", never a traceback; a new run is written in a hidden
temporary folder and renamed, so a failed Start leaves nothing behind. Status messages are Messages
(catalogue keys "jobs.status.*", "train.status.*"), refusals are UserErrors: the page translates both.

The names below are what the pages and tests use; a test that replaces a function must replace it in the
module that calls it (e.g. app.jobs.manager.atomic_write_json), not here."""
from app.jobs.manager import JobManager, get_manager
from app.jobs.options import TrainOptions
from app.jobs.owners import OWNER_COOKIE, cookie_script, new_owner_token, owner_from_cookie, owner_hash, teacher_mode
from app.jobs.runs import (COMPARE_METRICS, MB, ROOT, STANDBY_MODULE, TRAINER_MODULE, compare_label, is_starting,
                           pid_alive, run_actions, runs_dir, state_message)
from app.jobs.threads import apply_server_threads, server_threads, thread_budget
from model.training.run_files import ACTIVE, STATES

__all__ = ["ACTIVE", "COMPARE_METRICS", "MB", "OWNER_COOKIE", "ROOT", "STANDBY_MODULE", "STATES", "TRAINER_MODULE",
           "JobManager", "TrainOptions",
           "apply_server_threads", "compare_label", "cookie_script", "get_manager", "is_starting", "new_owner_token",
           "owner_from_cookie", "owner_hash",
           "pid_alive", "run_actions", "runs_dir", "server_threads", "state_message", "teacher_mode",
           "thread_budget"]
