"""What a training run will cost before it starts: parameters (exact: the model built on the meta device, no
memory), memory and time (estimates from the parameters, the tokens a step sees and this machine's measured
matmul speed). The training page asks for it through app/jobs/estimate.py, which turns the page's choices into
these numbers and keeps what was measured. Torch is imported only when a number needs it, so that importing
this module stays light (the first page imports the job manager)."""
from __future__ import annotations

import math
import time


def count_parameters(cfg) -> int:
    """The exact parameter count of the Transformer of TransformerConfig `cfg` (built on the meta device)."""
    import torch

    from model.nn.transformer import Transformer
    with torch.device("meta"):
        return Transformer(cfg).num_parameters()


def family_parameters(task: str, cfg) -> int:
    """The exact parameter count of family member `task`'s model with its config `cfg` (model.family)."""
    import torch

    from model.family import family_task
    with torch.device("meta"):
        return sum(p.numel() for p in family_task(task).build(cfg).parameters())


_SPEED: dict[int, tuple[float, float]] = {}  # threads -> (the best speed measured, when)
REMEASURE_S = 300.0  # a server measures again after this long and keeps the better of the two


def measure_throughput(threads: int, n: int = 256, batch: int = 32, trials: int = 5) -> float:
    """Floating-point operations per second of this machine on `batch` matmuls of n x n in one call (torch.bmm):
    the fastest of `trials` calls. On one thread it is timed by the thread's own CPU time, which neither another
    thread of the server holding the interpreter's lock (a page's run, the warm-up's imports, a trainer started
    ahead of time importing torch) nor other processes on the same cores can stretch: timed by the clock, such a
    moment read several times too slow, and the server kept that number. With more threads (the trainer's) the
    clock times it too, and the faster of the two counts."""
    import torch
    prev = torch.get_num_threads()
    flops = 2 * batch * n ** 3
    a, b = torch.randn(batch, n, n), torch.randn(batch, n, n)
    best = 0.0
    try:
        for count, clock in ((1, time.thread_time), *(((threads, time.perf_counter),) if threads > 1 else ())):
            torch.set_num_threads(count)
            torch.bmm(a, b)
            fastest = math.inf
            for _ in range(trials):
                t0 = clock()
                torch.bmm(a, b)
                fastest = min(fastest, clock() - t0)
            best = max(best, flops / max(fastest, 1e-9))
    finally:
        torch.set_num_threads(prev)
    return max(best, 1e8)


def throughput(threads: int) -> float:
    """This machine's matmul speed for `threads` threads (measure_throughput), measured once per process and again
    every REMEASURE_S, keeping the best."""
    best, when = _SPEED.get(threads, (0.0, -math.inf))
    if time.monotonic() - when > REMEASURE_S:
        best = max(best, measure_throughput(threads))
        _SPEED[threads] = (best, time.monotonic())
    return best


def average_tokens(task: str, pairs: list[tuple[str, str]], max_len: int) -> float:
    """Average source + target tokens of an example of `task` (+ eos/bos), each side cut at `max_len` - 2 as
    the trainer cuts it; a language model (task "lm") has no source."""
    from model.data.tokenizer import build_tokenizer
    tok = build_tokenizer(task)
    pairs = pairs or [("", "")]
    limit = max_len - 2
    per = [(0 if task == "lm" else min(len(tok.encode(s)), limit) + 1) + min(len(tok.encode(t)), limit) + 1
           for s, t in pairs]
    return sum(per) / len(per)


def task_tokens(task: str, sample: int, max_len: int) -> float:
    """average_tokens of a built-in task's first `sample` training examples (the en-ko tasks read the
    corpus's split: it generates the whole corpus in pure Python)."""
    from model.data.corpus import train_head
    return average_tokens(task, train_head(task, sample), max_len)


# The time model, in units of this machine's measured matmul speed (throughput), so that one set of constants fits
# a fast machine and a slow one. Fitted on the training page's presets (copy, en-ko and lm; tiny and small), each
# run timed step by step beside a measurement of the matmul speed (docs/benchmarks.md, "The training estimate"):
# - a step does 6 · parameters · tokens FLOPs, on the padded tokens (batches of whole sentences pad each to the
#   longest of its batch, PADDING; batches by tokens are filled by length and hardly pad), at EFFICIENCY times the
#   benchmark's speed (a model's matmuls are larger than the benchmark's), plus a cost that does not grow with the
#   model's width: Python and the launch of each layer's kernels (STEP_OVERHEAD per layer, one more for the
#   embeddings and the loss), and the softmax over the vocabulary of every token (LOGIT_COST per logit); for the
#   smallest models these costs are most of a step;
# - an evaluation scores 500 sentences with teacher forcing and decodes 200 greedily, token by token: its FLOPs
#   plus a cost per decoded token that grows with the vocabulary (EVAL_OVERHEAD, EVAL_LOGIT_COST);
# - the start: a trainer started ahead of time (the standby trainer, app/jobs/standby.py) is at its first step
#   almost at once (START_WARM); a fresh one imports torch and reads its data first (START_COLD).
EFFICIENCY, PADDING = 1.3, 1.6
STEP_OVERHEAD = 0.136e9  # per layer, + 1
LOGIT_COST = 780.0
EVAL_OVERHEAD, EVAL_LOGIT_COST = 17e9, 27e6
START_WARM, START_COLD = 1.5, 7.0  # seconds, with the end's last checkpoint and export


def step_seconds(cfg, params: int, tokens_per_step: float, machine: float, by_tokens: bool = False) -> float:
    """One training step of a Transformer of `cfg` with `params` parameters on `tokens_per_step` tokens (batched
    by tokens, or by sentences and padded), on a machine whose matmul speed is `machine` FLOP/s."""
    layers = cfg.n_encoder_layers + cfg.n_decoder_layers
    computed = tokens_per_step * (1.0 if by_tokens else PADDING)
    work = (6 * params * computed / EFFICIENCY + STEP_OVERHEAD * (layers + 1)
            + LOGIT_COST * tokens_per_step * cfg.vocab_size)
    return work / machine


def eval_seconds(cfg, params: int, tokens_per_example: float, machine: float) -> float:
    """One evaluation: 500 sentences teacher-forced, 200 decoded greedily (about half their tokens each)."""
    flops = 2 * params * tokens_per_example * (500 + 200 * tokens_per_example / 4)
    return (flops / EFFICIENCY + EVAL_OVERHEAD + EVAL_LOGIT_COST * cfg.vocab_size) / machine


def run_cost(cfg, params: int, *, steps: int, batch_size: int, batch_tokens: int, tokens_per_example: float,
             evals: int, threads: int, warm_start: bool = False) -> dict:
    """Memory (parameters + Adam states + a rough activation count) and time (step_seconds, eval_seconds and the
    start, from this machine's measured matmul speed) of `steps` steps of a Transformer of `cfg` with `params`
    parameters, batches of `batch_size` sentences (or `batch_tokens` tokens when > 0) and `evals` evaluations;
    `warm_start`: a standby trainer will take the run. An estimate, not a promise."""
    tok_ex = tokens_per_example
    # By tokens: the budget, less the few % of padding that length bucketing leaves (docs/benchmarks.md).
    tokens_per_step = 0.95 * batch_tokens if batch_tokens else batch_size * tok_ex
    sentences = tokens_per_step / max(tok_ex, 1)
    layers = cfg.n_encoder_layers + cfg.n_decoder_layers
    seq = max(tok_ex / 2, 1)
    # weights, gradients, Adam's two moments: 4 copies of float32
    state_bytes = 4 * 4 * params
    # activations kept for backward: about 16 d_model-vectors per token per layer, plus attention maps
    act_bytes = 4 * (16 * cfg.d_model * tokens_per_step * layers
                     + 3 * sentences * cfg.n_heads * seq * seq * layers * 2
                     + 3 * tokens_per_step * cfg.vocab_size)
    flops_per_step = 6 * params * tokens_per_step
    machine = throughput(threads)
    seconds = (steps * step_seconds(cfg, params, tokens_per_step, machine, by_tokens=bool(batch_tokens))
               + evals * eval_seconds(cfg, params, tok_ex, machine) + (START_WARM if warm_start else START_COLD))
    return {"parameters": params, "memory_bytes": int(state_bytes + act_bytes), "state_bytes": int(state_bytes),
            "activation_bytes": int(act_bytes), "flops": float(flops_per_step * steps),
            "tokens_per_step": tokens_per_step, "seconds": seconds, "machine_flops": machine,
            "config": cfg.to_dict()}


def family_cost(cfg, params: int, seconds: float | None) -> dict:
    """A family member's cost: memory from its parameters (weights, gradients, Adam's moments, plus as much
    again for activations), time as given (scaled from the shipped model's own training by the caller)."""
    return {"parameters": params, "memory_bytes": int(2 * 16 * params), "state_bytes": int(16 * params),
            "activation_bytes": int(16 * params), "flops": None, "tokens_per_step": None, "seconds": seconds,
            "machine_flops": None, "config": cfg.to_dict(), "family": True}
