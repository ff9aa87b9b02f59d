"""The Table 3 study for the page: the shipped table and a learner's own rerun (a background
`python -m model.training.study` process, one per server). The reading of the paper's conclusions against our
numbers is model.lessons.table3 (verdicts). No Streamlit here: it is tested on its own."""
from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
from pathlib import Path

from app.jobs import JobManager, pid_alive, runs_dir
from model.atomic import atomic_write_json
from model.messages import UserError
from model.training.study import DEFAULTS, RESULT, read_json
from model.lessons.table3 import STUDY_ROWS

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "assets" / "study" / "table3.json"
FOLDER = "study-table3"
MAX_SEEDS = 5


def whole(value) -> str:
    """A whole number of the study's document as the page writes counts ("6,000"), "?" when it is not one."""
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else "?"


def study_dir() -> Path:
    """Where a rerun started from the page trains: RUNS/study-table3."""
    return runs_dir() / FOLDER


def load_table(path: Path) -> dict | None:
    """A study document (model.training.study's table3.json), or None when missing or not one."""
    doc = read_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
        return None
    rows = [r for r in doc["rows"] if isinstance(r, dict) and r.get("row") in STUDY_ROWS]
    return {**doc, "rows": rows} if rows else None


def table_stamp(doc: dict) -> str:
    """A short fingerprint of a study document's rows: what a figure drawn from it depends on."""
    import hashlib
    return hashlib.sha1(json.dumps(doc.get("rows"), sort_keys=True, default=str).encode()).hexdigest()[:16]


# ----------------------------------------------------------------------------- a rerun in the background
def state(folder: Path | None = None) -> dict:
    """The rerun's study.json with "state" corrected: a "running" study whose process is gone is
    "interrupted" (it resumes where it stopped when started again)."""
    folder = folder or study_dir()
    st = read_json(folder / "study.json")
    if not isinstance(st, dict):
        return {"state": "none"}
    if st.get("state") == "running" and not _alive(st.get("pid")):
        st = {**st, "state": "interrupted"}
    return st


def _alive(pid) -> bool:
    return pid_alive(pid, program="model.training.study")


def start(rows: list[str], seeds: int, *, fresh: bool, folder: Path | None = None) -> list[str]:
    """Start `python -m model.training.study table3` on `rows` in the background; the argv started. UserError when
    one is already running, the choice is empty or out of range, or the folder cannot be written."""
    folder = folder or study_dir()
    if state(folder)["state"] == "running":
        raise UserError("study.errors.running")
    rows = [r for r in rows if r in STUDY_ROWS]
    if not rows:
        raise UserError("study.errors.no_rows")
    if not (isinstance(seeds, int) and 1 <= seeds <= MAX_SEEDS):
        raise UserError("study.errors.seeds", most=MAX_SEEDS)
    argv = [sys.executable, "-m", "model.training.study", "table3", "--out", str(folder), "--rows", ",".join(rows),
            "--seeds", str(seeds), "--threads", str(DEFAULTS["threads"]), "--workers", "1"]
    if fresh:
        argv.append("--fresh")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        log = open(folder / "study.log", "ab")
    except OSError as e:
        raise UserError("study.errors.folder", problem=e.strerror or str(e)) from None
    with log:
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
    # Say "running" before the study's own first write (it imports torch first): every open page that reads
    # the state shows the progress and the stop button at once instead of the previous study's outcome.
    prior = read_json(folder / "study.json")
    atomic_write_json(folder / "study.json", {**(prior if isinstance(prior, dict) else {}), "state": "running",
                                              "pid": getattr(proc, "pid", None), "total": len(rows) * seeds,
                                              "done": 0, "current": [], "error": None})
    return argv


def stop(folder: Path | None = None) -> bool:
    """Ask a running study to stop (its trainer saves a checkpoint first). False when none runs."""
    st = state(folder)
    if st["state"] != "running":
        return False
    try:
        os.killpg(int(st["pid"]), signal.SIGTERM)
    except (OSError, ValueError, TypeError):
        return False
    return True


def progress(folder: Path | None = None) -> dict:
    """(done, total, the runs training now with their step) of the rerun."""
    folder = folder or study_dir()
    st = state(folder)
    current = []
    for name in st.get("current") or []:
        s = read_json(folder / str(name) / "status.json")
        step = s.get("step") if isinstance(s, dict) else None
        current.append({"run": str(name), "step": step if isinstance(step, int) else 0,
                        "total": (st.get("options") or {}).get("steps")})
    done = sum(1 for d in folder.glob("*-s*") if (d / RESULT).exists()) if folder.is_dir() else 0
    return {"state": st["state"], "done": int(st.get("done") or 0), "total": int(st.get("total") or 0),
            "current": current, "results": done, "error": st.get("error")}


def seconds_here(folder: Path | None = None) -> dict[str, float]:
    """Per row, the median training time of the runs finished on this machine (rows with none left out)."""
    folder = folder or study_dir()
    times: dict[str, list[float]] = {}
    for d in folder.glob("*-s*") if folder.is_dir() else ():
        result = read_json(d / RESULT)
        if isinstance(result, dict) and isinstance(result.get("train_seconds"), (int, float)) \
                and result.get("row") in STUDY_ROWS:
            times.setdefault(result["row"], []).append(float(result["train_seconds"]))
    return {row: statistics.median(v) for row, v in times.items()}


def run_summaries(folder: Path | None = None) -> list[dict]:
    """The study's runs as the job manager summarises any run (state, step, losses, an inspectable model):
    each (row, seed) is an ordinary trainer run, so the training page lists them with its own table,
    read-only (no one owns them: the study page starts and stops them)."""
    folder = folder or study_dir()
    if not folder.is_dir():
        return []
    try:
        runs = JobManager(root=folder, teacher=False).list_runs(owner="")  # nobody's: read-only
    except UserError:
        return []
    order = {name: i for i, name in enumerate(f"{r}-s{s}" for s in range(MAX_SEEDS) for r in STUDY_ROWS)}
    return sorted(runs, key=lambda r: order.get(r["id"], len(order)))


