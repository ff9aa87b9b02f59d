"""The 8×8 handwritten digits (assets/digits/digits.npz): loading, a fixed stratified split, seeded
training batches with ±1-pixel shifts, and an 8×8 image typed as text.

The asset (see assets/digits/README.md) holds 1,797 images, uint8 (8, 8) with values 0..16, and their
labels 0..9. It is read with numpy alone (`allow_pickle=False`): scikit-learn is needed only by
tools/make_digits.py, which wrote it.

The split never changes with the training seed: the same test digits score every model."""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from model.data.corpus import ASSETS
from model.messages import UserError

DIGITS_FILE = ASSETS / "digits" / "digits.npz"
SIZE = 8                # pixels per side
MAX_VALUE = 16          # the brightest pixel (16 on-pixels of a 4×4 block)
N_CLASSES = 10
SPLIT_SEED = 14         # fixed: the split is the same for every model and every training seed
FRACTIONS = {"train": 0.7, "valid": 0.1, "test": 0.2}
SPLITS = tuple(FRACTIONS)


class DigitsError(OSError):
    """The asset is missing or not what it should be."""


@functools.cache
def _load(path: str) -> tuple[np.ndarray, np.ndarray]:
    p = Path(path)
    if not p.is_file():
        raise DigitsError(f"{p}: file not found (recreate it with tools/make_digits.py)")
    try:
        with np.load(p, allow_pickle=False) as z:
            images, labels = np.asarray(z["images"]), np.asarray(z["labels"])
    except (ValueError, KeyError, OSError) as e:
        raise DigitsError(f"{p}: not a digits file ({e})") from None
    if images.ndim != 3 or images.shape[1:] != (SIZE, SIZE) or labels.shape != images.shape[:1]:
        raise DigitsError(f"{p}: expected images (N, 8, 8) and labels (N,), got {images.shape} and {labels.shape}")
    if images.dtype != np.uint8 or labels.dtype != np.uint8 or images.max() > MAX_VALUE or labels.max() >= N_CLASSES:
        raise DigitsError(f"{p}: expected uint8 pixels 0..16 and labels 0..9")
    images.setflags(write=False)
    labels.setflags(write=False)
    return images, labels


def load_digits(path: str | Path = DIGITS_FILE) -> tuple[np.ndarray, np.ndarray]:
    """(images uint8 (N, 8, 8) 0..16, labels uint8 (N,)), read-only arrays, read once per process."""
    return _load(str(path))


@functools.cache
def split_indices(seed: int = SPLIT_SEED) -> dict[str, np.ndarray]:
    """{"train", "valid", "test"} -> sorted indices into the asset. Stratified: each digit's images are
    shuffled (seeded) and cut 70 / 10 / 20 %, so every split has every digit in the same proportion."""
    _, labels = load_digits()
    rng = np.random.default_rng(seed)
    parts: dict[str, list[np.ndarray]] = {name: [] for name in SPLITS}
    for digit in range(N_CLASSES):
        idx = np.flatnonzero(labels == digit)
        idx = idx[rng.permutation(len(idx))]
        n_train = int(round(FRACTIONS["train"] * len(idx)))
        n_valid = int(round(FRACTIONS["valid"] * len(idx)))
        parts["train"].append(idx[:n_train])
        parts["valid"].append(idx[n_train:n_train + n_valid])
        parts["test"].append(idx[n_train + n_valid:])
    out = {name: np.sort(np.concatenate(p)) for name, p in parts.items()}
    for a in out.values():
        a.setflags(write=False)
    return out


def split(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(images (n, 8, 8) uint8, labels (n,) uint8) of one split, in a fixed order."""
    if name not in FRACTIONS:
        raise KeyError(f"unknown split {name!r}; one of {SPLITS}")
    images, labels = load_digits()
    idx = split_indices()[name]
    return images[idx], labels[idx]


def shift(images: np.ndarray, dy: np.ndarray, dx: np.ndarray) -> np.ndarray:
    """Each image moved by (dy, dx) ∈ {-1, 0, 1}² pixels; what leaves the frame is lost, what enters is 0."""
    out = np.zeros_like(images)
    padded = np.pad(images, ((0, 0), (1, 1), (1, 1)))
    for i, (y, x) in enumerate(zip(dy, dx)):
        out[i] = padded[i, 1 - y:1 - y + SIZE, 1 - x:1 - x + SIZE]
    return out


def train_batch(step: int, seed: int, rank: int, batch_size: int, augment: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """A training batch that depends only on its arguments (a resumed run sees the same data): images
    drawn without replacement from the train split, each shifted by a random ±1 pixel when `augment`.
    Returns (images uint8 (B, 8, 8), labels int64 (B,))."""
    images, labels = split("train")
    rng = np.random.default_rng([seed, rank, step, 0x1D1])
    idx = rng.choice(len(images), size=batch_size, replace=batch_size > len(images))
    x = images[idx]
    if augment:
        dy, dx = rng.integers(-1, 2, size=(2, batch_size))
        x = shift(x, dy, dx)
    return x, labels[idx].astype(np.int64)


# ----------------------------------------------------------------------------- an image typed as text

# One character per pixel, 8 lines of 8. '.' (or '0', ' ') is 0, '1'..'9' are 1..9 and then
# 'a'..'g' are 10..16 (hexadecimal-like, up to 16 = 'g'); '#' is 16 too, the quick way to draw.
BLANK = "."
FULL = "#"
_DIGITS = "0123456789abcdefg"
CHAR_VALUE = {**{c: i for i, c in enumerate(_DIGITS)}, **{c.upper(): i for i, c in enumerate(_DIGITS)},
              BLANK: 0, FULL: MAX_VALUE}


def image_to_text(image) -> str:
    """8 lines of 8 characters: '.' for 0, '1'..'9', then 'a'..'f' for 10..15 and '#' for 16."""
    img = np.asarray(image)
    if img.shape != (SIZE, SIZE):
        raise ValueError(f"expected an image ({SIZE}, {SIZE}), got {img.shape}")

    def ch(v: int) -> str:
        v = int(np.clip(round(float(v)), 0, MAX_VALUE))
        return BLANK if v == 0 else FULL if v == MAX_VALUE else _DIGITS[v]
    return "\n".join("".join(ch(v) for v in row) for row in img)


def image_from_text(text: str) -> np.ndarray:
    """An 8×8 uint8 image (0..16) from 8 lines of 8 characters (see CHAR_VALUE). Blank lines and spaces at
    the ends of lines are ignored. UserError: family_vit.errors.grid_empty_text (nothing typed),
    .grid_size (not 8 lines of 8), .grid_chars (a character that is not a pixel value), .grid_blank (all 0)."""
    if not isinstance(text, str) or not text.strip():
        raise UserError("family_vit.errors.grid_empty_text")
    rows = [line.strip() for line in text.replace("\r", "").split("\n") if line.strip()]
    bad = sorted({c for row in rows for c in row if c not in CHAR_VALUE})
    if bad:
        shown = " ".join(repr(c) for c in bad[:5])
        raise UserError("family_vit.errors.grid_chars", detail=shown, count=len(bad))
    if len(rows) != SIZE or any(len(r) != SIZE for r in rows):
        widths = sorted({len(r) for r in rows})
        raise UserError("family_vit.errors.grid_size", rows=len(rows), cols=",".join(map(str, widths)))
    img = np.array([[CHAR_VALUE[c] for c in row] for row in rows], dtype=np.uint8)
    if not img.any():
        raise UserError("family_vit.errors.grid_blank")
    return img


def lenient_image(text: str) -> np.ndarray:
    """The image a grid most likely means, never an error: characters that are no pixel value count as 0,
    missing rows and columns as 0, extra ones are dropped (the canvas starts from what was typed)."""
    img = np.zeros((SIZE, SIZE), dtype=np.uint8)
    rows = [line.strip() for line in str(text or "").replace("\r", "").split("\n") if line.strip()]
    for r, row in enumerate(rows[:SIZE]):
        for c, ch in enumerate(row[:SIZE]):
            img[r, c] = CHAR_VALUE.get(ch, 0)
    return img


def toggle_pixel(text: str, row: int, col: int) -> str:
    """The grid with one pixel switched: off (0) -> full (16), anything else -> off."""
    img = lenient_image(text)
    if 0 <= row < SIZE and 0 <= col < SIZE:
        img[row, col] = MAX_VALUE if img[row, col] == 0 else 0
    return image_to_text(img)


def blank_text() -> str:
    """The empty canvas as text (8 lines of '.')."""
    return "\n".join(BLANK * SIZE for _ in range(SIZE))
