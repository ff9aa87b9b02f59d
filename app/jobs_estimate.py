"""What a training run will cost before it starts: parameters (exact), memory and time (estimates).
Measured values (vocabulary sizes, tokens per example, this machine's matmul speed) are computed
once per server. No Streamlit; torch is imported only when an estimate is asked for."""
from __future__ import annotations

import contextlib
import functools
import time

from app.jobs_options import (MAX_LEN, MAX_UPLOAD_BYTES, UPLOAD_SAMPLE, TrainOptions, checks_every, is_family,
                              model_config, shipped_meta)
from model.messages import UserError


@functools.cache
def vocab_size(task: str) -> int:
    from model.data.tokenizer import build_tokenizer
    return build_tokenizer(task).vocab_size


_TOKENS: dict[str, float] = {}  # tokens per example of each built-in task, once measured


def _task_tokens(task: str) -> float:
    if task not in _TOKENS:
        from model.data.corpus import train_head
        _TOKENS[task] = _average_tokens(task, train_head(task, UPLOAD_SAMPLE))
    return _TOKENS[task]


def measure_tokens_apart(tasks: tuple[str, ...], timeout: float = 120.0) -> None:
    """Tokens per example of `tasks`, measured in a child process and kept here. For the tasks on the en-ko
    corpus: their first training examples come from its split, which generates the corpus again (1.3 s of
    pure Python, ~90 MB). Done here, in the server's warm-up, it held the interpreter's lock, and a learner's
    click meanwhile took 3-4× as long; the child holds neither the lock nor the memory, and runs at the lowest
    priority (it still slowed the training page's first clicks by ~100 ms on this 2-core machine, so the numbers
    are kept on disk and the next server reads them: _kept_tokens_path). If the child fails, a task is measured
    here when an estimate first needs it."""
    import json
    import subprocess
    import sys
    from pathlib import Path
    todo = [t for t in tasks if t not in _TOKENS]
    if not todo:
        return
    kept_path = _kept_tokens_path()
    kept = _read_kept_tokens(kept_path)
    for task in todo:
        if task in kept:
            _TOKENS.setdefault(task, kept[task])
    todo = [t for t in todo if t not in _TOKENS]
    if not todo:
        return
    root = Path(__file__).resolve().parent.parent
    code = ("import json, os, sys\n"
            "if hasattr(os, 'nice'): os.nice(19)  # the learner's clicks first: this runs on what CPU is left\n"
            f"sys.path.insert(0, {str(root)!r})\n"
            "from app.jobs_estimate import _task_tokens\n"
            f"print(json.dumps({{t: _task_tokens(t) for t in {todo!r}}}))")
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                              cwd=root, stdin=subprocess.DEVNULL)
        found = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else {}
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return
    for task, value in found.items():
        if task in todo and isinstance(value, (int, float)) and value > 0:
            _TOKENS.setdefault(task, float(value))
    _keep_tokens(kept_path, {**kept, **{t: _TOKENS[t] for t in tasks if t in _TOKENS}})


def _kept_tokens_path():
    """<cache>/estimate-tokens-<hash>.json, the hash of everything the numbers depend on (the corpus generator, the
    lexicon, the tokenizer, this module and its options): a number kept there can never be stale."""
    import hashlib
    from pathlib import Path

    from model.data.corpus import LEXICON_PATH, cache_dir
    from model.data.tokenizer import DEFAULT_DIR
    here = Path(__file__).resolve()
    digest = hashlib.sha256()
    for part in (here.parent.parent / "model" / "data" / "corpus.py", LEXICON_PATH, DEFAULT_DIR / "tokenizer.model", here,
                 here.parent / "jobs_options.py"):
        digest.update(part.read_bytes())
    return cache_dir() / f"estimate-tokens-{digest.hexdigest()[:16]}.json"


def _read_kept_tokens(path) -> dict[str, float]:
    """What an earlier server measured (measure_tokens_apart): a missing or damaged file is nothing kept."""
    import json
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: float(v) for k, v in data.items()
            if isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0}


def _keep_tokens(path, values: dict[str, float]) -> None:
    from model.atomic import atomic_write_json
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(path, values)
    except OSError:
        pass


def _average_tokens(task: str, pairs: list[tuple[str, str]]) -> float:
    from model.data.tokenizer import build_tokenizer
    tok = build_tokenizer(task)
    pairs = pairs[:UPLOAD_SAMPLE] or [("", "")]
    limit = MAX_LEN - 2
    per = [(0 if task == "lm" else min(len(tok.encode(s)), limit) + 1) + min(len(tok.encode(t)), limit) + 1
           for s, t in pairs]
    return sum(per) / len(per)


def tokens_per_example(task: str, pairs: list[tuple[str, str]] | None = None) -> float:
    """Average source + target tokens of an example (+ eos/bos), measured on the task's data (an
    upload: on its first pairs; no upload yet: a guess of 20 tokens a side)."""
    if task != "tsv":
        return _task_tokens(task)
    return _average_tokens(task, pairs) if pairs is not None else 2 * 20.0


@functools.cache
def throughput(threads: int) -> float:
    """Floating-point operations per second of this machine on one small matmul, measured once
    per server with the trainer's thread count."""
    import torch
    n, reps = 256, 8
    prev = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        a, b = torch.randn(n, n), torch.randn(n, n)
        a @ b
        t0 = time.perf_counter()
        for _ in range(reps):
            a @ b
        dt = time.perf_counter() - t0
    finally:
        torch.set_num_threads(prev)
    return max(2 * n ** 3 * reps / max(dt, 1e-9), 1e8)


def config_for(o: TrainOptions):
    """The exact configuration the trainer will build for these choices (a TransformerConfig, or a family
    member's own config)."""
    return model_config(o, 0 if is_family(o.task) else vocab_size(o.task))


def family_estimate(o: TrainOptions) -> dict:
    """A family member: parameters exact (built on the meta device), memory from them (weights, gradients,
    Adam's moments, plus as much again for activations), time scaled from the shipped model's own
    training (same machine kind, same recipe): seconds per step x batch ratio x steps."""
    import torch
    from model.family import family_task
    cfg = config_for(o)
    with torch.device("meta"):
        params = sum(p.numel() for p in family_task(o.task).build(cfg).parameters())
    meta = shipped_meta(o.task)
    shipped_steps, shipped_seconds = meta.get("steps"), meta.get("train_seconds")
    seconds = None
    if isinstance(shipped_steps, int) and shipped_steps > 0 and isinstance(shipped_seconds, (int, float)):
        batch = _shipped_batch(meta) or o.batch_size
        seconds = shipped_seconds / shipped_steps * o.steps * (o.batch_size / batch) + 5.0
    return {"parameters": params, "memory_bytes": int(2 * 16 * params), "state_bytes": int(16 * params),
            "activation_bytes": int(16 * params), "flops": None, "tokens_per_step": None, "seconds": seconds,
            "machine_flops": None, "config": cfg.to_dict(), "family": True}


def _shipped_batch(meta: dict) -> int | None:
    import shlex
    try:
        words = shlex.split(str(meta.get("command", "")))
        return int(words[words.index("--batch-size") + 1])
    except (ValueError, IndexError):
        return None


def estimate(o: TrainOptions, threads: int, pairs: list[tuple[str, str]] | None = None) -> dict:
    """Parameters (exact: the model built on the meta device), memory (parameters + Adam
    states + a rough activation count) and time (6 · parameters · tokens FLOPs over the
    measured matmul speed, at an assumed efficiency). An estimate, not a promise.
    UserError when the choices make no model (e.g. heads that do not divide d_model)."""
    if is_family(o.task):
        return family_estimate(o)
    import torch
    from model.nn.transformer import Transformer
    cfg = config_for(o)
    with torch.device("meta"):
        params = Transformer(cfg).num_parameters()
    if o.task == "tsv" and pairs is None and o.tsv_bytes:
        from model.data.corpus import read_tsv_corpus
        with contextlib.suppress(UserError):
            pairs = read_tsv_corpus(o.tsv_bytes, max_bytes=MAX_UPLOAD_BYTES)
    tok_ex = tokens_per_example(o.task, pairs)
    # By tokens: the budget, less the few % of padding that length bucketing leaves (docs/benchmarks.md).
    tokens_per_step = 0.95 * o.batch_tokens if o.batch_tokens else o.batch_size * tok_ex
    sentences = tokens_per_step / max(tok_ex, 1)
    layers = cfg.n_encoder_layers + cfg.n_decoder_layers
    seq = max(tok_ex / 2, 1)
    # weights, gradients, Adam's two moments: 4 copies of float32
    state_bytes = 4 * 4 * params
    # activations kept for backward: ~16 d_model-vectors per token per layer, plus attention maps
    act_bytes = 4 * (16 * cfg.d_model * tokens_per_step * layers
                     + 3 * sentences * cfg.n_heads * seq * seq * layers * 2
                     + 3 * tokens_per_step * cfg.vocab_size)
    flops_per_step = 6 * params * tokens_per_step
    # Calibrated on this project's CPU runs: big matmuls reach ~70 % of the benchmark; each
    # step also pays a fixed Python/kernel-launch cost of a few milliseconds per layer.
    machine = throughput(threads)
    speed = machine * 0.7
    step_s = flops_per_step / speed + 0.004 * (layers + 1)
    evals = max(1, o.steps // checks_every(o.steps))
    eval_s = 2 * params * tok_ex * (500 + 100 * tok_ex / 2) / speed + 0.3  # 500 teacher-forced + 200 greedy
    seconds = o.steps * step_s + evals * eval_s + 5.0  # + start-up (imports, data)
    return {"parameters": params, "memory_bytes": int(state_bytes + act_bytes), "state_bytes": int(state_bytes),
            "activation_bytes": int(act_bytes), "flops": float(flops_per_step * o.steps),
            "tokens_per_step": tokens_per_step, "seconds": seconds, "machine_flops": machine,
            "config": cfg.to_dict()}
