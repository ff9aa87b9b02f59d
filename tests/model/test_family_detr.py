"""DETR on synthetic shapes (model/family/shapes.py, detr.py, detr_matching.py, pages/family/detr.py): the data,
box geometry, Hungarian matching, the model's attention, the trainer, the shipped model and the section."""
import argparse
import hashlib
import json

import numpy as np
import pytest
from app.i18n import LANGS
from tests.apptest_util import section_script
import torch

from model.nn.attention import MultiHeadAttention
from model.family import family_task, load_family_dir
from model.family.detr import DETR, DetrConfig, DetrShapesTask, detect, detr_loss, generate
from model.family.detr_matching import box_iou, generalized_box_iou, hungarian_match
from model.family.shapes import CLASSES, SPLITS, make_scene
from model.nn.layers import EncoderLayer
from tests.apptest_read import charts

TINY = DetrConfig(d_model=32, n_heads=2, d_ff=64, n_encoder_layers=1, n_decoder_layers=2, n_queries=6,
                  stem_channels=8)


def digest(img: np.ndarray) -> str:
    return hashlib.sha1(img.tobytes()).hexdigest()


# ----------------------------------------------------------------------------- data

def test_scenes_are_a_pure_function_of_seed_split_and_index():
    a, b = make_scene(0, "val", 7), make_scene(0, "val", 7)
    assert np.array_equal(a.image, b.image) and np.array_equal(a.classes, b.classes)
    assert np.array_equal(a.boxes, b.boxes)
    assert not np.array_equal(make_scene(1, "val", 7).image, a.image)
    assert not np.array_equal(make_scene(0, "test", 7).image, a.image)
    with pytest.raises(ValueError):
        make_scene(0, "nope", 0)


def test_splits_are_disjoint():
    seen = {split: {digest(make_scene(0, split, i).image) for i in range(n)}
            for split, n in (("train", 400), ("val", 150), ("test", 150), ("demo", 100))}
    assert [len(v) for v in seen.values()] == [400, 150, 150, 100]  # no picture twice within a split
    splits = list(seen)
    for i, s in enumerate(splits):
        for t in splits[i + 1:]:
            assert not seen[s] & seen[t], (s, t)
    assert set(SPLITS) == set(splits)


def test_training_batches_depend_only_on_step_seed_and_rank():
    task = DetrShapesTask(0)
    a, b = task.batch(3, 0, 0, 4, "cpu"), task.batch(3, 0, 0, 4, "cpu")
    assert torch.equal(a[0], b[0]) and all(torch.equal(x, y) for x, y in zip(a[2], b[2]))
    assert not torch.equal(a[0], task.batch(3, 0, 1, 4, "cpu")[0])
    assert not torch.equal(a[0], task.batch(4, 0, 0, 4, "cpu")[0])
    images, classes, boxes = a
    assert images.shape == (4, 3, 32, 32) and images.dtype == torch.float32
    assert 0 <= float(images.min()) and float(images.max()) <= 1


@pytest.mark.parametrize("index", range(40))
def test_boxes_fit_the_image_and_the_drawn_pixels(index):
    s = make_scene(0, "val", index)
    size = s.image.shape[0]
    assert 1 <= len(s.classes) <= 4 and set(s.classes.tolist()) <= set(range(len(CLASSES)))
    assert s.boxes.shape == (len(s.classes), 4)
    cx, cy, w, h = s.boxes.T
    assert np.all(w > 0) and np.all(h > 0)
    assert np.all(cx - w / 2 >= -1e-6) and np.all(cx + w / 2 <= 1 + 1e-6)
    assert np.all(cy - h / 2 >= -1e-6) and np.all(cy + h / 2 <= 1 + 1e-6)
    for k, m in enumerate(s.masks):
        ys, xs = np.nonzero(m)  # the box is the tight box of the object's pixels
        assert np.allclose([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1],
                           [(cx[k] - w[k] / 2) * size, (cy[k] - h[k] / 2) * size,
                            (cx[k] + w[k] / 2) * size, (cy[k] + h[k] / 2) * size], atol=1e-3)
        later = s.masks[k + 1:].any(0) if k + 1 < len(s.masks) else np.zeros_like(m)
        assert (m & ~later).sum() >= 0.6 * m.sum()  # mostly visible
    img = s.image.astype(float)
    covered = s.masks.any(0)
    background = np.median(img[~covered], axis=0)
    outside = np.abs(img[~covered] - background).mean(-1)
    inside = np.abs(img[covered] - background).max(-1)
    assert outside.mean() < 8 and np.percentile(outside, 99) < 20  # plain background with light noise
    assert np.percentile(inside, 5) > 30  # every object pixel is clearly coloured


# ----------------------------------------------------------------------------- boxes

def test_iou_and_giou_on_hand_made_boxes():
    a = np.array([[0.5, 0.5, 0.2, 0.2]], np.float32)
    assert box_iou(a, a)[0, 0] == pytest.approx(1.0)
    assert generalized_box_iou(a, a)[0, 0] == pytest.approx(1.0)
    nested = np.array([[0.5, 0.5, 0.4, 0.4]], np.float32)  # a inside it, a quarter of its area
    assert box_iou(a, nested)[0, 0] == pytest.approx(0.25)
    assert generalized_box_iou(a, nested)[0, 0] == pytest.approx(0.25)  # the enclosing box is the union
    touching = np.array([[0.7, 0.5, 0.2, 0.2]], np.float32)
    assert box_iou(a, touching)[0, 0] == pytest.approx(0.0, abs=1e-6)
    assert generalized_box_iou(a, touching)[0, 0] == pytest.approx(0.0, abs=1e-6)
    apart = np.array([[0.9, 0.5, 0.2, 0.2]], np.float32)  # a gap of 0.2: enclosing 0.6 × 0.2, union 2 × 0.04
    assert box_iou(a, apart)[0, 0] == pytest.approx(0.0, abs=1e-6)
    assert generalized_box_iou(a, apart)[0, 0] == pytest.approx(-(0.12 - 0.08) / 0.12, abs=1e-5)
    far = np.array([[0.01, 0.01, 0.01, 0.01]]), np.array([[0.99, 0.99, 0.01, 0.01]])
    assert generalized_box_iou(*far)[0, 0] < -0.99
    half = np.array([[0.6, 0.5, 0.2, 0.2]], np.float32)  # overlaps a by half its width
    assert box_iou(a, half)[0, 0] == pytest.approx(0.02 / 0.06)


def test_giou_is_at_most_iou_and_in_range():
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.uniform(0.1, 0.9, (50, 2)), rng.uniform(0.01, 0.5, (50, 2))], 1).astype(np.float32)
    b = np.concatenate([rng.uniform(0.1, 0.9, (40, 2)), rng.uniform(0.01, 0.5, (40, 2))], 1).astype(np.float32)
    iou, giou = box_iou(a, b), generalized_box_iou(a, b)
    assert iou.shape == giou.shape == (50, 40) and isinstance(iou, np.ndarray)
    assert np.all(giou <= iou + 1e-6) and np.all(giou >= -1) and np.all(giou <= 1)
    assert np.all((iou >= 0) & (iou <= 1))
    t = generalized_box_iou(torch.from_numpy(a), torch.from_numpy(b))  # tensors in, tensors out
    assert isinstance(t, torch.Tensor) and np.allclose(t.numpy(), giou)


# ----------------------------------------------------------------------------- matching

def _logits_for(classes, n_classes=3, strength=5.0):
    out = np.full((len(classes), n_classes + 1), -strength, np.float32)
    out[np.arange(len(classes)), classes] = strength
    return out


def test_hungarian_recovers_a_permutation():
    tgt_cls = np.array([0, 1, 2, 1])
    tgt = np.array([[0.2, 0.2, 0.1, 0.1], [0.8, 0.2, 0.2, 0.2], [0.5, 0.5, 0.3, 0.2], [0.2, 0.8, 0.15, 0.15]],
                   np.float32)
    perm = np.array([2, 0, 3, 1])  # query i predicts object perm[i]
    q, t = hungarian_match(_logits_for(tgt_cls[perm]), tgt[perm] + 0.01, tgt_cls, tgt)
    assert q.tolist() == [0, 1, 2, 3] and t.tolist() == perm.tolist()


def test_hungarian_with_more_queries_than_objects():
    tgt_cls = np.array([2, 0, 1])
    tgt = np.array([[0.3, 0.3, 0.2, 0.2], [0.7, 0.7, 0.2, 0.2], [0.3, 0.75, 0.2, 0.3]], np.float32)
    boxes = np.tile([[0.5, 0.5, 0.05, 0.05]], (8, 1)).astype(np.float32)  # 8 queries; 5 point at nothing
    cls = np.zeros(8, int)
    for query, obj in ((6, 0), (1, 1), (4, 2)):
        boxes[query], cls[query] = tgt[obj], tgt_cls[obj]
    q, t = hungarian_match(_logits_for(cls), boxes, tgt_cls, tgt)
    assert dict(zip(q.tolist(), t.tolist())) == {1: 1, 4: 2, 6: 0}
    q0, t0 = hungarian_match(_logits_for(cls), boxes, np.zeros(0, int), np.zeros((0, 4)))
    assert len(q0) == len(t0) == 0


# ----------------------------------------------------------------------------- the model

def test_config_round_trip_and_validation():
    cfg = DetrConfig(d_model=48, n_heads=3, n_queries=10, eos_coef=0.2)
    assert DetrConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    with pytest.raises(ValueError, match="unknown"):
        DetrConfig.from_dict({**cfg.to_dict(), "nope": 1})
    for bad in ({"d_model": 50, "n_heads": 4}, {"image_size": 30}, {"patch_size": 3}, {"stem": "x"},
                {"dropout": 1.0}, {"n_queries": 0}, {"eos_coef": 0.0}):
        with pytest.raises(ValueError):
            DetrConfig(**bad)
    assert cfg.transformer().d_model == 48 and cfg.grid == 8 and cfg.n_tokens == 64


def test_the_model_is_built_from_the_papers_layers():
    m = DETR(TINY)
    assert all(isinstance(layer, EncoderLayer) for layer in m.encoder)
    for layer in m.decoder:
        assert isinstance(layer.self_attn, MultiHeadAttention) and layer.self_attn.self_attention
        assert isinstance(layer.cross_attn, MultiHeadAttention) and not layer.cross_attn.self_attention


def test_attention_shapes_rows_and_no_causal_mask():
    torch.manual_seed(0)
    m = DETR(TINY).eval()
    images = torch.rand(3, 3, 32, 32)
    with torch.no_grad():
        out = m(images, return_attention=True)
    B, N, C1, T, H = 3, TINY.n_queries, TINY.n_classes + 1, TINY.n_tokens, TINY.n_heads
    assert out.logits.shape == (B, N, C1) and out.boxes.shape == (B, N, 4)
    assert 0 <= float(out.boxes.min()) and float(out.boxes.max()) <= 1
    assert len(out.encoder_attention) == TINY.n_encoder_layers
    assert len(out.decoder_self_attention) == len(out.cross_attention) == TINY.n_decoder_layers
    for w in out.encoder_attention:
        assert w.shape == (B, H, T, T) and torch.allclose(w.sum(-1), torch.ones(B, H, T), atol=1e-5)
    for w in out.decoder_self_attention:
        assert w.shape == (B, H, N, N) and torch.allclose(w.sum(-1), torch.ones(B, H, N), atol=1e-5)
        upper = torch.triu_indices(N, N, offset=1)
        assert float(w[..., upper[0], upper[1]].min()) > 0  # every query sees the later ones too: no causal mask
    for w in out.cross_attention:
        assert w.shape == (B, H, N, T) and torch.allclose(w.sum(-1), torch.ones(B, H, N), atol=1e-5)
    with torch.no_grad():
        plain = m(images)  # without the maps: the same predictions through the fused kernel
    assert plain.cross_attention is None and torch.allclose(plain.logits, out.logits, atol=1e-5)


def test_loss_is_finite_and_decreases():
    torch.manual_seed(0)
    task = DetrShapesTask(0)
    m = task.build(TINY)
    opt, sched = task.optimizer(m, argparse.Namespace(warmup=5, lr_factor=1.0, steps=40))
    batch = task.batch(0, 0, 0, 8, "cpu")
    m.train()
    losses = []
    for _ in range(40):
        loss, n = task.loss(m, batch)
        assert torch.isfinite(loss) and n == 8 * TINY.n_tokens
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    assert np.mean(losses[-5:]) < 0.85 * np.mean(losses[:5])
    out = m(batch[0])  # auxiliary outputs: one per earlier decoder layer while training
    assert len(out.aux) == TINY.n_decoder_layers - 1
    assert torch.isfinite(detr_loss(m, out, batch[1], batch[2]))


def test_detect_and_generate():
    torch.manual_seed(0)
    m = DETR(TINY).eval()
    scene = generate(5)
    assert np.array_equal(scene.image, generate(5).image) and scene.image.dtype == np.uint8
    det = detect(m, scene.image, 0.0, (scene.classes, scene.boxes))
    N, g = TINY.n_queries, TINY.grid
    assert det.probs.shape == (N, 4) and np.allclose(det.probs.sum(-1), 1, atol=1e-5)
    assert det.keep.all()  # threshold 0 keeps every query
    assert det.cross.shape == (TINY.n_decoder_layers, TINY.n_heads, N, g, g)
    assert np.allclose(det.cross.sum((-1, -2)), 1, atol=1e-5)
    assert det.self_attention.shape == (TINY.n_decoder_layers, TINY.n_heads, N, N)
    assert det.cross_map(-1, -1).shape == (N, g, g) and det.self_map(0, 1).shape == (N, N)
    assert len(det.match_query) == len(scene.classes) and det.found.dtype == bool
    assert not detect(m, scene.image, 1.01).keep.any()
    with pytest.raises(ValueError):
        detect(m, np.zeros((16, 16, 3), np.uint8), 0.5)


# ----------------------------------------------------------------------------- trainer and shipped model

@pytest.mark.slow
def test_trainer_smoke(tmp_path):
    from model.training.train import main
    out, export = tmp_path / "run", tmp_path / "export"
    rc = main(["--task", "detr-shapes", "--steps", "20", "--out", str(out), "--batch-size", "8", "--threads", "1",
               "--d-model", "32", "--heads", "2", "--d-ff", "64", "--layers", "1", "--eval-every", "10",
               "--log-every", "5", "--ckpt-every", "10", "--warmup", "5", "--export", str(export)])
    assert rc == 0
    status = json.loads((out / "status.json").read_text())
    assert status["state"] == "done" and status["step"] == 20
    evals = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [e["step"] for e in evals if e["kind"] == "eval"] == [10, 20]
    assert all(0 <= e["found"] <= 1 for e in evals if e["kind"] == "eval")
    for d in (out / "model", export):
        loaded = load_family_dir(d, expect="detr-shapes")
        assert loaded.config.d_model == 32 and isinstance(loaded.model, DETR)
    meta = json.loads((export / "meta.json").read_text())
    assert meta["scores"]["images"] == 1000 and 0 <= meta["scores"]["found"] <= 1


SHIPPED = __import__("pathlib").Path(__file__).resolve().parents[2] / "assets" / "models" / "detr-shapes"


@pytest.mark.skipif(not (SHIPPED / "config.json").is_file(), reason="no shipped detr-shapes model")
def test_shipped_model_scores_as_its_card_says():
    loaded = load_family_dir(SHIPPED, expect="detr-shapes")
    card = loaded.meta["scores"]
    assert card["found"] >= 0.8
    size = sum(p.stat().st_size for p in SHIPPED.iterdir())
    assert size < 3_000_000
    scores = family_task("detr-shapes").score_test(loaded.model, "cpu")
    assert scores["images"] == card["images"]
    assert scores["found"] >= card["found"] - 0.03
    assert scores["mean_iou"] >= card["mean_iou"] - 0.03


# ----------------------------------------------------------------------------- the section

SCRIPT = section_script("""
from pages.family.detr import render
render()
""")


@pytest.fixture
def model_in_runs(monkeypatch, tmp_path):
    """The shipped model when there is one, else an untrained one in a run folder."""
    from model.family import save_family_dir
    if not (SHIPPED / "config.json").is_file():
        torch.manual_seed(0)
        task = family_task("detr-shapes")
        save_family_dir(tmp_path / "runs" / "x" / "model", task, task.build(TINY), {"step": 0})
        monkeypatch.setenv("ATLAS_RUNS_DIR", str(tmp_path / "runs"))


@pytest.mark.parametrize("lang", list(LANGS))
def test_section(lang, model_in_runs):
    from streamlit.testing.v1 import AppTest

    from app.i18n import catalogue
    words = catalogue(lang)
    at = AppTest.from_string(SCRIPT.format(lang=lang), default_timeout=120)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.header[0].value == words["family_detr.header"]
    assert len(charts(at)) == 4
    found = at.metric[0].value
    if (SHIPPED / "config.json").is_file():  # the card's recall never without its precision
        scores = json.loads((SHIPPED / "meta.json").read_text())["scores"]
        labels = {m.label: m.value for m in at.metric}
        assert labels[words["family_detr.test_score"]] == f"{scores['found']:.1%}"
        assert labels[words["family_detr.test_precision"]] == f"{scores['precision']:.1%}"
    seed = at.number_input(key="fam_detr_seed").value
    assert seed == 0 and "/" in found
    at.button(key="fam_detr_new").click().run()
    assert not at.exception
    assert at.number_input(key="fam_detr_seed").value != seed
    at.slider(key="fam_detr_threshold").set_value(0.0).run()
    n = at.metric[1].value.split("/")[1].strip()
    assert not at.exception and at.metric[1].value == f"{n} / {n}"  # threshold 0 shows every query
    at.slider(key="fam_detr_threshold").set_value(1.0).run()
    assert not at.exception and at.metric[1].value.startswith("0 /")
    assert words["family_detr.nothing_shown"] in [i.value for i in at.info]
    at.selectbox(key="fam_detr_head").set_value(1)
    at.selectbox(key="fam_detr_layer").set_value(0)
    at.selectbox(key="fam_detr_query").set_value(2).run()
    assert not at.exception and len(charts(at)) == 4
    at.number_input(key="fam_detr_seed").set_value(123).run()
    assert not at.exception
