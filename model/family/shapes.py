"""Synthetic shapes for the DETR member: small RGB pictures holding 1–4 rectangles, circles and triangles.

Every picture is a pure function of (seed, split, index): the random generator is seeded with exactly
those numbers, so the splits are fixed and disjoint (a different split name gives a different stream),
and the same picture comes back on every machine. Colours do not depend on the class, so a model must
learn the *shape* of an object, not its colour.

Targets are class ids (0 rectangle, 1 circle, 2 triangle) and boxes (cx, cy, w, h) normalised to [0, 1]:
the tight box around the object's pixels as drawn (before any later object covers a corner of it)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CLASSES = ("rectangle", "circle", "triangle")
SPLITS = {"train": 0, "val": 1, "test": 2, "demo": 3}
COLOURS = np.array([(214, 39, 40), (31, 119, 180), (44, 160, 44), (255, 127, 14), (148, 103, 189)],
                   dtype=np.float32)
IMAGE_SIZE = 32
MAX_OBJECTS = 4
MAX_OVERLAP = 0.15  # at most this share of the smaller box may lie under another object's box
NOISE = 4.0         # std of the light pixel noise (0..255 scale)


@dataclass(frozen=True)
class Scene:
    image: np.ndarray    # (H, W, 3) uint8
    classes: np.ndarray  # (n,) int64
    boxes: np.ndarray    # (n, 4) float32: cx, cy, w, h in [0, 1]
    masks: np.ndarray    # (n, H, W) bool: each object's pixels as drawn (before later objects)


def rng_for(seed: int, split: str, index: int) -> np.random.Generator:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; one of {sorted(SPLITS)}")
    if index < 0 or seed < 0:
        raise ValueError("seed and index must be >= 0")
    return np.random.default_rng([int(seed), SPLITS[split], int(index)])


def _local_mask(kind: int, w: int, h: int, flip: bool) -> np.ndarray:
    """(h, w) bool: the object's pixels inside its w×h box (pixel centres at whole coordinates)."""
    yy = np.arange(h, dtype=np.float32)[:, None]
    xx = np.arange(w, dtype=np.float32)[None, :]
    cx = (w - 1) / 2.0
    if kind == 0:
        return np.ones((h, w), bool)
    if kind == 1:  # a disc of diameter w (== h)
        r = w / 2.0
        return (xx - cx) ** 2 + (yy - (h - 1) / 2.0) ** 2 <= (r - 0.15) ** 2 + 0.5
    # an isosceles triangle, apex at the top (at the bottom when flipped), base as wide as the box
    t = (yy + 0.5) / h  # 0 at the apex row's top edge, 1 at the base
    if flip:
        t = 1.0 - t
    return np.abs(xx - cx) <= (w / 2.0) * t + 0.25  # (h, w) by broadcasting


def _tight_box(local: np.ndarray, x0: int, y0: int) -> tuple[int, int, int, int]:
    """(x0, y0, x1, y1), inclusive pixel coordinates of the drawn pixels."""
    ys, xs = np.flatnonzero(local.any(1)), np.flatnonzero(local.any(0))
    return x0 + int(xs[0]), y0 + int(ys[0]), x0 + int(xs[-1]), y0 + int(ys[-1])


def _overlap(a, b) -> float:
    """Intersection of two pixel boxes (x0, y0, x1, y1 inclusive) over the smaller one's area."""
    ix = min(a[2], b[2]) - max(a[0], b[0]) + 1
    iy = min(a[3], b[3]) - max(a[1], b[1]) + 1
    if ix <= 0 or iy <= 0:
        return 0.0
    area = lambda r: (r[2] - r[0] + 1) * (r[3] - r[1] + 1)  # noqa: E731
    return ix * iy / min(area(a), area(b))


def make_scene(seed: int, split: str, index: int, size: int = IMAGE_SIZE) -> Scene:
    """Picture `index` of `split`: 1–4 shapes on a light background with light noise."""
    rng = rng_for(seed, split, index)
    n_wanted = int(rng.integers(1, MAX_OBJECTS + 1))
    lo, hi = max(5, round(size * 0.2)), max(7, round(size * 0.45))
    background = rng.uniform(225, 250)
    tint = rng.uniform(-8, 8, size=3)
    img = np.empty((size, size, 3), np.float32)
    img[:] = background + tint
    placed: list[tuple[int, int, int, int]] = []
    classes, boxes, masks = [], [], []
    colours = rng.permutation(len(COLOURS))
    tries = 0
    while len(classes) < n_wanted and tries < 40:
        tries += 1
        kind = int(rng.integers(0, len(CLASSES)))
        w = int(rng.integers(lo, hi + 1))
        h = w if kind == 1 else int(rng.integers(lo, hi + 1))
        if kind == 0 and max(w, h) > 2.5 * min(w, h):
            continue
        x0 = int(rng.integers(0, size - w + 1))
        y0 = int(rng.integers(0, size - h + 1))
        flip = bool(rng.integers(0, 2))
        local = _local_mask(kind, w, h, flip)
        box = _tight_box(local, x0, y0)
        if any(_overlap(box, p) > MAX_OVERLAP for p in placed):
            continue
        placed.append(box)
        colour = COLOURS[colours[len(classes) % len(COLOURS)]] + rng.uniform(-20, 20, size=3)
        img[y0:y0 + h, x0:x0 + w][local] = np.clip(colour, 0, 255)
        m = np.zeros((size, size), bool)
        m[y0:y0 + h, x0:x0 + w] = local
        bx0, by0, bx1, by1 = box
        classes.append(kind)
        boxes.append(((bx0 + bx1 + 1) / 2 / size, (by0 + by1 + 1) / 2 / size,
                      (bx1 - bx0 + 1) / size, (by1 - by0 + 1) / size))
        masks.append(m)
    img += rng.standard_normal(img.shape, dtype=np.float32) * NOISE
    image = np.clip(np.rint(img), 0, 255).astype(np.uint8)
    return Scene(image, np.asarray(classes, np.int64), np.asarray(boxes, np.float32).reshape(-1, 4),
                 np.asarray(masks, bool).reshape(-1, size, size))


def make_batch(seed: int, split: str, indices, size: int = IMAGE_SIZE):
    """(images (B, 3, H, W) float32 in [0, 1], [classes (n_i,)], [boxes (n_i, 4)]) as numpy."""
    scenes = [make_scene(seed, split, int(i), size) for i in indices]
    images = np.stack([s.image for s in scenes]).transpose(0, 3, 1, 2).astype(np.float32) / 255.0
    return images, [s.classes for s in scenes], [s.boxes for s in scenes]
