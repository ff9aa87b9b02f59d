"""Label smoothing (section 5.4), measured with torch's own cross-entropy.

torch.nn.functional.cross_entropy(label_smoothing=eps) trains against the target distribution
q = (1 - eps) * onehot + eps / V  (eps spread over all V classes, the correct one included).
The loss is minimised when the model's distribution equals q, so the best confidence in the
correct token is 1 - eps + eps / V, not 1: smoothing keeps the model from becoming over-sure."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def target_distribution(vocab_size: int, eps: float, correct: int = 0) -> torch.Tensor:
    """(V,) the smoothed target: 1 - eps + eps/V on the correct class, eps/V elsewhere."""
    _check(vocab_size, eps)
    q = torch.full((vocab_size,), eps / vocab_size, dtype=torch.float64)
    q[correct] += 1.0 - eps
    return q


def optimal_confidence(vocab_size: int, eps: float) -> float:
    """The probability on the correct token that minimises the smoothed loss."""
    _check(vocab_size, eps)
    return 1.0 - eps + eps / vocab_size


def _check(vocab_size: int, eps: float) -> None:
    if vocab_size < 2:
        raise ValueError("vocabulary size must be at least 2")
    if not 0.0 <= eps < 1.0:
        raise ValueError("eps must be in [0, 1)")


def prediction_logits(confidence: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Logits of a model that puts `confidence` on class 0 and spreads the rest evenly over the
    other V - 1 classes. confidence: (N,) in (0, 1) -> (N, V) log-probabilities."""
    p = confidence.to(torch.float64).clamp(1e-12, 1 - 1e-12)[:, None]  # (N, 1)
    rest = torch.log((1 - p) / (vocab_size - 1)).expand(-1, vocab_size - 1)  # (N, V-1)
    return torch.cat([torch.log(p), rest], dim=1)  # (N, V)


def loss_vs_confidence(confidence, vocab_size: int, eps: float) -> torch.Tensor:
    """(N,) cross-entropy of the correct class 0 under label smoothing eps, computed by
    F.cross_entropy (eps=0 gives the plain -log p)."""
    _check(vocab_size, eps)
    conf = torch.as_tensor(confidence, dtype=torch.float64).reshape(-1)
    rows = max(1, 2_000_000 // vocab_size)  # chunks of ~16 MB, whatever the vocabulary size
    out = []
    for chunk in conf.split(rows):
        logits = prediction_logits(chunk, vocab_size)  # (n, V)
        target = torch.zeros(chunk.numel(), dtype=torch.long)
        out.append(F.cross_entropy(logits, target, label_smoothing=eps, reduction="none"))
    return torch.cat(out)


def minimise_confidence(vocab_size: int, eps: float, lo: float = 1e-6, hi: float = 1 - 1e-9,
                        iters: int = 60) -> tuple[float, float]:
    """Golden-section search of loss_vs_confidence on [lo, hi] (the loss is convex in p).
    Returns (best confidence, loss there): found numerically, not from the formula."""
    _check(vocab_size, eps)
    f = lambda p: float(loss_vs_confidence(torch.tensor([p]), vocab_size, eps)[0])
    g = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
        if b - a < 1e-10:
            break
    p = (a + b) / 2
    return p, f(p)


def target_entropy(vocab_size: int, eps: float) -> float:
    """The smallest reachable smoothed loss: the entropy of the target distribution (nats)."""
    q = target_distribution(vocab_size, eps)
    q = q[q > 0]
    return float(-(q * q.log()).sum())


def smoothing_demo(vocab_size: int, eps: float, points: int = 400) -> dict:
    """What the label-smoothing section shows for (V, eps).

    Returns {"target": (V,) smoothed target, "confidence": a grid in (0, 1) that includes the
    optimum, "plain" / "smoothed": the loss at each confidence without / with smoothing, "best":
    (confidence, loss) found numerically, "formula": 1 - eps + eps/V, "entropy": of the target,
    "loss_top": an upper y limit that shows the smoothed curve's rise (at least 3.5)}."""
    formula = optimal_confidence(vocab_size, eps)
    conf = torch.linspace(0.005, 0.9995, points, dtype=torch.float64)
    conf = torch.unique(torch.cat([conf, torch.tensor([formula], dtype=torch.float64)]))
    conf = conf[conf < 1]
    smoothed = loss_vs_confidence(conf, vocab_size, eps)
    return {"target": target_distribution(vocab_size, eps).numpy(), "confidence": conf.numpy(),
            "plain": loss_vs_confidence(conf, vocab_size, 0.0).numpy(), "smoothed": smoothed.numpy(),
            "best": minimise_confidence(vocab_size, eps), "formula": formula,
            "entropy": target_entropy(vocab_size, eps),
            "loss_top": max(float(smoothed[conf > 0.05].max()), 3.5)}
