"""DETR's set prediction (Carion et al., 2020), apart from the network (model/family/detr.py): boxes and their
(generalised) IoU, the Hungarian matching of the N predictions to the objects, the set loss computed after it,
and the one-to-one matching of kept predictions to objects that the scores count."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F


# ----------------------------------------------------------------------------- boxes

def _as_tensor(x) -> tuple[torch.Tensor, bool]:
    if isinstance(x, torch.Tensor):
        return x.float(), False
    return torch.as_tensor(np.asarray(x, dtype=np.float32)), True


def cxcywh_to_xyxy(b: torch.Tensor) -> torch.Tensor:
    cx, cy, w, h = b.unbind(-1)
    return torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], dim=-1)


def _iou_union(a: torch.Tensor, b: torch.Tensor):
    a, b = cxcywh_to_xyxy(a), cxcywh_to_xyxy(b)
    area_a = (a[:, 2] - a[:, 0]).clamp(min=0) * (a[:, 3] - a[:, 1]).clamp(min=0)
    area_b = (b[:, 2] - b[:, 0]).clamp(min=0) * (b[:, 3] - b[:, 1]).clamp(min=0)
    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    union = area_a[:, None] + area_b[None, :] - inter
    return inter / union.clamp(min=1e-9), union, a, b


def box_iou(a, b):
    """Pairwise IoU of boxes (cx, cy, w, h): a (N, 4), b (M, 4) -> (N, M). numpy in, numpy out."""
    ta, was_np = _as_tensor(a)
    tb, _ = _as_tensor(b)
    iou = _iou_union(ta.reshape(-1, 4), tb.reshape(-1, 4))[0]
    return iou.numpy() if was_np else iou


def generalized_box_iou(a, b):
    """Pairwise generalised IoU (Rezatofighi et al. 2019) of boxes (cx, cy, w, h): IoU minus the share of
    the smallest enclosing box that the union leaves empty. In [-1, 1], never above the IoU."""
    ta, was_np = _as_tensor(a)
    tb, _ = _as_tensor(b)
    iou, union, xa, xb = _iou_union(ta.reshape(-1, 4), tb.reshape(-1, 4))
    lt = torch.min(xa[:, None, :2], xb[None, :, :2])
    rb = torch.max(xa[:, None, 2:], xb[None, :, 2:])
    enclosing = (rb - lt).clamp(min=0).prod(-1)
    giou = iou - (enclosing - union) / enclosing.clamp(min=1e-9)
    return giou.numpy() if was_np else giou


# ----------------------------------------------------------------------------- matching

def match_cost(logits: torch.Tensor, boxes: torch.Tensor, classes: torch.Tensor, tgt_boxes: torch.Tensor,
               class_weight: float = 1.0, l1_weight: float = 5.0, giou_weight: float = 2.0) -> torch.Tensor:
    """(N, n) cost of giving query i object j: -p_i(class_j) weighted, plus L1 and -GIoU of the boxes."""
    prob = logits.float().softmax(-1)
    cost_class = -prob[:, classes.long()]
    cost_l1 = torch.cdist(boxes.float(), tgt_boxes.float(), p=1)
    cost_giou = -generalized_box_iou(boxes.float(), tgt_boxes.float())
    return class_weight * cost_class + l1_weight * cost_l1 + giou_weight * cost_giou


def hungarian_match(logits, boxes, classes, tgt_boxes, class_weight: float = 1.0, l1_weight: float = 5.0,
                    giou_weight: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    """One image: the one-to-one assignment of queries to objects with the least total cost
    (scipy's linear_sum_assignment). Returns (query indices, object indices), sorted by query; with more
    queries than objects every object gets exactly one query and the rest get none."""
    from scipy.optimize import linear_sum_assignment

    logits, boxes = _as_tensor(logits)[0], _as_tensor(boxes)[0]
    classes = torch.as_tensor(np.asarray(classes) if not isinstance(classes, torch.Tensor) else classes)
    tgt_boxes = _as_tensor(tgt_boxes)[0].reshape(-1, 4)
    if tgt_boxes.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    with torch.no_grad():
        cost = match_cost(logits, boxes, classes, tgt_boxes, class_weight, l1_weight, giou_weight)
    rows, cols = linear_sum_assignment(cost.cpu().numpy())
    order = np.argsort(rows)
    return rows[order].astype(np.int64), cols[order].astype(np.int64)


def match_batch(logits: torch.Tensor, boxes: torch.Tensor, classes: list, tgt_boxes: list, cfg):
    """Hungarian matching for each image of a batch (one cost computation for the whole batch); cfg: the model's
    DetrConfig (its class_weight, l1_weight and giou_weight)."""
    from scipy.optimize import linear_sum_assignment

    B, N, _ = logits.shape
    sizes = [len(c) for c in classes]
    with torch.no_grad():
        cost = match_cost(logits.reshape(B * N, -1), boxes.reshape(B * N, 4), torch.cat(classes),
                          torch.cat(tgt_boxes), cfg.class_weight, cfg.l1_weight, cfg.giou_weight)
        cost = cost.view(B, N, -1).cpu().numpy()
    out, start = [], 0
    for b, n in enumerate(sizes):
        rows, cols = linear_sum_assignment(cost[b, :, start:start + n])
        out.append((torch.as_tensor(rows, dtype=torch.long), torch.as_tensor(cols, dtype=torch.long)))
        start += n
    return out


# ----------------------------------------------------------------------------- the loss

def set_loss(logits, boxes, classes: list, tgt_boxes: list, cfg):
    """DETR's loss for one decoder output: match, then weighted cross-entropy over all queries (the
    unmatched ones should say "no object", weighted eos_coef) + L1 + (1 - GIoU) on the matched boxes.
    cfg: the model's DetrConfig (its class_weight, l1_weight, giou_weight and eos_coef). Returns (loss,
    {"ce", "l1", "giou"})."""
    B, N, C1 = logits.shape
    idx = match_batch(logits, boxes, classes, tgt_boxes, cfg)
    target = torch.full((B, N), C1 - 1, dtype=torch.long, device=logits.device)
    batch_i = torch.cat([torch.full_like(q, b) for b, (q, _) in enumerate(idx)]).to(logits.device)
    query_i = torch.cat([q for q, _ in idx]).to(logits.device)
    target[batch_i, query_i] = torch.cat([classes[b][t.to(classes[b].device)] for b, (_, t) in enumerate(idx)])
    weight = torch.ones(C1, device=logits.device)
    weight[-1] = cfg.eos_coef
    ce = F.cross_entropy(logits.reshape(B * N, C1), target.reshape(-1), weight=weight)
    pred = boxes[batch_i, query_i]
    tgt = torch.cat([tgt_boxes[b][t.to(tgt_boxes[b].device)] for b, (_, t) in enumerate(idx)])
    n_boxes = max(tgt.shape[0], 1)
    l1 = (pred - tgt).abs().sum() / n_boxes
    giou = (1 - torch.diag(generalized_box_iou(pred, tgt))).sum() / n_boxes
    loss = cfg.class_weight * ce + cfg.l1_weight * l1 + cfg.giou_weight * giou
    return loss, {"ce": ce.detach(), "l1": l1.detach(), "giou": giou.detach()}


# ----------------------------------------------------------------------------- predictions for the scores

def predictions(logits: torch.Tensor, boxes: torch.Tensor, threshold: float | None = None):
    """Per query: (object class, its probability, keep). Without a threshold a query is kept when its
    most likely class is an object (not "no object")."""
    probs = logits.float().softmax(-1)
    score, cls = probs[..., :-1].max(-1)
    keep = probs.argmax(-1) < probs.shape[-1] - 1 if threshold is None else score >= threshold
    return cls, score, keep


def match_found(pred_cls, pred_boxes, gt_cls, gt_boxes) -> tuple[np.ndarray, np.ndarray]:
    """One-to-one assignment of kept predictions to ground-truth objects that maximises the IoU among
    predictions of the right class. Returns (per object: index of its prediction or -1, its IoU)."""
    from scipy.optimize import linear_sum_assignment

    n = len(gt_cls)
    which, ious = np.full(n, -1, np.int64), np.zeros(n, np.float32)
    if n == 0 or len(pred_cls) == 0:
        return which, ious
    iou = box_iou(np.asarray(pred_boxes, np.float32).reshape(-1, 4), np.asarray(gt_boxes, np.float32).reshape(-1, 4))
    same = np.asarray(pred_cls)[:, None] == np.asarray(gt_cls)[None, :]
    value = np.where(same, iou, 0.0)
    rows, cols = linear_sum_assignment(-value)
    for r, c in zip(rows, cols):
        if value[r, c] > 0:
            which[c], ious[c] = r, value[r, c]
    return which, ious
