"""What a picture model's page says about a picture and its rollout, computed: how far an attention rollout is
from an even split over the patches (a model with random weights spreads it evenly), and how an uploaded picture
was fitted to the model's square input (kept, stretched, or its centre cropped)."""
from __future__ import annotations

import numpy as np

ASPECT_TOLERANCE = 0.02  # a relative change of the height/width ratio below this is not called stretching


def departure_from_even(shares) -> float:
    """The largest relative departure of `shares` (summing to 1) from an even split: max |p·n − 1| over the n
    shares; 0 for an even map, 1 where one share is twice (or none) of 1/n."""
    p = np.asarray(shares, dtype=np.float64).ravel()
    return float(np.abs(p * p.size - 1.0).max()) if p.size else 0.0


def picture_fit(height: int, width: int, processor) -> str:
    """How a height × width picture becomes the model's input under `processor` (model.hub.vit.ImageProcessor):
    "kept" (its shape kept), "stretched" (resized to another height/width ratio) or "cropped" (its shape kept by
    the resize, then cut to the centre)."""
    rh, rw = processor.resize_size(height, width)
    if abs((rh / rw) / (height / width) - 1.0) > ASPECT_TOLERANCE:
        return "stretched"
    if processor.crop and tuple(processor.crop) != (rh, rw):
        return "cropped"
    return "kept"
