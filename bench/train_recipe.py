"""Time to 95% test exact match of en-ko training recipes, side by side.

    python bench/train_recipe.py [--budget 240] [--check-every 12] [--target 0.95] [--threads 1]
                                 [--recipes before,after] [--keep-going] [--extra NAME=OPTIONS]
    python bench/train_recipe.py --first-step [--repeats 3]   # trainer start -> its first metrics line
    python bench/train_recipe.py --first-step --via-manager   # the page's Start: plain against standby trainer

Each recipe is a list of `python -m model.training.train` options; the bench builds the trainer's own model,
optimiser, schedule and batches (model.training.tasks.Seq2Seq), trains, and every --check-every seconds of
training scores greedy exact match on the whole test split exactly as `--export` does
(model.inference.evaluate.score_test's greedy pass: model.inference.decode.greedy_decode_batch + model.inference.metrics.exact_match).
Time = training wall time only (batching, forward, backward, optimiser step), evaluation left out.
The recipes take turns, one checkpoint interval each, every recipe with its own torch RNG state, so load
from other work on a shared machine hits them alike. Reports per recipe: tokens/s (real source + target
tokens, as the trainer logs them), the padding share (pad tokens / all tokens of the padded source and
target batches), and the training time at which the target was first reached.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from model.training.allocator import keep_freed_memory, request_huge_pages  # noqa: E402  (imports no torch)

if "--default-malloc" not in sys.argv:  # the trainer process's settings (model/training/allocator.py); before torch's import
    request_huge_pages()

import torch  # noqa: E402

from bench.common import machine, table, write  # noqa: E402
from app.jobs.options import RECIPES, task_recipe, train_arguments, TrainOptions  # noqa: E402
from model.inference.decode import greedy_decode_batch  # noqa: E402
from model.inference.metrics import exact_match  # noqa: E402
from model.training.options import build_parser  # noqa: E402
from model.training.tasks import Seq2Seq  # noqa: E402
from model.data.train_data import encode_pairs, load_task  # noqa: E402
from model.training.schedule import ADAM_BETAS, ADAM_EPS, noam_lambda  # noqa: E402

# What the training page starts for task en-ko, size "small" (app/jobs/options.py), as trainer options.
PAGE_SMALL = ["--preset", "teaching", "--max-len", "64"]


def page_recipe(recipe: dict) -> list[str]:
    """The trainer options the page builds for en-ko with this recipe (without --config, --out, --threads)."""
    o = TrainOptions(task="en-ko", size="small", **recipe)
    # the page puts a recipe's dropout into the model's --config (app.jobs.options.model_config); here, the flag
    dropout = ["--dropout", repr(float(o.dropout))] if o.dropout is not None else []
    return PAGE_SMALL + dropout + train_arguments(o)


RECIPE_ARGS = {
    "before": lambda: page_recipe(dict(RECIPES["small"])),  # batch 64 sentences, warm-up 400, lr factor 1.0
    "after": lambda: page_recipe(task_recipe("en-ko", "small")),
}


class Contender:
    def __init__(self, name: str, argv: list[str], data, device):
        self.name, self.argv = name, argv
        self.args = build_parser().parse_args(argv + ["--out", "/nonexistent"])
        self.job = Seq2Seq(self.args, data)
        cfg, problem = self.job.config(self.args)
        assert problem is None, problem
        torch.manual_seed(self.args.seed)
        self.model = self.job.build(cfg).to(device)
        self.opt, self.sched = self.job.optimizer(self.model, self.args)
        if name == "before":  # the older trainer: Adam's per-parameter loop, not the fused kernel
            self.opt = torch.optim.Adam(self.model.parameters(), lr=1.0, betas=ADAM_BETAS, eps=ADAM_EPS)
            self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, noam_lambda(cfg.d_model, self.args.warmup,
                                                                                   self.args.lr_factor))
        self.rng = torch.get_rng_state()
        self.device, self.pad = device, data.tokenizer.pad_id
        self.step = 0
        self.seconds = 0.0
        self.cpu = 0.0  # CPU seconds of the same stretches: with one thread, the wall time of a quiet machine
        self.tokens = self.all_tokens = 0
        self.checks: list[dict] = []
        self.losses: list[float] = []
        self.reached = None
        self.snapshots: list[dict] = []  # --average-last K: the weights at the last K --ckpt-every steps

    def train_for(self, seconds: float) -> None:
        """Train until `seconds` more of training time have passed (or the recipe's steps are done)."""
        torch.set_rng_state(self.rng)
        self.model.train()
        end = self.seconds + seconds
        while self.seconds < end and self.step < self.args.steps:
            t0, c0 = time.perf_counter(), time.process_time()
            src, tin, tout = self.job.batch(self.step, self.args.seed, 0, self.args.batch_size, self.device)
            loss, n_tok = self.job.loss(self.model, self.model, (src, tin, tout))
            self.opt.zero_grad(set_to_none=True)
            self.losses.append(loss.item())
            loss.backward()
            self.opt.step()
            self.sched.step()
            self.seconds += time.perf_counter() - t0
            self.cpu += time.process_time() - c0
            self.step += 1
            if self.args.average_last and self.step % self.args.ckpt_every == 0:  # as the trainer's Averaging
                self.snapshots = (self.snapshots + [{k: v.detach().clone() for k, v in
                                                    self.model.state_dict().items()}])[-self.args.average_last:]
            self.tokens += n_tok
            self.all_tokens += src.numel() + tout.numel()
        self.rng = torch.get_rng_state()

    def scored_model(self):
        """The model a run ending now would export: with --average-last K, the mean of the last K snapshots
        (model.training.averaging.Averaging; the live weights while there is none yet)."""
        if not self.snapshots:
            return self.model
        import copy
        averaged = copy.deepcopy(self.model)
        averaged.load_state_dict({k: sum(s[k] for s in self.snapshots) / len(self.snapshots)
                                  if self.snapshots[0][k].is_floating_point() else self.snapshots[-1][k]
                                  for k in self.snapshots[0]})
        return averaged

    def score(self, sources, refs, tok, longest: int) -> float:
        # Decoding stops `longest` tokens in: the longest reference's length + 10 (a hypothesis that runs past
        # it cannot equal its reference; score_test decodes to max_len - 1, which costs a minute while the
        # model has not yet learnt to stop, and gives the same exact match).
        model = self.scored_model()
        hyps = [tok.decode(h) for h in greedy_decode_batch(model, sources, bos_id=tok.bos_id, eos_id=tok.eos_id,
                                                            max_len=min(model.config.max_len - 1, longest))]
        self.model.train()
        return exact_match(hyps, refs)

    @property
    def done(self) -> bool:
        return self.step >= self.args.steps


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far (Linux /proc): on a busy machine, what its wall time
    would be on a quiet one (the trainer runs on one thread)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def first_step(repeats: int, threads: int, name: str = "train_first_step") -> None:
    """Start the trainer as the training page does (app.jobs: --config, train_arguments, --threads) for the
    after-recipe and time process start -> status "running" -> the first "train" line of metrics.jsonl,
    with the cache of encoded splits cold (an empty $ATLAS_CACHE_DIR) and warm."""
    import json
    import subprocess
    import tempfile
    from app.jobs.options import model_config
    from model.data.train_data import build_tokenizer
    root = Path(__file__).resolve().parent.parent
    o = TrainOptions(task="en-ko", size="small", **task_recipe("en-ko", "small"))
    rows = []
    with tempfile.TemporaryDirectory(prefix="atlas-first-step-") as tmp:
        cfg = Path(tmp) / "config.json"
        cfg.write_text(json.dumps(model_config(o, build_tokenizer("en-ko").vocab_size).to_dict()))
        cold_cache = Path(tmp) / "cache"
        for i in range(repeats + 1):
            cache = "cold" if i == 0 else "warm"
            out = Path(tmp) / f"run{i}"
            env = {**os.environ, "ATLAS_CACHE_DIR": str(cold_cache), "OMP_NUM_THREADS": str(threads)}
            t0 = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-m", "model.training.train", "--config", str(cfg), *train_arguments(o),
                                     "--threads", str(threads), "--out", str(out)], cwd=root, env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            running = first = cpu = None
            try:
                while first is None and time.perf_counter() - t0 < 120:
                    if running is None and (out / "status.json").is_file() and \
                            '"running"' in (out / "status.json").read_text(errors="replace"):
                        running = time.perf_counter() - t0
                    m = out / "metrics.jsonl"
                    if m.is_file() and '"train"' in m.read_text(errors="replace"):
                        first = time.perf_counter() - t0
                        cpu = cpu_seconds(proc.pid)
                    time.sleep(0.01)
            finally:
                proc.terminate()
                proc.wait(30)
            rows.append({"cache": cache, "to running (s)": round(running or -1, 2),
                         "to first metrics line (s)": round(first or -1, 2),
                         "CPU seconds by then": round(cpu, 2) if cpu is not None else "-",
                         "load": round(os.getloadavg()[0], 2)})
            print(rows[-1], flush=True)
    print(table(rows))
    print("wrote", write(name, {"machine": machine(), "threads": threads, "rows": rows}))


def first_step_via_manager(repeats: int, threads: int, name: str = "train_first_step_manager") -> None:
    """The training page's path: app.jobs.JobManager.start() -> the first "train" line of metrics.jsonl, with
    a plain trainer started at the click and with the standby trainer the page starts ahead of time
    (JobManager.prepare(), model/training/standby.py), taking turns; the cache of encoded splits warm."""
    import tempfile
    from app.jobs import JobManager
    o = TrainOptions(task="en-ko", size="small", **task_recipe("en-ko", "small"))
    rows = []
    with tempfile.TemporaryDirectory(prefix="atlas-first-step-") as tmp:
        for i in range(repeats):
            for mode in ("plain", "standby"):
                m = JobManager(Path(tmp) / f"{mode}{i}", max_running=1, threads=threads, standby=mode == "standby")
                m.prepare()
                cpu0 = 0.0
                if mode == "standby":
                    assert m.standby_ready(timeout=120), "the standby trainer did not finish importing"
                    time.sleep(1.0)
                    cpu0 = cpu_seconds(m._standby.pid) or 0.0
                t0 = time.perf_counter()
                rid = m.start(o)
                metrics = m.run_path(rid) / "metrics.jsonl"
                pid = json.loads((m.run_path(rid) / "job.json").read_text())["pid"]
                first = cpu = None
                try:
                    while first is None and time.perf_counter() - t0 < 120:
                        if metrics.is_file() and '"train"' in metrics.read_text(errors="replace"):
                            first = time.perf_counter() - t0
                            cpu = (cpu_seconds(pid) or 0.0) - cpu0
                        time.sleep(0.01)
                finally:
                    m.stop(rid)
                    for proc in m._procs.values():
                        proc.wait(60)
                rows.append({"trainer": mode, "Start -> first metrics line (s)": round(first or -1, 2),
                             "trainer CPU seconds since Start": round(cpu, 2) if cpu is not None else "-",
                             "load": round(os.getloadavg()[0], 2)})
                print(rows[-1], flush=True)
    print(table(rows))
    print("wrote", write(name, {"machine": machine(), "threads": threads, "rows": rows}))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--first-step", action="store_true", help="time trainer start -> first metrics line instead")
    p.add_argument("--repeats", type=int, default=3, help="with --first-step: warm-cache starts")
    p.add_argument("--via-manager", action="store_true",
                   help="with --first-step: from JobManager.start(), a plain trainer against the standby one")
    p.add_argument("--recipes", default="before,after")
    p.add_argument("--budget", type=float, default=240.0, help="seconds of training per recipe at most")
    p.add_argument("--check-every", type=float, default=12.0, help="seconds of training between test scores")
    p.add_argument("--target", type=float, default=0.95)
    p.add_argument("--precheck", type=float, default=0.85,
                   help="score the whole test split only once the first --precheck-n test sentences reach this "
                        "exact match (saves minutes of decoding while the model is far from the target)")
    p.add_argument("--precheck-n", type=int, default=200)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu", help="where the recipes train and are scored (cpu, cuda)")
    p.add_argument("--keep-going", action="store_true", help="train on after the target (to the budget or the "
                                                             "recipe's steps)")
    p.add_argument("--extra", action="append", default=[], metavar="NAME=OPTIONS",
                   help="another recipe: a name and trainer options, e.g. 'x=--batch-tokens 2048 --warmup 200'")
    p.add_argument("--default-malloc", action="store_true",
                   help="leave glibc's malloc thresholds and torch's page size as they are (the trainer's process "
                        "keeps freed memory and asks for huge pages: model/training/allocator.py)")
    p.add_argument("--name", default=None, help="result file name (default: train_recipe, with --first-step "
                   "train_first_step or, with --via-manager, train_first_step_manager)")
    args = p.parse_args()
    kept = False if args.default_malloc else keep_freed_memory()
    if args.first_step:
        if args.via_manager:
            return first_step_via_manager(args.repeats, args.threads, args.name or "train_first_step_manager")
        return first_step(args.repeats, args.threads, args.name or "train_first_step")
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    t0 = time.perf_counter()
    data = load_task("en-ko", 0, None, 64)
    print(f"data: {len(data.train):,} train / {len(data.test_text):,} test pairs, {time.perf_counter() - t0:.1f} s")
    tok = data.tokenizer
    sources = [s for s, _ in encode_pairs(tok, data.test_text, 64)]
    refs = [t for _, t in data.test_text]
    longest = max(len(tok.encode(r)) for r in refs) + 10
    recipes = {name: RECIPE_ARGS[name]() for name in args.recipes.split(",") if name}
    for e in args.extra:
        name, _, opts = e.partition("=")
        recipes[name] = PAGE_SMALL + ["--task", "en-ko"] + opts.split()
    contenders = [Contender(n, a, data, device) for n, a in recipes.items()]
    for c in contenders:
        print(f"{c.name}: {' '.join(c.argv)}")
    load0 = os.getloadavg()
    while any(not (c.done or c.seconds >= args.budget or (c.reached and not args.keep_going)) for c in contenders):
        for c in contenders:
            if c.done or c.seconds >= args.budget or (c.reached and not args.keep_going):
                continue
            c.train_for(args.check_every)
            t = time.perf_counter()
            loss = sum(c.losses[-20:]) / max(len(c.losses[-20:]), 1)
            head = c.score(sources[:args.precheck_n], refs[:args.precheck_n], tok, longest)
            if head >= args.precheck:
                em, what = c.score(sources, refs, tok, longest), "test exact"
                c.checks.append({"seconds": round(c.seconds, 1), "cpu_seconds": round(c.cpu, 1), "step": c.step,
                                 "exact": em, "loss": loss})
                if em >= args.target and c.reached is None:
                    c.reached = (c.seconds, c.step, c.cpu)
            else:
                em, what = head, f"first {args.precheck_n} test exact"
                c.checks.append({"seconds": round(c.seconds, 1), "cpu_seconds": round(c.cpu, 1), "step": c.step,
                                 "head_exact": em, "loss": loss})
            print(f"  {c.name:>8}: {c.seconds:6.1f} s ({c.cpu:6.1f} CPU s)  step {c.step:5d}  loss {loss:.3f}  {what} {em:.1%}  "
                  f"(scored in {time.perf_counter() - t:.1f} s, load {os.getloadavg()[0]:.2f})", flush=True)
    load1 = os.getloadavg()
    rows = []
    for c in contenders:
        rows.append({"recipe": c.name, "steps": c.step, "train s": round(c.seconds, 1),
                     "tokens/s": round(c.tokens / max(c.seconds, 1e-9)),
                     "padding share": f"{1 - c.tokens / max(c.all_tokens, 1):.1%}",
                     "s/step": round(c.seconds / max(c.step, 1), 3),
                     "train CPU s": round(c.cpu, 1),
                     f"time to {args.target:.0%}": f"{c.reached[0]:.1f} s, {c.reached[2]:.1f} CPU s (step {c.reached[1]})"
                     if c.reached
                     else f"not within {c.seconds:.0f} s",
                     "best exact": f"{max(x['exact'] for x in full):.1%}" if (full := [x for x in c.checks if "exact" in x])
                     else "-"})
    print(table(rows))
    print(f"load average at start {load0[0]:.2f} / {load0[1]:.2f}, at end {load1[0]:.2f} / {load1[1]:.2f}")
    result = {"machine": machine(), "threads": args.threads, "target": args.target, "keep_freed_memory": kept,
              "huge_pages": os.environ.get("THP_MEM_ALLOC_ENABLE"), "load_start": load0, "load_end": load1,
              "rows": rows, "recipes": {c.name: c.argv for c in contenders},
              "checks": {c.name: c.checks for c in contenders}}
    print("wrote", write(args.name or "train_recipe", result))


if __name__ == "__main__":
    main()
