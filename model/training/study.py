"""Table 3 in miniature: train every row of the paper's ablation table at a small size, with several
seeds, on the English->Korean teaching corpus, and tabulate parameters, dev perplexity, exact match
and BLEU beside the paper's numbers.

    python -m model.training.study table3 --out runs/study-table3 [--rows base,A-h1] [--seeds 3] [--steps 300]

Each (row, seed) is an ordinary trainer run (`python -m model.training.train`, its own folder under --out with
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
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from model.atomic import atomic_write_json
from model.lessons.table3 import MINI_BASE, STUDY_ROWS, mini_config, paper_row

ROOT = Path(__file__).resolve().parents[2]
TASK = "en-ko"
# The miniature's recipe, chosen by measurement (docs/table3.md): at the paper's schedule scaled to d_model 64
# (warm-up 100, factor 1) some seeds stayed on the loss plateau for 800 steps; at half the rate every seed
# measured left it before step 300. Every run trains on the same split (split_seed): seeds differ in
# initialisation and batch order only.
DEFAULTS = {"seeds": 5, "steps": 500, "warmup": 100, "batch_size": 64, "lr_factor": 0.5, "split_seed": 0,
            "threads": 1, "workers": 1, "decode_limit": 400}
MAY_BE_ZERO = ("split_seed",)
RESULT = "result.json"


TRAINING_OPTIONS = ("steps", "warmup", "batch_size", "lr_factor", "split_seed", "decode_limit")


def run_name(row: str, seed: int) -> str:
    return f"{row}-s{seed}"


def finished(run_dir: Path, opts: dict) -> bool:
    """A run counts as done when its result was made with these training options (a result of other
    options is stale: the run is trained again)."""
    result = read_json(run_dir / RESULT)
    return isinstance(result, dict) and result.get("options") == {k: opts[k] for k in TRAINING_OPTIONS}


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
        return [sys.executable, "-m", "model.training.train", "--resume", str(run_dir)]
    cfg = mini_config(row, vocab_size)
    return [sys.executable, "-m", "model.training.train", "--task", TASK, "--config", json.dumps(cfg.to_dict()),
            "--steps", str(opts["steps"]), "--warmup", str(opts["warmup"]),
            "--batch-size", str(opts["batch_size"]), "--lr-factor", str(opts["lr_factor"]),
            "--seed", str(seed), "--split-seed", str(opts["split_seed"]), "--threads", str(opts["threads"]), "--eval-every", str(opts["steps"]),
            "--ckpt-every", str(max(50, opts["steps"] // 4)), "--log-every", "20", "--out", str(run_dir)]


def score_run(run_dir: Path, split_seed: int, decode_limit: int) -> dict:
    """Dev perplexity on the whole validation split of `split_seed`; exact match and BLEU of greedy decoding
    on its first `decode_limit` sentences."""
    import torch

    from model.training.checkpoint import load_model_dir
    from model.inference.decode import greedy_decode_batch
    from model.inference.evaluate import evaluate
    from model.inference.metrics import bleu, exact_match
    from model.data.train_data import load_task
    loaded = load_model_dir(run_dir / "model")
    model = loaded.model.eval()
    data = load_task(TASK, split_seed, max_len=model.config.max_len)
    with torch.no_grad():
        ev = evaluate(model, data, torch.device("cpu"), max_exact=0)
        tok = data.tokenizer
        hyps = greedy_decode_batch(model, [s for s, _ in data.valid[:decode_limit]], bos_id=tok.bos_id,
                                   eos_id=tok.eos_id, max_len=model.config.max_len - 1)
    texts = [tok.decode(h) for h in hyps]
    refs = [t for _, t in data.valid_text[:decode_limit]]
    return {"parameters": model.num_parameters(), "dev_loss": ev["val_loss"],
            "dev_perplexity": math.exp(min(ev["val_loss"], 50.0)), "dev_token_acc": ev["val_token_acc"],
            "exact_match": exact_match(texts, refs), "bleu": bleu(texts, refs, korean=True),
            "dev_sentences": len(data.valid), "decoded_sentences": len(refs)}


def _spread(values: list[float]) -> dict:
    """Median, mean, standard deviation, range and the values themselves (seed 0 first)."""
    if not values:
        return {"median": None, "mean": None, "std": None, "min": None, "max": None, "n": 0, "values": []}
    return {"median": statistics.median(values), "mean": statistics.fmean(values),
            "std": statistics.stdev(values) if len(values) > 1 else 0.0,
            "min": min(values), "max": max(values), "n": len(values), "values": list(values)}


def build_table(out: Path, opts: dict) -> list[dict]:
    """One entry per row of the study (every row, in the paper's order): the miniature's config changes,
    parameters, the scores over its finished seeds (mean, std, min, max) and the paper's numbers."""
    table, seeds = [], opts["seeds"]
    for row in STUDY_ROWS:
        results = [read_json(out / run_name(row, s) / RESULT) for s in range(seeds)
                   if finished(out / run_name(row, s), opts)]
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
              stop: dict | None = None, fresh: bool = False) -> int:
    """Train and score every missing (row, seed) — every one of `rows` when `fresh`; returns 0 when the
    requested rows are complete."""
    from model.data.train_data import build_tokenizer
    stop = stop if stop is not None else {"flag": False}
    vocab = build_tokenizer(TASK).vocab_size
    seeds = opts["seeds"]
    started = time.time()
    prior = read_json(out / "study.json") or {}
    spent_before = float(prior.get("seconds", 0.0)) if prior.get("rows") == rows else 0.0
    _write_state(out, state="running", pid=os.getpid(), rows=rows, options=opts, command=command,
                 started_at=prior.get("started_at", started), total=len(rows) * seeds, error=None)
    env = {**os.environ, "OMP_NUM_THREADS": str(opts["threads"]), "PYTHONPATH": str(ROOT)}
    # seed-major: one seed of every row first, so a partial table already covers every row
    todo = [(row, seed) for seed in range(seeds) for row in rows
            if fresh or not finished(out / run_name(row, seed), opts)]
    for row, seed in todo:  # results of other options, half-made runs of other options: start over
        d = out / run_name(row, seed)
        made = read_json(d / "args.json")
        other = isinstance(made, dict) and any(made.get(k) != opts[k] for k in TRAINING_OPTIONS if k in made)
        if fresh or (d / RESULT).exists() or other:
            shutil.rmtree(d, ignore_errors=True)
    lock = threading.Lock()
    failures: list[str] = []
    running: set[str] = set()

    def one(row: str, seed: int) -> None:
        if stop["flag"] or failures:
            return
        name = run_name(row, seed)
        run_dir = out / name
        with lock:
            running.add(name)
            _write_state(out, current=sorted(running), done=_count_done(out, rows, seeds, opts))
        t0 = time.time()
        try:
            rc, err = _run_trainer(trainer_argv(row, seed, run_dir, opts, vocab), env, stop)
            status = read_json(run_dir / "status.json") or {}
            if stop["flag"]:
                return
            if rc != 0 or status.get("state") != "done":
                last = err.strip().splitlines()[-1:] or [f"exit {rc}"]
                failures.append(f"{name}: {last[0][:500]}")
                return
            result = score_run(run_dir, opts["split_seed"], opts["decode_limit"])
            result.update(row=row, seed=seed, train_seconds=time.time() - t0, steps=opts["steps"],
                          options={k: opts[k] for k in TRAINING_OPTIONS})
            atomic_write_json(run_dir / RESULT, result)
            with lock:
                atomic_write_json(out / "table3.json", _document(build_table(out, opts), opts, command,
                                                                 spent_before + time.time() - started))
        finally:
            with lock:
                running.discard(name)

    with ThreadPoolExecutor(max_workers=opts["workers"]) as pool:
        for f in [pool.submit(one, row, seed) for row, seed in todo]:
            f.result()
    if failures:
        _write_state(out, state="failed", current=None, error=failures[0], done=_count_done(out, rows, seeds, opts))
        return 1
    done = _count_done(out, rows, seeds, opts)
    seconds = spent_before + time.time() - started
    table = build_table(out, opts)
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


def _count_done(out: Path, rows: list[str], seeds: int, opts: dict) -> int:
    return sum(finished(out / run_name(r, s), opts) for r in rows for s in range(seeds))


def step_seconds(threads: int = 1, steps: int = 5) -> float:
    """Seconds per training step of the miniature base model on this machine, measured: a few Adam steps on a
    batch of the study's size and the corpus's typical lengths, with the study's thread count. The page scales
    the shipped study's run times by this against the same number measured where the study was made."""
    import torch

    from model.nn.transformer import Transformer
    from model.training.tasks import adam
    prev = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        gen = torch.Generator().manual_seed(0)
        cfg = mini_config("base", MINI_BASE.vocab_size)
        model = Transformer(cfg).train()
        opt = adam(model.parameters(), lr=1e-4)
        src = torch.randint(4, cfg.vocab_size, (DEFAULTS["batch_size"], 12), generator=gen)
        tgt = torch.randint(4, cfg.vocab_size, (DEFAULTS["batch_size"], 14), generator=gen)

        def step():
            opt.zero_grad(set_to_none=True)
            model(src, tgt[:, :-1], labels=tgt[:, 1:]).loss.backward()
            opt.step()
        step()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        return (time.perf_counter() - t0) / steps
    finally:
        torch.set_num_threads(prev)


def _document(table: list[dict], opts: dict, command: str, seconds: float) -> dict:
    import platform

    import torch
    return {"study": "table3", "task": TASK, "mini_base": MINI_BASE.to_dict(), "options": opts,
            "command": command, "seconds": seconds, "rows": table,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}",
            "step_seconds": step_seconds(int(opts.get("threads") or 1)),
            "written_at": time.strftime("%Y-%m-%d %H:%M:%S")}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m model.training.study", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    p.add_argument("study", choices=("table3",))
    p.add_argument("--out", required=True, help="the study folder (e.g. runs/study-table3)")
    p.add_argument("--rows", default="", help="comma-separated row keys (default: every row)")
    for name, value in DEFAULTS.items():
        p.add_argument("--" + name.replace("_", "-"), type=type(value), default=value)
    p.add_argument("--rebuild", action="store_true", help="only write the table again from the finished runs")
    p.add_argument("--fresh", action="store_true", help="train the given rows again, discarding their results")
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
        if not (value >= 0 if name in MAY_BE_ZERO else value > 0):
            parser.error(f"--{name.replace('_', '-')} must be {'0 or more' if name in MAY_BE_ZERO else 'positive'}")

    out = Path(args.out)
    stop = {"flag": False}

    def handler(signum, frame):
        stop["flag"] = True

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handler)
    command = "python -m model.training.study " + " ".join(argv)
    if args.rebuild:  # the table of the runs on disk, with the study's own command, options and time
        state = read_json(out / "study.json") or {}
        opts = state.get("options") or opts
        seconds = max(float(state.get("seconds") or 0.0), float((read_json(out / "table3.json") or {}).get("seconds") or 0.0))
        doc = _document(build_table(out, opts), opts, state.get("command") or command, float(seconds))
        atomic_write_json(out / "table3.json", doc)
        if args.ship:
            atomic_write_json(Path(args.ship), doc)
        return 0
    try:
        with study_lock(out):
            return run_study(out, rows, opts, ship=Path(args.ship) if args.ship else None, command=command,
                             stop=stop, fresh=args.fresh)
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
