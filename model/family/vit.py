"""ViT (Dosovitskiy et al., 2021, "An Image is Worth 16x16 Words") on the 8×8 handwritten digits.

What changed from the paper's Transformer: only the encoder, with no mask (every patch attends to every
patch); the "words" are square patches of the image, each flattened and projected linearly to d_model; a
learned [CLS] token is put in front, and its final state (after a last LayerNorm) is classified by one linear
layer; positions are a learned table (one vector per patch and one for [CLS]) instead of sinusoids. The
layers themselves are the paper's: model.nn.layers.EncoderLayer built from a TransformerConfig, so the very
same MultiHeadAttention code runs here as in translation (pre-LN and GELU, as in ViT).

The original ViT cuts a 224×224 image into 16×16 patches: 14×14 = 196 patches + [CLS] = 197 tokens. Here an
8×8 digit cut into 2×2 patches gives 4×4 = 16 patches + [CLS] = 17 tokens."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from model.nn.config import ACTIVATIONS, TransformerConfig, from_known_dict
from model.nn.dropout import Dropout
from model.nn.layers import EncoderLayer
from model.family import FamilyTask
from model.family.digits import MAX_VALUE, N_CLASSES, SIZE, split, train_batch
from model.family.digits import image_from_text, image_to_text  # noqa: F401  (the page's typed grid, re-exported)

ROLLOUT_RESIDUAL = 0.5  # Abnar & Zuidema (2020): Ã = 0.5·A + 0.5·I for the residual connection


@dataclass(frozen=True)
class ViTConfig:
    image_size: int = SIZE      # pixels per side of the input image
    patch_size: int = 2         # pixels per side of a patch (after upsampling)
    upsample: int = 1           # each pixel repeated upsample×upsample times first (1 = none)
    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 128
    n_layers: int = 4
    dropout: float = 0.1
    n_classes: int = N_CLASSES
    norm_first: bool = True     # pre-LN, as in ViT (the paper's Transformer: post-LN)
    activation: str = "gelu"    # as in ViT (the paper's Transformer: relu)
    channels: int = 1           # colour channels of a pixel (1: grey digits; 3: an RGB photo, model.hub.vit)
    norm_eps: float = 1e-5      # LayerNorm epsilon (a Hugging Face ViT: 1e-12)

    def __post_init__(self) -> None:
        for name in ("image_size", "patch_size", "upsample", "d_model", "n_heads", "d_ff", "n_layers", "n_classes",
                     "channels"):
            value = getattr(self, name)
            least = 0 if name == "n_classes" else 1  # 0 classes: a ViT without a classification head
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
        if self.side % self.patch_size:
            raise ValueError(f"patch_size ({self.patch_size}) must divide the image side "
                             f"image_size × upsample = {self.side}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if not isinstance(self.dropout, (int, float)) or not 0.0 <= self.dropout < 1.0:
            raise ValueError("dropout must be in [0, 1)")
        if not isinstance(self.norm_first, bool):
            raise ValueError("norm_first must be true or false")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if not isinstance(self.norm_eps, (int, float)) or not 0.0 < self.norm_eps < 1.0:
            raise ValueError("norm_eps must be in (0, 1)")

    @property
    def side(self) -> int:
        """Pixels per side of the image the patches are cut from (after upsampling)."""
        return self.image_size * self.upsample

    @property
    def grid(self) -> int:
        """Patches per side."""
        return self.side // self.patch_size

    @property
    def n_patches(self) -> int:
        return self.grid ** 2

    @property
    def n_tokens(self) -> int:
        """Patches + the [CLS] token."""
        return self.n_patches + 1

    @property
    def patch_dim(self) -> int:
        """Numbers in one flattened patch: channels × patch_size² (grey digits: one channel)."""
        return self.channels * self.patch_size ** 2

    def encoder_config(self) -> TransformerConfig:
        """The stack's sizes as a TransformerConfig, so model.nn.layers.EncoderLayer builds the layers."""
        return TransformerConfig(
            vocab_size=max(self.n_classes, 1), d_model=self.d_model, n_heads=self.n_heads, d_ff=self.d_ff,
            n_encoder_layers=self.n_layers, n_decoder_layers=0, dropout=float(self.dropout), max_len=self.n_tokens,
            architecture="encoder-only", norm_first=self.norm_first, positional="learned", tie_embeddings=False,
            label_smoothing=0.0, activation=self.activation, embed_scale=False, norm_eps=float(self.norm_eps))

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "ViTConfig":
        return from_known_dict(cls, d)

    def replace(self, **changes) -> "ViTConfig":
        return dataclasses.replace(self, **changes)


@dataclass
class ViTOutput:
    logits: torch.Tensor | None                # (B, n_classes); None for a model without a head (n_classes 0)
    attention: list[torch.Tensor] | None = None  # per layer (B, H, T, T); token 0 is [CLS], then the patches


def image_patches(images: torch.Tensor, config: ViTConfig) -> torch.Tensor:
    """(B, image_size, image_size) pixels 0..16 -> (B, P, patch_size²) in 0..1, patches in reading order
    (row by row, left to right): patch k sits at grid row k // grid, column k % grid."""
    x = images.float() / MAX_VALUE
    if config.upsample > 1:
        x = x.repeat_interleave(config.upsample, dim=1).repeat_interleave(config.upsample, dim=2)
    B, g, p = x.size(0), config.grid, config.patch_size
    return x.reshape(B, g, p, g, p).permute(0, 1, 3, 2, 4).reshape(B, g * g, p * p)


class ViT(nn.Module):
    """Patch embedding + [CLS] + learned positions -> n_layers × EncoderLayer (no mask) -> LayerNorm ->
    linear head on the [CLS] state."""

    def __init__(self, config: ViTConfig):
        super().__init__()
        self.config = cfg = config
        enc = cfg.encoder_config()
        self.patch_embed = nn.Linear(cfg.patch_dim, cfg.d_model)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, cfg.d_model))
        self.position = nn.Parameter(torch.zeros(cfg.n_tokens, cfg.d_model))
        nn.init.trunc_normal_(self.cls_token, std=0.02)
        nn.init.trunc_normal_(self.position, std=0.02)
        self.drop = Dropout(cfg.dropout)
        self.layers = nn.ModuleList(EncoderLayer(enc) for _ in range(cfg.n_layers))
        self.norm = nn.LayerNorm(cfg.d_model, eps=enc.norm_eps)
        self.head = nn.Linear(cfg.d_model, cfg.n_classes) if cfg.n_classes else None

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def embed(self, images: torch.Tensor) -> torch.Tensor:
        """(B, 8, 8) pixels 0..16 -> (B, T, D): [CLS] then one vector per patch, positions added."""
        cfg = self.config
        if images.dim() != 3 or tuple(images.shape[1:]) != (cfg.image_size, cfg.image_size):
            raise ValueError(f"expected images (B, {cfg.image_size}, {cfg.image_size}), got {tuple(images.shape)}")
        patches = image_patches(images.to(self.position.device), cfg)  # (B, P, p²)
        x = self.patch_embed(patches)  # (B, P, D)
        cls = self.cls_token.expand(x.size(0), -1, -1)  # (B, 1, D)
        return self.drop(torch.cat([cls, x], dim=1) + self.position)  # (B, T, D)

    def forward(self, images: torch.Tensor, return_attention: bool = False) -> ViTOutput:
        x = self.embed(images)
        attention = [] if return_attention else None
        for layer in self.layers:
            x, w, _ = layer(x, mask=None, need_weights=return_attention)  # no mask: all patches see all patches
            if return_attention:
                attention.append(w)  # (B, H, T, T)
        cls = self.norm(x[:, 0])  # (B, D): the [CLS] token's final state
        return ViTOutput(self.head(cls) if self.head is not None else None, attention)


# ----------------------------------------------------------------------------- the task


def _as_tensor(images: np.ndarray, labels: np.ndarray, device) -> tuple[torch.Tensor, torch.Tensor]:
    return (torch.as_tensor(np.asarray(images, dtype=np.float32), device=device),
            torch.as_tensor(np.asarray(labels, dtype=np.int64), device=device))


@torch.no_grad()
def score_split(model: ViT, name: str, device="cpu", batch_size: int = 512) -> dict:
    """{"loss", "accuracy", "n"} of a model on one split (model in eval mode by the caller)."""
    images, labels = split(name)
    total_loss, correct = 0.0, 0
    for i in range(0, len(images), batch_size):
        x, y = _as_tensor(images[i:i + batch_size], labels[i:i + batch_size], device)
        logits = model(x).logits
        total_loss += F.cross_entropy(logits, y, reduction="sum").item()
        correct += int((logits.argmax(-1) == y).sum().item())
    n = len(images)
    return {"loss": total_loss / max(n, 1), "accuracy": correct / max(n, 1), "n": n}


class VitDigitsTask(FamilyTask):
    """Classify 8×8 digits with a small ViT. Batches: images of the train split, each shifted by up to one
    pixel (seeded by the batch's arguments); loss: cross-entropy of the 10 classes."""

    name = "vit-digits"
    config_class = ViTConfig
    throughput_unit = "images"
    standard_metrics = {"val_token_acc": "val_accuracy"}  # the training page's curve of digits right

    def default_config(self, args) -> ViTConfig:
        changes = {}
        for field, attr in (("d_model", "d_model"), ("n_heads", "heads"), ("d_ff", "d_ff"),
                            ("n_layers", "layers"), ("dropout", "dropout")):
            value = getattr(args, attr, None)
            if value is not None:
                changes[field] = value
        return ViTConfig(**changes)

    def build(self, config: ViTConfig) -> ViT:
        return ViT(config)

    def batch(self, step, seed, rank, batch_size, device):
        images, labels = train_batch(step, seed, rank, batch_size)
        return _as_tensor(images, labels, device)

    def loss(self, model, batch):
        images, labels = batch
        logits = model(images).logits
        return F.cross_entropy(logits, labels), int(labels.numel())

    def evaluate(self, model, device) -> dict:
        s = score_split(model, "valid", device)
        return {"val_loss": s["loss"], "val_accuracy": s["accuracy"]}

    def score_test(self, model, device) -> dict:
        s = score_split(model, "test", device)
        return {"test_accuracy": s["accuracy"], "test_loss": s["loss"], "test_images": s["n"]}


# ----------------------------------------------------------------------------- what the page shows


@dataclass
class Classification:
    """One image through the model. T = P + 1 tokens: [CLS] then the P patches in reading order."""
    probs: np.ndarray            # (n_classes,) softmax of the logits
    attention: np.ndarray        # (L, H, T, T) every layer's and head's attention, rows = queries
    cls_to_patches: np.ndarray   # (L, H, g, g) the [CLS] query's weights on the patches, on the patch grid
    cls_to_cls: np.ndarray       # (L, H) the [CLS] query's weight on itself (the rest of its row)
    rollout: np.ndarray          # (P,) attention rollout from [CLS] to each patch, sums to 1
    patches: np.ndarray          # (P, patch_size, patch_size) each patch's pixels 0..1 (after upsampling)
    grid: int                    # patches per side
    cell: float                  # pixels of the 8×8 image per patch side (patch_size / upsample)

    @property
    def prediction(self) -> int:
        return int(self.probs.argmax())

    @property
    def rollout_grid(self) -> np.ndarray:
        """(g, g): the rollout on the patch grid."""
        return self.rollout.reshape(self.grid, self.grid)


def attention_rollout(attention: np.ndarray, residual: float = ROLLOUT_RESIDUAL) -> np.ndarray:
    """Abnar & Zuidema (2020): average the heads, add the residual path (Ã = (1-r)·A + r·I, rows still
    sum to 1), multiply the layers from the first to the last: R = Ã_L ··· Ã_1. attention: (L, H, T, T)
    -> (T, T); row i says how much of token i's final state traces back to each input token."""
    a = np.asarray(attention, dtype=np.float64)
    T = a.shape[-1]
    eye = np.eye(T)
    rolled = eye
    for layer in a:
        mixed = (1.0 - residual) * layer.mean(axis=0) + residual * eye
        mixed = mixed / mixed.sum(axis=-1, keepdims=True)
        rolled = mixed @ rolled
    return rolled


def cls_rollout(attention: np.ndarray, residual: float = ROLLOUT_RESIDUAL) -> np.ndarray:
    """(P,) the rollout's [CLS] row over the patches, the [CLS] input's own share left out and the rest
    renormalised to sum to 1."""
    row = attention_rollout(attention, residual)[0, 1:]
    total = row.sum()
    return row / total if total > 0 else np.full_like(row, 1.0 / len(row))


def _as_image(image, config: ViTConfig) -> np.ndarray:
    img = np.asarray(image, dtype=np.float32)
    if img.shape != (config.image_size, config.image_size):
        raise ValueError(f"expected an image ({config.image_size}, {config.image_size}), got {img.shape}")
    if not np.isfinite(img).all():
        raise ValueError("the image has values that are not finite")
    return np.clip(img, 0, MAX_VALUE)


@torch.no_grad()
def classify(model: ViT, image) -> Classification:
    """One (8, 8) image (pixels 0..16) through the model in eval mode, with every attention map."""
    cfg = model.config
    device = model.position.device
    x = torch.as_tensor(_as_image(image, cfg), device=device)[None]
    was = model.training
    model.eval()
    try:
        out = model(x, return_attention=True)
    finally:
        model.train(was)
    probs = torch.softmax(out.logits.float(), dim=-1)[0].cpu().numpy().astype(np.float64)
    att = torch.stack(out.attention)[:, 0].float().cpu().numpy().astype(np.float64)  # (L, H, T, T)
    L, H, g = att.shape[0], att.shape[1], cfg.grid
    patches = image_patches(x, cfg)[0].cpu().numpy().reshape(cfg.n_patches, cfg.patch_size, cfg.patch_size)
    return Classification(probs=probs, attention=att, cls_to_patches=att[:, :, 0, 1:].reshape(L, H, g, g),
                          cls_to_cls=att[:, :, 0, 0], rollout=cls_rollout(att), patches=patches, grid=g,
                          cell=cfg.patch_size / cfg.upsample)


@torch.no_grad()
def position_similarity(model: ViT) -> np.ndarray:
    """(P, P) cosine similarity of the learned position vectors of the patches ([CLS]'s left out). A
    trained ViT's map shows the 2-D grid: a patch's position is most like its row's and column's."""
    pos = model.position[1:].detach().float().cpu()
    pos = pos / pos.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return (pos @ pos.T).numpy().astype(np.float64)


def neighbour_similarity(similarity: np.ndarray, grid: int) -> tuple[float, float]:
    """(mean similarity of patches next to each other on the grid (up, down, left, right), mean of all
    other pairs of distinct patches): the first well above the second means 2-D structure was learned."""
    S = np.asarray(similarity, dtype=np.float64)
    P = grid * grid
    r, c = np.divmod(np.arange(P), grid)
    dist = np.abs(r[:, None] - r[None, :]) + np.abs(c[:, None] - c[None, :])
    near, far = S[dist == 1], S[dist > 1]
    return (float(near.mean()) if near.size else float("nan"), float(far.mean()) if far.size else float("nan"))
