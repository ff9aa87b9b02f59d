"""What a training run will cost before it starts: parameters (exact: the model built on the meta device, no
memory), memory and time (estimates from the parameters, the tokens a step sees and this machine's measured
matmul speed). The training page asks for it through app/jobs/estimate.py, which turns the page's choices into
these numbers and keeps what was measured. Torch is imported only when a number needs it, so that importing
this module stays light (the first page imports the job manager)."""
from __future__ import annotations

import functools
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


@functools.cache
def throughput(threads: int) -> float:
    """Floating-point operations per second of this machine on one small matmul, measured once
    per process with the trainer's thread count."""
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
    corpus's split: it generates the whole corpus, ~1 s of pure Python)."""
    from model.data.corpus import train_head
    return average_tokens(task, train_head(task, sample), max_len)


def run_cost(cfg, params: int, *, steps: int, batch_size: int, batch_tokens: int, tokens_per_example: float,
             evals: int, threads: int) -> dict:
    """Memory (parameters + Adam states + a rough activation count) and time (6 · parameters · tokens FLOPs over
    the measured matmul speed, at an assumed efficiency) of `steps` steps of a Transformer of `cfg` with
    `params` parameters, batches of `batch_size` sentences (or `batch_tokens` tokens when > 0) and `evals`
    evaluations. An estimate, not a promise."""
    tok_ex = tokens_per_example
    # By tokens: the budget, less the few % of padding that length bucketing leaves (docs/benchmarks.md).
    tokens_per_step = 0.95 * batch_tokens if batch_tokens else batch_size * tok_ex
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
    eval_s = 2 * params * tok_ex * (500 + 100 * tok_ex / 2) / speed + 0.3  # 500 teacher-forced + 200 greedy
    seconds = steps * step_s + evals * eval_s + 5.0  # + start-up (imports, data)
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
