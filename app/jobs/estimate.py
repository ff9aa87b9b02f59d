"""The training page's cost estimate of a run (model/training/estimate.py computes it): the page's choices
turned into the model's config and the numbers the estimate needs, and what was measured kept once per server
(vocabulary sizes, tokens per example, the machine's matmul speed). Tokens per example of the tasks on the en-ko
corpus are measured in a child process (`measure_tokens_apart`) and kept on disk for the next server."""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import subprocess
import sys
from pathlib import Path

from app.jobs.options import (MAX_LEN, MAX_UPLOAD_BYTES, UPLOAD_SAMPLE, TrainOptions, checks_every, is_family,
                              model_config, shipped_meta)
from model.messages import UserError
from model.training import estimate as cost

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def vocab_size(task: str) -> int:
    from model.data.tokenizer import build_tokenizer
    return build_tokenizer(task).vocab_size


_TOKENS: dict[str, float] = {}  # tokens per example of each built-in task, once measured


def _task_tokens(task: str) -> float:
    if task not in _TOKENS:
        _TOKENS[task] = cost.task_tokens(task, UPLOAD_SAMPLE, MAX_LEN)
    return _TOKENS[task]


def measure_tokens_apart(tasks: tuple[str, ...], timeout: float = 120.0) -> None:
    """Tokens per example of `tasks`, measured in a child process and kept here. For the tasks on the en-ko
    corpus: their first training examples come from its split, which generates the corpus again (pure Python,
    and its memory). Done in the server, it held the interpreter's lock and a learner's click meanwhile
    took several times as long; the child holds neither the lock nor the memory, and runs at the lowest
    priority (it still slows the training page's first clicks on a 2-core machine, so the numbers are kept on
    disk and the next server reads them: _kept_tokens_path). If the child fails, a task is measured here when
    an estimate first needs it."""
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
    code = ("import json, os, sys\n"
            "if hasattr(os, 'nice'): os.nice(19)  # the learner's clicks first: this runs on what CPU is left\n"
            f"sys.path.insert(0, {str(ROOT)!r})\n"
            "from model.training.estimate import task_tokens\n"
            f"print(json.dumps({{t: task_tokens(t, {UPLOAD_SAMPLE}, {MAX_LEN}) for t in {todo!r}}}))")
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                              cwd=ROOT, stdin=subprocess.DEVNULL)
        found = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else {}
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return
    for task, value in found.items():
        if task in todo and isinstance(value, (int, float)) and value > 0:
            _TOKENS.setdefault(task, float(value))
    _keep_tokens(kept_path, {**kept, **{t: _TOKENS[t] for t in tasks if t in _TOKENS}})


def _kept_tokens_path() -> Path:
    """<cache>/estimate-tokens-<hash>.json, the hash of everything the numbers depend on (the corpus's sources, the
    tokenizer's code and model, the estimate's code and the options' limits): a number kept there is never stale."""
    from model.data import tokenizer
    from model.data.corpus import cache_dir, corpus_sources
    digest = hashlib.sha256()
    for part in (*corpus_sources(), Path(tokenizer.__file__), tokenizer.DEFAULT_DIR / "tokenizer.model",
                 Path(cost.__file__), Path(__file__), Path(__file__).parent / "options.py"):
        digest.update(part.read_bytes())
    return cache_dir() / f"estimate-tokens-{digest.hexdigest()[:16]}.json"


def _read_kept_tokens(path: Path) -> dict[str, float]:
    """What an earlier server measured (measure_tokens_apart): a missing or damaged file is nothing kept."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: float(v) for k, v in data.items()
            if isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0}


def _keep_tokens(path: Path, values: dict[str, float]) -> None:
    from model.atomic import atomic_write_json
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(path, values)
    except OSError:
        pass


def tokens_per_example(task: str, pairs: list[tuple[str, str]] | None = None) -> float:
    """Average source + target tokens of an example (+ eos/bos), measured on the task's data (an
    upload: on its first pairs; no upload yet: a guess of 20 tokens a side)."""
    if task != "tsv":
        return _task_tokens(task)
    return cost.average_tokens(task, pairs[:UPLOAD_SAMPLE], MAX_LEN) if pairs is not None else 2 * 20.0


def config_for(o: TrainOptions):
    """The exact configuration the trainer will build for these choices (a TransformerConfig, or a family
    member's own config)."""
    return model_config(o, 0 if is_family(o.task) else vocab_size(o.task))


def family_estimate(o: TrainOptions) -> dict:
    """A family member: parameters exact, memory from them, time scaled from the shipped model's own training
    (same machine kind, same recipe): seconds per step x batch ratio x steps."""
    cfg = config_for(o)
    params = cost.family_parameters(o.task, cfg)
    meta = shipped_meta(o.task)
    shipped_steps, shipped_seconds = meta.get("steps"), meta.get("train_seconds")
    seconds = None
    if isinstance(shipped_steps, int) and shipped_steps > 0 and isinstance(shipped_seconds, (int, float)):
        batch = _shipped_batch(meta) or o.batch_size
        seconds = shipped_seconds / shipped_steps * o.steps * (o.batch_size / batch) + 5.0
    return cost.family_cost(cfg, params, seconds)


def _shipped_batch(meta: dict) -> int | None:
    import shlex
    try:
        words = shlex.split(str(meta.get("command", "")))
        return int(words[words.index("--batch-size") + 1])
    except (ValueError, IndexError):
        return None


def estimate(o: TrainOptions, threads: int, pairs: list[tuple[str, str]] | None = None,
             warm_start: bool = False) -> dict:
    """Parameters (exact), memory and time of a run with these choices on `threads` threads
    (model.training.estimate.run_cost; `warm_start`: a standby trainer will take it). UserError when the choices
    make no model (e.g. heads that do not divide d_model)."""
    if is_family(o.task):
        return family_estimate(o)
    cfg = config_for(o)
    params = cost.count_parameters(cfg)
    if o.task == "tsv" and pairs is None and o.tsv_bytes:
        from model.data.corpus import read_tsv_corpus
        with contextlib.suppress(UserError):
            pairs = read_tsv_corpus(o.tsv_bytes, max_bytes=MAX_UPLOAD_BYTES)
    return cost.run_cost(cfg, params, steps=o.steps, batch_size=o.batch_size, batch_tokens=o.batch_tokens,
                         tokens_per_example=tokens_per_example(o.task, pairs),
                         evals=max(1, o.steps // checks_every(o.steps)), threads=threads, warm_start=warm_start)
