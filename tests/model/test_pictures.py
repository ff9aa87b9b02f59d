"""model.lessons.pictures: how far a rollout is from even, and how a picture was fitted to a square input."""
import numpy as np

from model.hub.vit import ImageProcessor
from model.lessons.pictures import departure_from_even, picture_fit


def test_departure_from_even():
    assert departure_from_even(np.full(16, 1 / 16)) == 0.0
    near = np.full(16, 0.0625)
    near[0], near[1] = 0.0628, 0.0622
    assert abs(departure_from_even(near) - 0.0048) < 1e-9  # 0.0628 · 16 − 1
    peaked = np.zeros(4)
    peaked[0] = 1.0
    assert departure_from_even(peaked) == 3.0


def test_picture_fit():
    square = ImageProcessor(height=224, width=224)
    assert picture_fit(100, 100, square) == "kept"
    assert picture_fit(100, 300, square) == "stretched"
    short = ImageProcessor(height=224, width=224, shortest_edge=256, crop=(224, 224))
    assert picture_fit(100, 300, short) == "cropped"
