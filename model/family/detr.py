"""DETR (Carion et al., 2020, "End-to-End Object Detection with Transformers") on synthetic shapes.

What changes from the paper's Transformer:
- the encoder reads image features (a small CNN turns a 32×32 picture into an 8×8 grid of tokens, plus
  2-D sinusoidal positions) instead of words;
- the decoder gets N learned *object queries* instead of the previous words, runs self-attention among
  them WITHOUT a causal mask (every query is decoded at once), then cross-attention to the image tokens;
- each query's output goes to two heads: a class (3 shapes + "no object") and a box (cx, cy, w, h);
- the N predictions are a *set*: the Hungarian algorithm matches them one-to-one to the objects before
  the loss is computed (class + L1 + generalised IoU), and unmatched queries must say "no object".

The encoder is model.nn.layers.EncoderLayer and the decoder layers are built from the same
model.nn.attention.MultiHeadAttention, FeedForward and Residual as the translation model. Boxes, the matching
and the set loss are model/family/detr_matching.py."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn

from model.nn.attention import MultiHeadAttention
from model.nn.config import TransformerConfig, from_known_dict
from model.nn.dropout import Dropout
from model.nn.layers import EncoderLayer, FeedForward, Residual, positional_encoding
from model.family import FamilyTask
from model.family.detr_matching import match_found, predictions, set_loss
from model.family.shapes import CLASSES, IMAGE_SIZE, Scene, make_batch, make_scene

VAL_IMAGES = 256
TEST_IMAGES = 1000
MAX_RANKS = 64           # train picture index = (step * MAX_RANKS + rank) * batch_size + j
IOU_HIT = 0.5            # a ground-truth object is found by a prediction of its class with IoU >= this
STEMS = ("cnn", "patch")
BASE_LR = 1e-3           # peak AdamW learning rate (times --lr-factor)


# ----------------------------------------------------------------------------- configuration

@dataclass(frozen=True)
class DetrConfig:
    image_size: int = IMAGE_SIZE
    patch_size: int = 4          # the image becomes an (image_size / patch_size)^2 grid of tokens
    stem: str = "cnn"            # "cnn": a few 3×3 convolutions; "patch": a linear patch embedding (ViT)
    stem_channels: int = 32
    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 256
    n_encoder_layers: int = 2
    n_decoder_layers: int = 3   # the queries' self-attention needs depth to stop reporting an object twice
    n_queries: int = 8
    n_classes: int = len(CLASSES)
    dropout: float = 0.0
    norm_first: bool = False     # False = post-LN, as in the paper and DETR
    aux_loss: bool = True        # the set loss after every decoder layer, not only the last
    class_weight: float = 1.0    # weights of the matching cost and of the loss (DETR: 1, 5, 2)
    l1_weight: float = 5.0
    giou_weight: float = 2.0
    eos_coef: float = 0.3        # weight of the "no object" class in the cross-entropy (DETR: 0.1; 0.3 and
                                 # a third decoder layer cut duplicate boxes several-fold on this small budget)

    def __post_init__(self) -> None:
        if self.stem not in STEMS:
            raise ValueError(f"stem must be one of {STEMS}, got {self.stem!r}")
        for name in ("image_size", "patch_size", "stem_channels", "d_model", "n_heads", "d_ff", "n_queries",
                     "n_classes", "n_encoder_layers", "n_decoder_layers"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) <= 0:
                raise ValueError(f"{name} must be a positive integer")
        if self.image_size % self.patch_size:
            raise ValueError(f"image_size ({self.image_size}) must be a multiple of patch_size ({self.patch_size})")
        if self.stem == "cnn" and self.patch_size & (self.patch_size - 1):
            raise ValueError("the cnn stem halves the picture: patch_size must be a power of 2")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError("dropout must be in [0, 1)")
        if min(self.class_weight, self.l1_weight, self.giou_weight) < 0 or not 0 < self.eos_coef <= 1:
            raise ValueError("loss weights must be >= 0 and eos_coef in (0, 1]")

    @property
    def grid(self) -> int:
        return self.image_size // self.patch_size

    @property
    def n_tokens(self) -> int:
        return self.grid * self.grid

    def transformer(self) -> TransformerConfig:
        """The stack sizes as a TransformerConfig, so the same EncoderLayer code runs."""
        return TransformerConfig(vocab_size=1, d_model=self.d_model, n_heads=self.n_heads, d_ff=self.d_ff,
                                 n_encoder_layers=self.n_encoder_layers, n_decoder_layers=self.n_decoder_layers,
                                 dropout=self.dropout, max_len=self.n_tokens, norm_first=self.norm_first,
                                 label_smoothing=0.0)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "DetrConfig":
        return from_known_dict(cls, d)


# ----------------------------------------------------------------------------- the model

def grid_positions(grid: int, d_model: int) -> torch.Tensor:
    """(grid*grid, d_model) 2-D sinusoidal positions: the paper's 1-D encoding of the row in the first
    half of the dimensions and of the column in the second half (as DETR does)."""
    half = d_model // 2
    rows = positional_encoding(grid, half, device="cpu")  # (g, half)
    cols = positional_encoding(grid, d_model - half, device="cpu")  # (g, D - half)
    return torch.cat([rows[:, None, :].expand(grid, grid, half),
                      cols[None, :, :].expand(grid, grid, d_model - half)], dim=-1).reshape(grid * grid, d_model)


class Stem(nn.Module):
    """Picture (B, 3, H, W) -> tokens (B, T, D) on a (H/p) × (W/p) grid."""

    def __init__(self, cfg: DetrConfig):
        super().__init__()
        c, p, d = cfg.stem_channels, cfg.patch_size, cfg.d_model
        if cfg.stem == "patch":
            self.net = nn.Conv2d(3, d, kernel_size=p, stride=p)
        else:  # log2(p) stride-2 3×3 convolutions (channels c, 2c, ...), then a 1×1 one to d_model
            layers: list[nn.Module] = []
            ch_in, ch = 3, c
            for _ in range(int(math.log2(p))):
                layers += [nn.Conv2d(ch_in, ch, 3, stride=2, padding=1), nn.ReLU()]
                ch_in, ch = ch, 2 * ch
            layers += [nn.Conv2d(ch_in, d, 1)]
            self.net = nn.Sequential(*layers)
        self.norm = nn.LayerNorm(d)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.net(images)  # (B, D, g, g)
        return self.norm(x.flatten(2).transpose(1, 2))  # (B, T, D)


class QueryDecoderLayer(nn.Module):
    """DETR's decoder layer from the paper's parts: self-attention among the object queries with NO mask
    (all queries are decoded at once), cross-attention to the image tokens, the feed-forward network;
    each wrapped in Residual (add & norm). The learned query positions are added to the queries' input of
    both attentions, the grid positions to the image tokens (as DETR does)."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, self_attention=True)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, self_attention=False)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, cfg.activation)
        self.res1 = Residual(cfg.d_model, cfg.dropout, cfg.norm_first, cfg.norm_eps)
        self.res2 = Residual(cfg.d_model, cfg.dropout, cfg.norm_first, cfg.norm_eps)
        self.res3 = Residual(cfg.d_model, cfg.dropout, cfg.norm_first, cfg.norm_eps)

    def forward(self, x, query_pos, memory, need_weights=False):
        y, w_self, _ = self.self_attn(self.res1.pre(x) + query_pos, need_weights=need_weights)  # no mask
        x = self.res1.post(x, y)
        y, w_cross, _ = self.cross_attn(self.res2.pre(x) + query_pos, memory, need_weights=need_weights)
        x = self.res2.post(x, y)
        x = self.res3.post(x, self.ffn(self.res3.pre(x)))
        return x, w_self, w_cross


@dataclass
class DetrOutput:
    logits: torch.Tensor                      # (B, N, C + 1): the last class is "no object"
    boxes: torch.Tensor                       # (B, N, 4): cx, cy, w, h in [0, 1]
    aux: list = field(default_factory=list)   # [(logits, boxes)] after each earlier decoder layer
    encoder_attention: list | None = None     # per encoder layer (B, H, T, T)
    decoder_self_attention: list | None = None  # per decoder layer (B, H, N, N)
    cross_attention: list | None = None       # per decoder layer (B, H, N, T)


class DETR(nn.Module):
    def __init__(self, config: DetrConfig):
        super().__init__()
        self.config = config
        tcfg = config.transformer()
        d = config.d_model
        self.stem = Stem(config)
        self.register_buffer("pos", grid_positions(config.grid, d), persistent=False)
        self.encoder = nn.ModuleList([EncoderLayer(tcfg) for _ in range(config.n_encoder_layers)])
        self.encoder_norm = nn.LayerNorm(d) if config.norm_first else nn.Identity()
        self.query_pos = nn.Embedding(config.n_queries, d)
        self.decoder = nn.ModuleList([QueryDecoderLayer(tcfg) for _ in range(config.n_decoder_layers)])
        self.decoder_norm = nn.LayerNorm(d)
        self.class_head = nn.Linear(d, config.n_classes + 1)
        self.box_head = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 4))
        self.drop = Dropout(config.dropout)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def heads(self, h: torch.Tensor):
        h = self.decoder_norm(h)
        return self.class_head(h), self.box_head(h).sigmoid()

    def forward(self, images: torch.Tensor, return_attention: bool = False) -> DetrOutput:
        B = images.shape[0]
        x = self.drop(self.stem(images) + self.pos)  # (B, T, D)
        enc_w = []
        for layer in self.encoder:
            x, w, _ = layer(x, need_weights=return_attention)
            enc_w.append(w)
        memory = self.encoder_norm(x) + self.pos  # the keys and values of cross-attention know where they are
        qpos = self.query_pos.weight[None].expand(B, -1, -1)  # (B, N, D)
        h = torch.zeros_like(qpos)
        self_w, cross_w, levels = [], [], []
        for layer in self.decoder:
            h, ws, wc = layer(h, qpos, memory, need_weights=return_attention)
            self_w.append(ws)
            cross_w.append(wc)
            levels.append(h)
        outs = [self.heads(lv) for lv in (levels if self.config.aux_loss and self.training else levels[-1:])]
        logits, boxes = outs[-1]
        return DetrOutput(logits, boxes, outs[:-1],
                          enc_w if return_attention else None,
                          self_w if return_attention else None,
                          cross_w if return_attention else None)


# ----------------------------------------------------------------------------- the loss

def detr_loss(model: DETR, out: DetrOutput, classes: list, tgt_boxes: list) -> torch.Tensor:
    cfg = model.config
    loss, _ = set_loss(out.logits, out.boxes, classes, tgt_boxes, cfg)
    for lg, bx in out.aux:
        loss = loss + set_loss(lg, bx, classes, tgt_boxes, cfg)[0]
    return loss


# ----------------------------------------------------------------------------- scores

def score_scenes(model: DETR, split: str, n: int, seed: int, device, batch_size: int = 128) -> dict:
    """found: share of objects with a kept prediction of their class at IoU >= 0.5 (one-to-one);
    mean_iou: their mean IoU (0 for objects not matched at all); precision: share of kept predictions
    that found an object; perfect: share of images with every object found and nothing extra."""
    model.eval()
    total = hits = kept = perfect = 0
    iou_sum = 0.0
    with torch.no_grad():
        for start in range(0, n, batch_size):
            idx = range(start, min(n, start + batch_size))
            images, classes, boxes = make_batch(seed, split, idx, model.config.image_size)
            out = model(torch.from_numpy(images).to(device))
            cls, _, keep = predictions(out.logits, out.boxes)
            cls, keep, pb = cls.cpu().numpy(), keep.cpu().numpy(), out.boxes.float().cpu().numpy()
            for b in range(len(idx)):
                which, ious = match_found(cls[b][keep[b]], pb[b][keep[b]], classes[b], boxes[b])
                found = int(((which >= 0) & (ious >= IOU_HIT)).sum())
                total += len(classes[b])
                hits += found
                kept += int(keep[b].sum())
                iou_sum += float(ious.sum())
                perfect += int(found == len(classes[b]) == int(keep[b].sum()))
    return {"found": hits / max(total, 1), "mean_iou": iou_sum / max(total, 1),
            "precision": hits / max(kept, 1), "perfect": perfect / max(n, 1), "objects": total, "images": n}


# ----------------------------------------------------------------------------- the task

def _lr_lambda(warmup: int, total: int, floor: float = 0.1):
    """Linear warm-up to the peak, then a cosine down to `floor` × the peak at the last step."""
    def f(s: int) -> float:
        if s < warmup:
            return (s + 1) / warmup
        progress = min(1.0, (s - warmup) / max(1, total - warmup))
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))
    return f


class DetrShapesTask(FamilyTask):
    """Detect rectangles, circles and triangles in 32×32 pictures. Training pictures are drawn fresh for
    every step from (seed, step, rank); validation (256) and test (1000) pictures are fixed."""

    name = "detr-shapes"
    config_class = DetrConfig
    standard_metrics = {"val_token_acc": "found", "val_exact": "mean_iou"}  # the training page's curves

    def card_notes(self) -> list[str]:
        return ["Optimiser: AdamW (as DETR) at 1e-3 x --lr-factor, linear warm-up over --warmup steps, then a cosine "
                "decay to a tenth; the paper's inverse-square-root decay slows down too early for the set matching "
                "to settle on a small budget.",
                f"'No object' class weight {DetrConfig().eos_coef} (DETR: 0.1) and 3 decoder layers: at 0.1 with 2 "
                "layers, recall was 0.96 but precision 0.64 (duplicate boxes).",
                "Auxiliary losses after every decoder layer, as in DETR."]
    throughput_unit = "tokens"  # image tokens (grid cells) per second

    def default_config(self, args) -> DetrConfig:
        pick = lambda name, default: default if getattr(args, name, None) is None else getattr(args, name)  # noqa: E731
        layers = getattr(args, "layers", None)
        return DetrConfig(d_model=pick("d_model", 64), n_heads=pick("heads", 4), d_ff=pick("d_ff", 256),
                          n_encoder_layers=layers or 2, n_decoder_layers=layers or 3,
                          dropout=pick("dropout", 0.0))

    def build(self, config: DetrConfig) -> DETR:
        return DETR(config)

    def optimizer(self, model, args):
        """Not the paper's schedule: AdamW (as DETR) at 1e-3 × --lr-factor, linear warm-up over --warmup
        steps, then a cosine down to a tenth at --steps. The inverse-square-root decay of the paper
        slows down too early for DETR's slow set matching to settle on a small budget."""
        decay = [p for n, p in model.named_parameters() if p.dim() > 1 and "query_pos" not in n]
        rest = [p for n, p in model.named_parameters() if not (p.dim() > 1 and "query_pos" not in n)]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 1e-4}, {"params": rest, "weight_decay": 0.0}],
                                lr=BASE_LR * float(getattr(args, "lr_factor", 1.0) or 1.0))
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, _lr_lambda(max(1, int(getattr(args, "warmup", 400))), int(getattr(args, "steps", 10_000))))
        return opt, sched

    def batch(self, step: int, seed: int, rank: int, batch_size: int, device):
        start = (step * MAX_RANKS + rank) * batch_size
        images, classes, boxes = make_batch(seed, "train", range(start, start + batch_size))
        dev = torch.device(device) if device is not None else torch.device("cpu")
        return (torch.from_numpy(images).to(dev), [torch.from_numpy(c).to(dev) for c in classes],
                [torch.from_numpy(b).to(dev) for b in boxes])

    def loss(self, model, batch):
        images, classes, boxes = batch
        raw = model.module if hasattr(model, "module") else model
        out = model(images)
        return detr_loss(raw, out, classes, boxes), images.shape[0] * raw.config.n_tokens

    def evaluate(self, model, device) -> dict:
        s = score_scenes(model, "val", VAL_IMAGES, self.seed, device)
        return {"found": s["found"], "mean_iou": s["mean_iou"], "precision": s["precision"]}

    def score_test(self, model, device) -> dict:
        return score_scenes(model, "test", TEST_IMAGES, self.seed, device)


# ----------------------------------------------------------------------------- for the page

@dataclass
class Detection:
    image: np.ndarray           # (H, W, 3) uint8, the picture
    probs: np.ndarray           # (N, C + 1) per-query class probabilities (last: "no object")
    classes: np.ndarray         # (N,) each query's most likely object class
    scores: np.ndarray          # (N,) its probability
    boxes: np.ndarray           # (N, 4) cx, cy, w, h in [0, 1]
    keep: np.ndarray            # (N,) bool: score >= threshold
    cross: np.ndarray           # (L, H, N, g, g) cross-attention of each query over the token grid
    self_attention: np.ndarray  # (L, H, N, N) decoder self-attention among the queries
    threshold: float
    gt_classes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    gt_boxes: np.ndarray = field(default_factory=lambda: np.zeros((0, 4), np.float32))
    match_query: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # per object: its query or -1
    match_iou: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))  # per object: that IoU

    def cross_map(self, layer: int = -1, head: int = -1) -> np.ndarray:
        """(N, g, g): every query's cross-attention over the token grid in one layer, one head or the
        mean over heads (head = -1)."""
        c = self.cross[layer]
        return c.mean(axis=0) if head < 0 else c[head]

    def self_map(self, layer: int = -1, head: int = -1) -> np.ndarray:
        """(N, N): the decoder's self-attention among the queries (head = -1: mean over heads)."""
        s = self.self_attention[layer]
        return s.mean(axis=0) if head < 0 else s[head]

    @property
    def found(self) -> np.ndarray:
        """Per ground-truth object: found by a kept prediction of its class with IoU >= 0.5."""
        return (self.match_query >= 0) & (self.match_iou >= IOU_HIT)


def generate(seed: int, size: int = IMAGE_SIZE) -> Scene:
    """A fresh picture for the page (the "demo" split, never used in training or scoring):
    Scene(image (H, W, 3) uint8, classes, boxes, masks)."""
    return make_scene(0, "demo", int(seed), size)


def detect(model: DETR, image: np.ndarray, threshold: float = 0.5, targets: tuple | None = None) -> Detection:
    """Run the model on one uint8 picture (H, W, 3). Queries whose object-class probability is at least
    `threshold` are kept. With targets (classes, boxes) each object is matched one-to-one to a kept
    prediction of its class (largest IoU)."""
    cfg = model.config
    img = np.asarray(image)
    if img.shape != (cfg.image_size, cfg.image_size, 3):
        raise ValueError(f"expected a {cfg.image_size}×{cfg.image_size} RGB picture, got shape {img.shape}")
    x = torch.from_numpy(img.astype(np.float32).transpose(2, 0, 1) / 255.0)[None]
    device = next(model.parameters()).device
    was = model.training
    model.eval()
    try:
        with torch.no_grad():
            out = model(x.to(device), return_attention=True)
    finally:
        model.train(was)
    probs = out.logits[0].float().softmax(-1).cpu().numpy()
    scores, classes = probs[:, :-1].max(-1), probs[:, :-1].argmax(-1)
    keep = scores >= threshold
    g = cfg.grid
    cross = torch.stack(out.cross_attention)[:, 0].float().cpu().numpy()  # (L, H, N, T)
    L, H, N, _ = cross.shape
    det = Detection(img, probs, classes, scores, out.boxes[0].float().cpu().numpy(), keep,
                    cross.reshape(L, H, N, g, g), torch.stack(out.decoder_self_attention)[:, 0].float().cpu().numpy(),
                    float(threshold))
    if targets is not None:
        gt_cls, gt_boxes = np.asarray(targets[0], np.int64), np.asarray(targets[1], np.float32).reshape(-1, 4)
        kept = np.nonzero(keep)[0]
        which, ious = match_found(classes[kept], det.boxes[kept], gt_cls, gt_boxes)
        det.gt_classes, det.gt_boxes = gt_cls, gt_boxes
        det.match_query = np.where(which >= 0, kept[np.maximum(which, 0)] if len(kept) else -1, -1)
        det.match_iou = ious
    return det
