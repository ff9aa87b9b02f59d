"""ViT from the Hugging Face layout (`ViTModel`, `ViTForImageClassification`, e.g. google/vit-base-patch16-224),
run by the family page's own ViT (model.family.vit.ViT: the same EncoderLayer and MultiHeadAttention as every
other model here).

What the checkpoint holds, and where it goes in ours:
- the patch embedding is a convolution with kernel = stride = patch size: the same numbers as one Linear applied
  to each patch flattened as (channel, row, column), which is what our ViT does (`PretrainedViT.embed`);
- [CLS] and the learned position table (one vector per patch and one for [CLS]);
- pre-norm encoder layers (layernorm_before -> attention -> residual, layernorm_after -> MLP -> residual), their
  query, key and value side by side in our fused projection; `qkv_bias: false` is a zero bias;
- the final LayerNorm, and the classifier on the [CLS] state (ViTForImageClassification; a ViTModel has none:
  attention only). A ViTModel's pooler (dense + tanh on [CLS]) feeds no map or prediction here and is left out.

The image processor's steps (preprocessor_config.json: resize, centre crop, rescale, normalise) are done with
PIL and numpy (`ImageProcessor`), the way transformers' PIL backend does them."""
from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from model.family.vit import ViT, ViTConfig, ViTOutput, cls_rollout
from model.hub import HubError, cached_models, is_hf_folder, supported
from model.hub.guard import SMALL_JSON_LIMIT, quote, read_json

# The family's declaration (model/hub/families.py reads it without importing this module: literals only)
MODEL_TYPES = ("vit",)
TITLE = "ViT"
IMAGE = True  # it reads pictures: the family page opens it, the inspector does not
SIZES = ("num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads")
SIZE_KEYS = {"hidden_size": 1, "num_hidden_layers": 0, "num_attention_heads": 1, "intermediate_size": 1,
             "image_size": 1, "patch_size": 1, "num_channels": 1}
AGREE = {"hidden_size": (r"embeddings\.cls_token", 2),
         "intermediate_size": (r"encoder\.layer\.0\.intermediate\.dense\.weight", 0),
         "num_channels": (r"embeddings\.patch_embeddings\.projection\.weight", 1),
         "patch_size": (r"embeddings\.patch_embeddings\.projection\.weight", 2)}
LAYERS = {"num_hidden_layers": r"encoder\.layer\.(\d+)\."}
READS = ("preprocessor_config.json",)
UNCOUNTED = {r"(?:^|\.)pooler\.dense\.": None}  # a ViTModel's pooler: no figure here reads it (convert)
IMAGES = Path(__file__).resolve().parents[2] / "assets" / "images"  # pictures drawn for this app, to try a ViT on
PROCESSOR_FILE = "preprocessor_config.json"
ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu_python": "gelu",
               "relu": "relu", "silu": "swish", "swish": "swish"}
MAX_SIDE = 4096            # pixels per side of the image the model reads (google/vit-*: 224 or 384)
MAX_IMAGE_PIXELS = 40_000_000  # an uploaded picture larger than this is refused before it is decoded
TOP_K = 5


def _int(hf: dict, key: str, default=None, least: int = 1, most: int = 1 << 20, where: str = "config.json") -> int:
    value = hf.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or not least <= value <= most:
        raise HubError(f"{where}: {key} must be a whole number from {least} to {most}, got {quote(value)}")
    return value


def _side(hf: dict, key: str, default: int) -> int:
    """A size that ViT allows as a number or a (height, width) pair; only square ones are run here."""
    value = hf.get(key, default)
    if isinstance(value, (list, tuple)) and len(value) == 2 and value[0] == value[1]:
        value = value[0]
    elif isinstance(value, (list, tuple)):
        raise HubError(f"config.json: option {key}={quote(value)} is not supported (only square images and patches)")
    return _int({key: value}, key, most=MAX_SIDE)


def labels(hf: dict) -> list[str]:
    """The class names in order (config.json's id2label), 'class k' where one is missing."""
    id2label = hf.get("id2label") if isinstance(hf.get("id2label"), dict) else {}
    n = len(id2label)
    names = [f"class {k}" for k in range(n)]
    for k, v in id2label.items():
        try:
            i = int(k)
        except (TypeError, ValueError):
            continue
        if 0 <= i < n:
            names[i] = str(v)[:100]
    return names


def config_from_hf(hf: dict, has_head: bool) -> ViTConfig:
    if hf.get("model_type") not in MODEL_TYPES:
        raise HubError(f"config.json: model_type {hf.get('model_type')!r} is not a ViT")
    act = hf.get("hidden_act", "gelu")
    if act not in ACTIVATIONS:
        raise HubError(f"config.json: option hidden_act={quote(act)} is not supported (supported: "
                       f"{', '.join(sorted(ACTIVATIONS))})")
    eps = hf.get("layer_norm_eps", 1e-12)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps < 1:
        raise HubError(f"config.json: layer_norm_eps must be a number between 0 and 1, got {quote(eps)}")
    d, heads = _int(hf, "hidden_size", 768, most=1 << 14), _int(hf, "num_attention_heads", 12, most=1024)
    if d % heads:
        raise HubError(f"config.json: hidden_size {d} is not divisible by num_attention_heads {heads}")
    image, patch = _side(hf, "image_size", 224), _side(hf, "patch_size", 16)
    if image % patch:
        raise HubError(f"config.json: patch_size {patch} does not divide image_size {image}")
    n_classes = len(labels(hf)) if has_head else 0
    return ViTConfig(image_size=image, patch_size=patch, upsample=1, d_model=d, n_heads=heads,
                     d_ff=_int(hf, "intermediate_size", 4 * d, most=1 << 16),
                     n_layers=_int(hf, "num_hidden_layers", 12, most=256), dropout=0.0, n_classes=n_classes,
                     norm_first=True, activation=ACTIVATIONS[act], channels=_int(hf, "num_channels", 3, most=16),
                     norm_eps=float(eps))


def convert(hf_config: dict, weights: dict[str, torch.Tensor]) -> tuple[ViTConfig, dict[str, torch.Tensor]]:
    """The checkpoint as our ViT's config and state dict (HubError for what it cannot run exactly)."""
    p = "vit." if any(k.startswith("vit.") for k in weights) else ""
    has_head = "classifier.weight" in weights
    cfg = config_from_hf(hf_config, has_head)
    if has_head and tuple(weights["classifier.weight"].shape) != (cfg.n_classes, cfg.d_model):
        raise HubError(f"weights: classifier.weight has shape {tuple(weights['classifier.weight'].shape)}, but "
                       f"config.json's id2label names {cfg.n_classes} classes of size {cfg.d_model}")
    left = dict(weights)

    def take(name: str) -> torch.Tensor:
        if name not in left:
            raise HubError(f"weights: {name} is missing")
        return left.pop(name)

    D, e = cfg.d_model, f"{p}embeddings"
    out = {"cls_token": take(f"{e}.cls_token"), "position": take(f"{e}.position_embeddings")}
    if out["position"].dim() == 3:
        out["position"] = out["position"][0]
    conv = take(f"{e}.patch_embeddings.projection.weight")  # (D, C, p, p)
    out["patch_embed.weight"] = conv.reshape(conv.shape[0], -1)  # one Linear on each (C, p, p) patch
    out["patch_embed.bias"] = take(f"{e}.patch_embeddings.projection.bias")
    left.pop(f"{e}.mask_token", None)  # used only for masked-image pre-training inputs, never given here
    for n in range(cfg.n_layers):
        src, dst = f"{p}encoder.layer.{n}", f"layers.{n}"
        att = f"{src}.attention.attention"
        out[f"{dst}.self_attn.qkv.weight"] = torch.cat([take(f"{att}.{k}.weight") for k in ("query", "key", "value")])
        if hf_config.get("qkv_bias", True) is False:  # no bias in the checkpoint: ours is zero
            out[f"{dst}.self_attn.qkv.bias"] = torch.zeros(3 * D, dtype=out[f"{dst}.self_attn.qkv.weight"].dtype)
        else:
            out[f"{dst}.self_attn.qkv.bias"] = torch.cat([take(f"{att}.{k}.bias") for k in ("query", "key", "value")])
        for kind in ("weight", "bias"):
            out[f"{dst}.self_attn.out.{kind}"] = take(f"{src}.attention.output.dense.{kind}")
            out[f"{dst}.ffn.w1.{kind}"] = take(f"{src}.intermediate.dense.{kind}")
            out[f"{dst}.ffn.w2.{kind}"] = take(f"{src}.output.dense.{kind}")
            out[f"{dst}.res1.norm.{kind}"] = take(f"{src}.layernorm_before.{kind}")
            out[f"{dst}.res2.norm.{kind}"] = take(f"{src}.layernorm_after.{kind}")
    for kind in ("weight", "bias"):
        out[f"norm.{kind}"] = take(f"{p}layernorm.{kind}")
        if has_head:
            out[f"head.{kind}"] = take(f"classifier.{kind}")
        left.pop(f"{p}pooler.dense.{kind}", None)  # a ViTModel's pooler: no figure here reads it
    if left:
        names = sorted(left)
        raise HubError(f"weights: tensors this ViT importer does not know how to use: {names[:5]}"
                       f"{' …' if len(names) > 5 else ''} (a variant we cannot run exactly)")
    _check(cfg, out, weights)
    return cfg, out


def _check(cfg: ViTConfig, state: dict[str, torch.Tensor], weights: dict[str, torch.Tensor]) -> None:
    """Every tensor: a floating-point number type, finite, and the shape config.json implies; a wrong one named as
    the checkpoint names it."""
    from model.hub.bert import their_name
    with torch.device("meta"):
        want = {k: tuple(v.shape) for k, v in PretrainedViT(cfg).state_dict().items()}
    for key, tensor in state.items():
        name = lambda: their_name(key, tensor, weights)  # noqa: E731 (looked up only for a refusal)
        if key in want and tuple(tensor.shape) != want[key]:
            raise HubError(f"weights: {name()} has shape {tuple(tensor.shape)}, but config.json implies {want[key]}")
        if not tensor.is_floating_point():
            raise HubError(f"weights: {name()} holds {str(tensor.dtype).removeprefix('torch.')} numbers, not floats")
        if not bool(torch.isfinite(tensor).all()):
            raise HubError(f"weights: {name()} holds numbers that are not finite (NaN or infinity)")


class PretrainedViT(ViT):
    """The family's ViT reading C-channel images already normalised by the image processor, (B, C, H, W)."""

    def embed(self, pixel_values: torch.Tensor) -> torch.Tensor:
        cfg = self.config
        x = torch.as_tensor(pixel_values).to(self.position)
        if x.dim() != 4 or tuple(x.shape[1:]) != (cfg.channels, cfg.image_size, cfg.image_size):
            raise ValueError(f"expected images (B, {cfg.channels}, {cfg.image_size}, {cfg.image_size}), "
                             f"got {tuple(x.shape)}")
        B, C, g, p = x.size(0), cfg.channels, cfg.grid, cfg.patch_size
        patches = x.reshape(B, C, g, p, g, p).permute(0, 2, 4, 1, 3, 5).reshape(B, g * g, C * p * p)
        tokens = torch.cat([self.cls_token.expand(B, -1, -1), self.patch_embed(patches)], dim=1)
        return self.drop(tokens + self.position)


def build(config: ViTConfig, state: dict[str, torch.Tensor], path: Path) -> PretrainedViT:
    """Our ViT holding `state`, built on the meta device (no random initialisation spent on replaced weights)."""
    with torch.device("meta"):
        model = PretrainedViT(config)
    missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
    if missing or unexpected:
        raise HubError(f"{path.name}: weights do not match (missing {sorted(missing)[:5]}, "
                       f"unexpected {sorted(unexpected)[:5]})")
    return model


def meta(hf_config: dict) -> dict:
    return {"task": "image", "labels": labels(hf_config)}


# ----------------------------------------------------------------------------- the image processor


@dataclass
class ImageProcessor:
    """preprocessor_config.json's steps, in the order transformers' PIL backend applies them."""
    height: int
    width: int
    shortest_edge: int | None = None   # resize the shorter side to this, keeping the aspect ratio
    crop: tuple[int, int] | None = None  # (height, width) of a centre crop, after resizing
    resample: int = 2                  # PIL's filter number (2 bilinear, 3 bicubic, …)
    do_resize: bool = True
    rescale: float | None = 1 / 255
    mean: tuple[float, ...] | None = (0.5, 0.5, 0.5)
    std: tuple[float, ...] | None = (0.5, 0.5, 0.5)
    notes: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, folder: Path, hf_config: dict) -> "ImageProcessor":
        side = _side(hf_config, "image_size", 224)
        path = Path(folder) / PROCESSOR_FILE
        if not path.is_file():  # ViTImageProcessor's defaults at the model's own size
            return cls(side, side, notes=[f"no {PROCESSOR_FILE}: ViTImageProcessor's defaults"])
        d = read_json(path, SMALL_JSON_LIMIT, name=PROCESSOR_FILE)  # a few settings: its size bounded first
        if not isinstance(d, dict):
            raise HubError(f"{PROCESSOR_FILE}: not a JSON object")
        size = d.get("size", {"height": side, "width": side})
        if isinstance(size, int) and not isinstance(size, bool):
            size = {"height": size, "width": size}
        out = cls(side, side)
        if not isinstance(size, dict):
            raise HubError(f"{PROCESSOR_FILE}: option size={quote(size)} is not supported")
        if "shortest_edge" in size and len(size) == 1:
            out.shortest_edge = _int(size, "shortest_edge", most=MAX_SIDE, where=PROCESSOR_FILE)
        elif {"height", "width"} <= set(size):
            out.height, out.width = (_int(size, "height", most=MAX_SIDE, where=PROCESSOR_FILE),
                                     _int(size, "width", most=MAX_SIDE, where=PROCESSOR_FILE))
        else:
            raise HubError(f"{PROCESSOR_FILE}: option size={quote(size)} is not supported")
        out.do_resize = bool(d.get("do_resize", True))
        resample = d.get("resample", 2)
        if resample not in range(6):
            raise HubError(f"{PROCESSOR_FILE}: option resample={quote(resample)} is not supported")
        out.resample = int(resample)
        if d.get("do_center_crop"):
            crop = d.get("crop_size", {"height": side, "width": side})
            crop = {"height": crop, "width": crop} if isinstance(crop, int) else crop
            if not isinstance(crop, dict):
                raise HubError(f"{PROCESSOR_FILE}: option crop_size={quote(crop)} is not supported")
            out.crop = (_int(crop, "height", most=MAX_SIDE, where=PROCESSOR_FILE),
                        _int(crop, "width", most=MAX_SIDE, where=PROCESSOR_FILE))
        factor = d.get("rescale_factor", 1 / 255)
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not math.isfinite(factor):
            raise HubError(f"{PROCESSOR_FILE}: rescale_factor must be a number, got {quote(factor)}")
        out.rescale = float(factor) if d.get("do_rescale", True) else None
        if d.get("do_normalize", True):
            channels = _int(hf_config, "num_channels", 3, most=16)
            out.mean, out.std = (_channel_values(d.get("image_mean", 0.5), "image_mean", channels),
                                 _channel_values(d.get("image_std", 0.5), "image_std", channels))
            if any(s == 0 for s in out.std):
                raise HubError(f"{PROCESSOR_FILE}: image_std has a 0 (division by zero)")
        else:
            out.mean = out.std = None
        for name in ("do_pad", "do_reduce_labels"):
            if d.get(name):
                raise HubError(f"{PROCESSOR_FILE}: option {name}=true is not supported")
        return out

    def resize_size(self, height: int, width: int) -> tuple[int, int]:
        """(height, width) after the resize step."""
        if not self.do_resize:
            return height, width
        if self.shortest_edge:  # as transformers: the short side to the size, the long one scaled and floored
            short, long = min(height, width), max(height, width)
            new_short, new_long = self.shortest_edge, int(self.shortest_edge * long / short)
            return (new_short, new_long) if height <= width else (new_long, new_short)
        return self.height, self.width

    def output_size(self, height: int, width: int) -> tuple[int, int]:
        """(height, width) of what the model reads: after the resize and the centre crop."""
        return self.crop or self.resize_size(height, width)

    def __call__(self, image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """An RGB image (H, W, 3) uint8 -> (pixel values (3, h, w) float32 for the model, the resized image
        (h, w, 3) uint8 that the model sees, for figures)."""
        from PIL import Image
        img = np.asarray(image)
        if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
            raise ValueError(f"expected an RGB image (H, W, 3) of uint8, got {img.shape} {img.dtype}")
        if self.do_resize:
            h, w = self.resize_size(*img.shape[:2])
            img = np.asarray(Image.fromarray(img).resize((w, h), resample=Image.Resampling(self.resample)))
        if self.crop:
            img = _centre_crop(img, *self.crop)
        shown = img.copy()
        x = img.astype(np.float32)
        if self.rescale is not None:
            x = (img.astype(np.float64) * self.rescale).astype(np.float32)
        if self.mean is not None:
            x = (x - np.asarray(self.mean, dtype=np.float32)) / np.asarray(self.std, dtype=np.float32)
        return np.ascontiguousarray(x.transpose(2, 0, 1), dtype=np.float32), shown


def _channel_values(value, name: str, channels: int) -> tuple[float, ...]:
    values = [value] * channels if isinstance(value, (int, float)) and not isinstance(value, bool) else value
    if (not isinstance(values, (list, tuple)) or len(values) != channels
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values)):
        raise HubError(f"{PROCESSOR_FILE}: {name} must be {channels} numbers (one a colour channel), got "
                       f"{quote(value)}")
    return tuple(float(v) for v in values)


def _centre_crop(img: np.ndarray, height: int, width: int) -> np.ndarray:
    """As transformers' center_crop: the middle (height, width), padded with zeros where the image is smaller."""
    h, w = img.shape[:2]
    if h < height or w < width:
        big = np.zeros((max(h, height), max(w, width), img.shape[2]), dtype=img.dtype)
        top, left = (big.shape[0] - h) // 2, (big.shape[1] - w) // 2
        big[top:top + h, left:left + w] = img
        img, h, w = big, big.shape[0], big.shape[1]
    top, left = (h - height) // 2, (w - width) // 2
    return img[top:top + height, left:left + width]


def tokenizer(folder: Path, hf_config: dict) -> ImageProcessor:
    """What turns the input into the model's tokens: for a ViT, the image processor."""
    return ImageProcessor.load(folder, hf_config)


def shipped_images() -> dict[str, Path]:
    """{name: file} of the pictures shipped in assets/images (drawn for this app with PIL), by name."""
    return {p.stem: p for p in sorted(IMAGES.glob("*.png"))}


def image_models(base_dir: str | Path, cache_dir: str | Path | None = None) -> dict[str, Path]:
    """{name: folder} of every image model we can run: folders in `base_dir` (the app's pretrained/), then the
    Hugging Face cache's models (owner/name), the first of a name kept."""
    found: dict[str, Path] = {}
    base = Path(base_dir)
    if base.is_dir():
        for folder in sorted(p for p in base.iterdir() if p.is_dir()):
            if is_hf_folder(folder) and supported(folder, images=True):
                found[folder.name] = folder
    for name, folder in cached_models(Path(cache_dir) if cache_dir else None, images=True).items():
        found.setdefault(name, folder)
    return found


def read_image(data: bytes) -> np.ndarray:
    """An image file's bytes (PNG, JPEG, …) as RGB (H, W, 3) uint8; ValueError with one sentence when it is not
    an image we can read (damaged, or too many pixels to decode safely)."""
    from PIL import Image, UnidentifiedImageError
    try:
        with Image.open(io.BytesIO(data)) as im:
            if im.width * im.height > MAX_IMAGE_PIXELS:
                raise ValueError(f"the image has {im.width}×{im.height} pixels; at most {MAX_IMAGE_PIXELS:,} are read")
            return np.asarray(im.convert("RGB"), dtype=np.uint8).copy()
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError, SyntaxError) as e:
        raise ValueError(f"the file is not an image that can be read ({str(e)[:120] or type(e).__name__})") from None


# ----------------------------------------------------------------------------- what the page shows


@dataclass
class ImageAttention:
    """One image through a pretrained ViT. P = g² patches; token 0 is [CLS]."""
    image: np.ndarray            # (h, w, 3) uint8: the picture as the model sees it (resized, cropped)
    top: list[tuple[str, float]]  # the most probable classes, best first ([] without a classification head)
    cls_to_patches: np.ndarray   # (L, H, g, g) the [CLS] query's weights on the patches, float32
    cls_to_cls: np.ndarray       # (L, H) the [CLS] query's weight on itself
    rollout: np.ndarray          # (g, g) attention rollout from [CLS] to the patches, sums to 1
    grid: int                    # patches per side
    patch: int                   # pixels per patch side

    @property
    def cell(self) -> float:
        return float(self.patch)


@torch.no_grad()
def see_image(loaded, image: np.ndarray, k: int = TOP_K) -> ImageAttention:
    """An RGB image through a loaded pretrained ViT (model.hub.load_pretrained), with every attention map of
    [CLS] and the rollout; the full (T × T) maps are not kept (ViT-Base: 12 × 12 maps of 197 × 197)."""
    model, cfg = loaded.model, loaded.config
    pixels, shown = loaded.tokenizer(image)
    if pixels.shape[0] != cfg.channels:
        raise ValueError(f"this model reads pictures of {cfg.channels} colour "
                         f"{'channel' if cfg.channels == 1 else 'channels'}, and the image processor gives "
                         f"{pixels.shape[0]} (red, green and blue); such a model is loaded, but not run on a picture "
                         f"here")
    if pixels.shape != (cfg.channels, cfg.image_size, cfg.image_size):
        raise ValueError(f"the image processor gives {pixels.shape[1]}×{pixels.shape[2]} pixels; this model reads "
                         f"{cfg.image_size}×{cfg.image_size}")
    was = model.training
    model.eval()
    try:
        out: ViTOutput = model(torch.as_tensor(pixels)[None], return_attention=True)
    finally:
        model.train(was)
    att = torch.stack(out.attention)[:, 0].float().cpu().numpy()  # (L, H, T, T)
    L, H, g = att.shape[0], att.shape[1], cfg.grid
    top: list[tuple[str, float]] = []
    if out.logits is not None:
        probs = torch.softmax(out.logits[0].float(), dim=-1).cpu().numpy().astype(np.float64)
        names = loaded.meta.get("labels") or [f"class {i}" for i in range(len(probs))]
        top = [(names[i], float(probs[i])) for i in np.argsort(-probs, kind="stable")[:k]]
    return ImageAttention(image=shown, top=top, cls_to_patches=att[:, :, 0, 1:].reshape(L, H, g, g).copy(),
                          cls_to_cls=att[:, :, 0, 0].copy(), rollout=cls_rollout(att).reshape(g, g), grid=g,
                          patch=cfg.patch_size)


def see_picture(loaded, data: bytes) -> ImageAttention:
    """see_image of an image file's bytes (ValueError with one sentence when they are not a readable image)."""
    return see_image(loaded, read_image(data))
