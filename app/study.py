"""The Table 3 study for the page: the shipped table, a learner's own rerun (a background
`python -m model.training.study` process, one per server), and the reading of the paper's conclusions against our
numbers. No Streamlit here: it is tested on its own."""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from app.jobs import JobManager, pid_alive, runs_dir
from model.messages import UserError
from model.training.study import DEFAULTS, RESULT, read_json
from model.lessons.table3 import STUDY_ROWS

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "assets" / "study" / "table3.json"
FOLDER = "study-table3"
MAX_SEEDS = 5


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
    import json
    return hashlib.sha1(json.dumps(doc.get("rows"), sort_keys=True, default=str).encode()).hexdigest()[:16]


def mean(row: dict, metric: str):
    v = (row.get(metric) or {}).get("mean")
    return v if isinstance(v, (int, float)) and math.isfinite(v) else None


def centre(row: dict, metric: str):
    """The median over seeds (a table written before medians were kept: the mean). With a few seeds some of
    which have not left the loss plateau, the median says what most seeds did; the mean mixes the two."""
    stats = row.get(metric) or {}
    v = stats.get("median", stats.get("mean"))
    return v if isinstance(v, (int, float)) and math.isfinite(v) else None


def spread(row: dict, metric: str) -> float:
    v = (row.get(metric) or {}).get("std")
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else 0.0


# ----------------------------------------------------------------------------- the paper's conclusions
@dataclass(frozen=True)
class Claim:
    key: str           # catalogue key study.claims.<key>
    worse: str         # the row the paper finds worse (higher perplexity) ...
    better: str        # ... than this one; for kind "same", the two rows it finds alike
    kind: str = "worse"


# Section 6.2 of the paper, read off Table 3 by dev perplexity.
CLAIMS = (
    Claim("one_head", "A-h1", "base"),
    Claim("many_heads", "A-h32", "A-h16"),
    Claim("small_keys", "B-dk16", "base"),
    Claim("deeper", "C-N2", "C-N8"),
    Claim("wider", "C-d256", "C-d1024"),
    Claim("bigger_ffn", "C-ff1024", "C-ff4096"),
    Claim("dropout", "D-drop0", "base"),
    Claim("smoothing_perplexity", "base", "D-ls0"),
    Claim("learned_positions", "E-learned", "base", "same"),
)
MARGIN = 0.05  # medians closer than 5 % are "about the same": a finding needs a larger difference


@dataclass
class Verdict:
    claim: Claim
    paper: tuple[float, float]
    ours: tuple[float, float] | None    # (median of `worse`, median of `better`)
    spreads: tuple[float, float]
    seeds: int                          # the fewer seeds of the two rows
    outcome: str                        # "reproduced", "not_reproduced", "unclear", "missing"


def verdicts(doc: dict, metric: str = "perplexity") -> list[Verdict]:
    """Each conclusion of the paper against our rows, by the median over seeds: reproduced when our
    difference has the paper's sign and exceeds 5 % (for "same": when within 5 %), not reproduced when it has
    the opposite sign beyond 5 %, unclear otherwise."""
    from model.lessons.table3 import paper_row
    rows = {r["row"]: r for r in doc["rows"]}
    out = []
    for c in CLAIMS:
        pw, pb = paper_row(c.worse).perplexity, paper_row(c.better).perplexity
        a, b = rows.get(c.worse), rows.get(c.better)
        ma, mb = (centre(a, metric) if a else None), (centre(b, metric) if b else None)
        if ma is None or mb is None:
            out.append(Verdict(c, (pw, pb), None, (0.0, 0.0), 0, "missing"))
            continue
        sa, sb = spread(a, metric), spread(b, metric)
        noise = MARGIN * abs(mb)
        diff = ma - mb
        if c.kind == "same":
            outcome = "reproduced" if abs(diff) <= noise else "not_reproduced"
        elif diff > noise:
            outcome = "reproduced"
        elif diff < -noise:
            outcome = "not_reproduced"
        else:
            outcome = "unclear"
        seeds = min(int(a.get("seeds_done", 0)), int(b.get("seeds_done", 0)))
        out.append(Verdict(c, (pw, pb), (ma, mb), (sa, sb), seeds, outcome))
    return out


PLATEAU = 5.0  # dev perplexity above this: the run had not yet learned to align (see the page)


def plateau_runs(doc: dict) -> dict:
    """How many finished runs ended above PLATEAU dev perplexity, in how many rows: at a small step
    budget some seeds have not yet left the loss plateau before attention learns to align words."""
    runs = stuck = 0
    rows = set()
    for r in doc["rows"]:
        for v in (r.get("perplexity") or {}).get("values") or []:
            runs += 1
            if isinstance(v, (int, float)) and v > PLATEAU:
                stuck += 1
                rows.add(r["row"])
    return {"runs": runs, "stuck": stuck, "rows": len(rows)}


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
        subprocess.Popen(argv, cwd=ROOT, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
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


def document_text(doc: dict) -> str:
    return json.dumps(doc, ensure_ascii=False, indent=1)
