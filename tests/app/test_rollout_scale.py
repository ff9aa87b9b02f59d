"""A near-even rollout (a ViT with random weights) is drawn as even: its colours run from 0 to at least twice the
even share, never stretched over its tiny differences into a glow."""
import numpy as np

from app.charts.family_vit_image import image_rollout


def test_a_near_even_rollout_is_not_stretched():
    r = np.full((4, 4), 1 / 16)
    r[0, 0], r[3, 3] = 0.0628, 0.0622
    heat = image_rollout(np.zeros((32, 32, 3), dtype=np.uint8), r, scale_title="share").to_dict()["data"][1]
    assert heat["zmin"] == 0.0 and heat["zmax"] >= 2 / 16
    assert heat["colorbar"]["title"]["text"] == "share"


def test_a_peaked_rollout_keeps_its_top():
    r = np.full((2, 2), 0.05)
    r[0, 0] = 0.85
    heat = image_rollout(np.zeros((8, 8, 3), dtype=np.uint8), r).to_dict()["data"][1]
    assert heat["zmin"] == 0.0 and abs(heat["zmax"] - 0.85) < 1e-12
