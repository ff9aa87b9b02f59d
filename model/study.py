"""Table 3 in miniature: train every row of the paper's ablation table at a small size, with several
seeds, on the English->Korean teaching corpus, and tabulate parameters, dev perplexity, exact match
and BLEU beside the paper's numbers.

    python -m model.study table3 --out runs/study-table3 [--rows base,A-h1] [--seeds 3] [--steps 300]

Each (row, seed) is an ordinary trainer run (`python -m model.train`, its own folder under --out with
status.json, metrics.jsonl, checkpoint.pt and model/), so the training page can show it and a
killed study resumes: a finished run (result.json present) is skipped, a half-trained one resumes
from its checkpoint. The study's own state is <out>/study.json; the table so far is
<out>/table3.json, rewritten after every run. Only one study process runs on a folder at a time.

Scores are measured after training on the run's validation split (the task's dev set): perplexity
per sentencepiece token (no label smoothing), exact match and corpus BLEU (characters for Korean) of
greedy decoding."""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from .atomic import atomic_write_json
from .table3 import MINI_BASE, STUDY_ROWS, mini_config, paper_row

ROOT = Path(__file__).resolve().parent.parent
TASK = "en-ko"
DEFAULTS = {"seeds": 3, "steps": 300, "warmup": 100, "batch_size": 64, "lr_factor": 1.0, "threads": 1}
DEV_ALL = 0  # score on every validation sentence (tests pass a small --dev-limit)
RESULT = "result.json"


def run_name(row: str, seed: int) -> str:
    return f"{row}-s{seed}"


def read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def parse_rows(text: str | None) -> list[str]:
    """--rows as a list of known row keys (all rows when empty). ValueError names an unknown one."""
    if not text:
        return list(STUDY_ROWS)
    rows = [r.strip() for r in text.split(",") if r.strip()]
    unknown = [r for r in rows if r not in STUDY_ROWS]
    if unknown:
        raise ValueError(f"unknown rows {unknown}; known: {', '.join(STUDY_ROWS)}")
    return list(dict.fromkeys(rows))


def trainer_argv(row: str, seed: int, run_dir: Path, opts: dict, vocab_size: int) -> list[str]:
    """The trainer's command for one (row, seed): a fresh run, or a resume when a checkpoint exists."""
    if (run_dir / "checkpoint.pt").exists() and (run_dir / "args.json").exists():
        return [sys.executable, "-m", "model.train", "--resume", str(run_dir)]
    cfg = mini_config(row, vocab_size)
    return [sys.executable, "-m", "model.train", "--task", TASK, "--config", json.dumps(cfg.to_dict()),
            "--steps", str(opts["steps"]), "--warmup", str(opts["warmup"]),
            "--batch-size", str(opts["batch_size"]), "--lr-factor", str(opts["lr_factor"]),
            "--seed", str(seed), "--threads", str(opts["threads"]), "--eval-every", str(opts["steps"]),
            "--ckpt-every", str(max(50, opts["steps"] // 4)), "--log-every", "20", "--out", str(run_dir)]


def score_run(run_dir: Path, seed: int, limit: int = DEV_ALL) -> dict:
    """Dev perplexity, exact match and BLEU of the run's trained model on its own validation split."""
    import torch

    from .checkpoint import load_model_dir
    from .decode import greedy_decode_batch
    from .evaluate import evaluate
    from .metrics import bleu, exact_match
    from .train_data import load_task
    loaded = load_model_dir(run_dir / "model")
    model = loaded.model.eval()
    data = load_task(TASK, seed, max_len=model.config.max_len)
    if limit:
        data.valid, data.valid_text = data.valid[:limit], data.valid_text[:limit]
    with torch.no_grad():
        ev = evaluate(model, data, torch.device("cpu"), max_exact=0)
        tok = data.tokenizer
        hyps = greedy_decode_batch(model, [s for s, _ in data.valid], bos_id=tok.bos_id, eos_id=tok.eos_id,
                                   max_len=model.config.max_len - 1)
    texts = [tok.decode(h) for h in hyps]
    refs = [t for _, t in data.valid_text]
    return {"parameters": model.num_parameters(), "dev_loss": ev["val_loss"],
            "dev_perplexity": math.exp(min(ev["val_loss"], 50.0)), "dev_token_acc": ev["val_token_acc"],
            "exact_match": exact_match(texts, refs), "bleu": bleu(texts, refs, korean=True),
            "dev_sentences": len(refs)}


def _spread(values: list[float]) -> dict:
    if not values:
        return {"mean": None, "std": None, "min": None, "max": None, "n": 0}
    return {"mean": statistics.fmean(values), "std": statistics.stdev(values) if len(values) > 1 else 0.0,
            "min": min(values), "max": max(values), "n": len(values)}


def build_table(out: Path, rows: list[str], seeds: int) -> list[dict]:
    """One entry per row: the miniature's config changes, parameters, the scores over its finished
    seeds (mean, std, min, max) and the paper's numbers."""
    table = []
    for row in rows:
        results = [read_json(out / run_name(row, s) / RESULT) for s in range(seeds)]
        results = [r for r in results if isinstance(r, dict)]
        paper = paper_row(row)
        cfg = mini_config(row)
        table.append({
            "row": row, "group": paper.group, "label": paper.label,
            "mini_changes": {k: v for k, v in cfg.to_dict().items() if v != MINI_BASE.to_dict()[k]},
            "parameters": results[0]["parameters"] if results else None,
            "seeds_done": len(results), "seeds": seeds,
            "perplexity": _spread([r["dev_perplexity"] for r in results]),
            "exact_match": _spread([r["exact_match"] for r in results]),
            "bleu": _spread([r["bleu"] for r in results]),
            "seconds": _spread([r.get("train_seconds", 0.0) for r in results]),
            "paper": {"perplexity": paper.perplexity, "bleu": paper.bleu, "params_m": paper.params_m},
        })
    return table


@contextlib.contextmanager
def study_lock(out: Path):
    """An exclusive lock on the study folder: a second study process on it refuses."""
    out.mkdir(parents=True, exist_ok=True)
    f = open(out / ".study.lock", "a+")
    try:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise RuntimeError(f"another study is already running in {out}") from None
        yield
    finally:
        f.close()


def _write_state(out: Path, **fields) -> dict:
    state = read_json(out / "study.json") or {}
    state.update(fields, updated_at=time.time())
    atomic_write_json(out / "study.json", state)
    return state


def run_study(out: Path, rows: list[str], opts: dict, *, ship: Path | None = None, command: str = "",
              stop: dict | None = None) -> int:
    """Train and score every missing (row, seed); returns 0 when the table is complete."""
    from .train_data import build_tokenizer
    stop = stop if stop is not None else {"flag": False}
    vocab = build_tokenizer(TASK).vocab_size
    seeds = opts["seeds"]
    started = time.time()
    prior = read_json(out / "study.json") or {}
    spent_before = float(prior.get("seconds", 0.0)) if prior.get("rows") == rows else 0.0
    _write_state(out, state="running", pid=os.getpid(), rows=rows, options=opts, command=command,
                 started_at=prior.get("started_at", started), total=len(rows) * seeds, error=None)
    env = {**os.environ, "OMP_NUM_THREADS": str(opts["threads"]), "PYTHONPATH": str(ROOT)}
    for seed in range(seeds):  # seed-major: one seed of every row first, so a partial table covers all rows
        for row in rows:
            if stop["flag"]:
                break
            run_dir = out / run_name(row, seed)
            if (run_dir / RESULT).exists():
                continue
            _write_state(out, current=run_name(row, seed), done=_count_done(out, rows, seeds))
            t0 = time.time()
            rc, err = _run_trainer(trainer_argv(row, seed, run_dir, opts, vocab), env, stop)
            status = read_json(run_dir / "status.json") or {}
            if stop["flag"]:
                break
            if rc != 0 or status.get("state") != "done":
                last = err.strip().splitlines()[-1:] or [f"exit {rc}"]
                _write_state(out, state="failed", current=run_name(row, seed), error=last[0][:500])
                return 1
            result = score_run(run_dir, seed, opts.get("dev_limit", DEV_ALL))
            result.update(row=row, seed=seed, train_seconds=time.time() - t0, steps=opts["steps"])
            atomic_write_json(run_dir / RESULT, result)
            table = build_table(out, rows, seeds)
            atomic_write_json(out / "table3.json", _document(table, opts, command, spent_before + time.time()
                                                             - started))
    done = _count_done(out, rows, seeds)
    seconds = spent_before + time.time() - started
    table = build_table(out, rows, seeds)
    doc = _document(table, opts, command, seconds)
    atomic_write_json(out / "table3.json", doc)
    complete = done == len(rows) * seeds
    _write_state(out, state="done" if complete else "stopped", current=None, done=done, seconds=seconds)
    if complete and ship is not None:
        ship.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(ship, doc)
    return 0 if complete else 2


def _run_trainer(argv: list[str], env: dict, stop: dict) -> tuple[int, str]:
    """Run one trainer to its end; a stop request is passed on to it (it saves a checkpoint and exits)."""
    with open(os.devnull, "w") as null:
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=null, stderr=subprocess.PIPE, text=True)
        err = ""
        while True:
            try:
                _, err = proc.communicate(timeout=0.5)
                return proc.returncode, err or ""
            except subprocess.TimeoutExpired:
                if stop["flag"] and proc.poll() is None:
                    proc.terminate()


def _count_done(out: Path, rows: list[str], seeds: int) -> int:
    return sum((out / run_name(r, s) / RESULT).exists() for r in rows for s in range(seeds))


def _document(table: list[dict], opts: dict, command: str, seconds: float) -> dict:
    import platform

    import torch
    return {"study": "table3", "task": TASK, "mini_base": MINI_BASE.to_dict(), "options": opts,
            "command": command, "seconds": seconds, "rows": table,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}",
            "written_at": time.strftime("%Y-%m-%d %H:%M:%S")}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m model.study", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    p.add_argument("study", choices=("table3",))
    p.add_argument("--out", required=True, help="the study folder (e.g. runs/study-table3)")
    p.add_argument("--rows", default="", help="comma-separated row keys (default: every row)")
    for name, value in DEFAULTS.items():
        p.add_argument("--" + name.replace("_", "-"), type=type(value), default=value)
    p.add_argument("--dev-limit", type=int, default=DEV_ALL, help=argparse.SUPPRESS)  # tests: score fewer sentences
    p.add_argument("--ship", help="when complete, also write the table here (e.g. assets/study/table3.json)")
    return p


def main(argv=None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    try:
        rows = parse_rows(args.rows)
    except ValueError as e:
        parser.error(str(e))
    opts = {name: getattr(args, name) for name in DEFAULTS}
    for name, value in opts.items():
        if not value > 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    if args.dev_limit:
        opts["dev_limit"] = max(1, args.dev_limit)
    out = Path(args.out)
    stop = {"flag": False}

    def handler(signum, frame):
        stop["flag"] = True

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handler)
    command = "python -m model.study " + " ".join(argv)
    try:
        with study_lock(out):
            return run_study(out, rows, opts, ship=Path(args.ship) if args.ship else None, command=command,
                             stop=stop)
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
