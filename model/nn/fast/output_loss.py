"""The training loss of the output layer in one piece: logits = h Wᵀ (+ b), then label-smoothed
cross-entropy (section 5.4), computed a block of rows at a time so the (tokens × vocabulary) logits
never exist whole (model/nn/transformer.py's fast path; its plain formula is `loss(project(h), labels)`).

The math is torch's `F.cross_entropy(h @ W.T + b, y, label_smoothing=eps, ignore_index=pad)`:
for one row with logits z, target y and V classes,

    loss = (1 − eps) · (lse(z) − z_y) + eps · (lse(z) − mean(z)),   lse = log Σ exp z,

averaged over the rows whose target is not `ignore_index`, and its gradient with respect to z is
softmax(z) − q, where q = (1 − eps)·onehot(y) + eps/V is the smoothed target (divided by the number
of counted rows). Because the loss is a scalar, that gradient is known in the forward pass already:
each block's logits are turned into their gradient in place and multiplied out into the gradients
of h and W at once (the same three matrix products as the usual forward and backward), and the
backward pass only scales them by the incoming gradient.

Why: with an 8,000-token vocabulary the logits of one *small* training batch are 2,048 × 8,000 floats
(64 MB), written by the projection, read and written again by log-softmax, read by the loss, and
the same again backwards; a block of ~256 rows stays in the processor's cache. The matrix products
are unchanged (same FLOPs; checked by tests/model/test_output_loss.py with torch's FLOP counter).
On a GPU the blocks cost more than they save (a Python loop of small kernels and a host synchronisation
per block, where one fused kernel reads the whole logits at the card's bandwidth): there the plain loss runs."""
from __future__ import annotations

import math

import torch

BLOCK_ELEMENTS = 1 << 21  # logits per block (8 MiB in float32): the size that measured fastest on the CPU


def rows_per_block(vocab: int) -> int:
    return max(16, BLOCK_ELEMENTS // max(vocab, 1))


class _ProjectedCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h, weight, bias, target, eps: float, ignore_index: int, block: int, grads: bool):
        want_h, want_w, want_b = (grads and need for need in ctx.needs_input_grad[:3])
        V = weight.size(0)
        counted = target != ignore_index
        n = int(counted.sum())
        scale = 1.0 / max(n, 1)  # no counted row: the loss is 0 and so is every gradient
        dh = torch.empty_like(h) if want_h else None
        dw = torch.zeros_like(weight) if want_w else None
        db = torch.zeros_like(bias) if (bias is not None and want_b) else None
        total = h.new_zeros((), dtype=torch.float64)
        # mean(z) of a row is h · mean(W) + mean(b): a matrix-vector product instead of a pass over the logits
        w_mean = weight.mean(0)
        b_mean = 0.0 if bias is None else bias.mean()
        # |z| ≤ ‖h‖·‖W_j‖ + |b_j| (Cauchy–Schwarz). While that bound keeps exp(z), a row's sum of them and the
        # gradient's weight / sum well inside the float range (|z| + log V under half the largest exponent: 44
        # in float32), the logits are exponentiated as they are; beyond it they are first shifted by the row
        # maximum (the usual guard: a pass and a subtraction more per block). The same values either way.
        w_norm = weight.norm(dim=1).max() + (0.0 if bias is None else bias.abs().max())
        h_norm = h.norm(dim=1)  # each row's ‖h‖, once
        safe = math.log(torch.finfo(h.dtype).max) / 2 - math.log(V)
        for s in range(0, h.size(0), block):
            hb, yb, kb = h[s:s + block], target[s:s + block], counted[s:s + block]
            z = hb @ weight.t() if bias is None else torch.addmm(bias, hb, weight.t())  # (rows, V)
            yc = yb.clamp(0, V - 1)[:, None]  # an ignored row's target may be out of range
            picked, mean = z.gather(1, yc).squeeze(1), torch.mv(hb, w_mean) + b_mean
            if float(h_norm[s:s + block].max() * w_norm) < safe:
                top = None
                e = z.exp_()  # exp(z), in place of the logits: log-sum-exp and softmax from one pass
            else:
                top = z.amax(1, keepdim=True)
                e = z.sub_(top).exp_()  # exp(z - max z), the same in place
            sums = e.sum(1)
            row = sums.log() - (1.0 - eps) * picked - eps * mean
            if top is not None:
                row += top.squeeze(1)
            keep = kb.to(z.dtype)
            total += (row * keep).sum(dtype=torch.float64)
            if not (want_h or want_w or want_b):
                continue
            w = keep * scale  # each row's weight in the mean; 0 for an ignored row
            # d loss / d z = w (softmax - eps / V), and -(1 - eps) w more at the target: one pass over the block
            g = torch.addcmul((-(eps / V) * w)[:, None], e, (w / sums)[:, None], out=e)
            g.scatter_add_(1, yc, (-(1.0 - eps) * w)[:, None])
            if want_h:
                torch.mm(g, weight, out=dh[s:s + block])
            if want_w:
                torch.addmm(dw, g.t(), hb, out=dw)  # in place (addmm_ is the same, but FLOP counters miss it)
            if db is not None:
                db += g.sum(0)
        ctx.save_for_backward(dh, dw, db)
        return (total * scale).to(h.dtype)

    @staticmethod
    def backward(ctx, grad):
        dh, dw, db = ctx.saved_tensors
        scaled = lambda t: None if t is None else t * grad
        return scaled(dh), scaled(dw), scaled(db), None, None, None, None, None


def projected_cross_entropy(h: torch.Tensor, weight: torch.Tensor, target: torch.Tensor, *,
                            bias: torch.Tensor | None = None, label_smoothing: float = 0.0,
                            ignore_index: int = -100, block: int | None = None) -> torch.Tensor:
    """Mean label-smoothed cross-entropy of the logits h @ weight.T (+ bias) against target.

    h: (..., D) hidden states; weight: (V, D), the output projection (the tied embedding);
    target: (...) class ids. Rows whose target is `ignore_index` count for nothing; when every row is
    ignored the loss is 0 (torch's cross-entropy gives NaN there). Not twice differentiable (the blocks).
    block: rows per block (default: rows_per_block(V))."""
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError("label_smoothing must be in [0, 1]")
    if torch.is_autocast_enabled(h.device.type):  # the loss in float32, as torch's autocast does for cross-entropy
        with torch.autocast(h.device.type, enabled=False):
            return projected_cross_entropy(h.float(), weight.float(), target,
                                           bias=None if bias is None else bias.float(),
                                           label_smoothing=label_smoothing, ignore_index=ignore_index, block=block)
    D, V = h.size(-1), weight.size(0)
    flat_h, flat_t = h.reshape(-1, D), target.reshape(-1)
    if flat_h.size(0) != flat_t.size(0):
        raise ValueError(f"{flat_h.size(0)} rows of hidden states but {flat_t.size(0)} targets")
    bad = (flat_t != ignore_index) & ((flat_t < 0) | (flat_t >= V))
    if bool(bad.any()):
        raise IndexError(f"target out of range for {V} classes")
    return _ProjectedCrossEntropy.apply(flat_h, weight, bias, flat_t, float(label_smoothing), int(ignore_index),
                                        block or rows_per_block(V), torch.is_grad_enabled())

