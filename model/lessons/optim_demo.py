"""Adam as the paper sets it up (section 5.3), on a toy loss: torch.optim.Adam's own state
printed step by step and recomputed by hand from the formulas."""
from __future__ import annotations

import torch

from model.training.schedule import ADAM_BETAS, ADAM_EPS


def adam_trace(theta0: float, scale: float, lr: float, steps: int, betas=ADAM_BETAS, eps: float = ADAM_EPS) -> dict:
    """Minimise f(theta) = scale * theta^2 / 2 with torch.optim.Adam for `steps` steps.

    Returns {"rows": one dict per step {"step", "theta" (before), "grad", "m", "v" (torch's state),
    "m_hat", "v_hat" (bias-corrected, by hand), "update", "new_theta"}, "first_update": the first
    step's change, "worst_gap": the largest difference between torch and the formulas by hand
    (m, v and the new theta)}."""
    b1, b2 = betas
    param = torch.nn.Parameter(torch.tensor([float(theta0)], dtype=torch.float64))
    opt = torch.optim.Adam([param], lr=lr, betas=betas, eps=eps)
    m = v = 0.0
    rows, worst = [], 0.0
    for step in range(1, steps + 1):
        opt.zero_grad()
        loss = 0.5 * scale * (param ** 2).sum()
        loss.backward()
        g = float(param.grad)
        before = float(param.detach())
        opt.step()
        state = opt.state[param]
        after, torch_m, torch_v = float(param.detach()), float(state["exp_avg"]), float(state["exp_avg_sq"])
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g  # by hand
        m_hat, v_hat = m / (1 - b1 ** step), v / (1 - b2 ** step)
        by_hand = before - lr * m_hat / (v_hat ** 0.5 + eps)
        worst = max(worst, abs(by_hand - after), abs(m - torch_m), abs(v - torch_v))
        rows.append({"step": step, "theta": before, "grad": g, "m": torch_m, "v": torch_v, "m_hat": m_hat,
                     "v_hat": v_hat, "update": after - before, "new_theta": after})
    return {"rows": rows, "first_update": rows[0]["update"] if rows else 0.0, "worst_gap": worst}
