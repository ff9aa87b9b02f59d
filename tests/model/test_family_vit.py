"""The ViT member of the Transformer family: the 8×8 digits asset and its fixed split, the model
built from the paper's EncoderLayer, attention and rollout, the typed grid, training through the trainer,
the shipped model, and the page section in both languages."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
from app.i18n import fill
from app.i18n import LANGS
from tests.apptest_util import section_script
import torch

from model.family import family_task, load_family_dir, save_family_dir
from model.family import digits as D
from model.family.vit import (ViT, ViTConfig, VitDigitsTask, attention_rollout, classify, cls_rollout, image_patches,
                              neighbour_similarity, position_similarity, score_split)
from model.messages import UserError
from tests.apptest_read import charts

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "assets" / "models" / "vit-digits"
DIGEST = "87ff0c9e40dc7e2c0e34e7257799c2e3f3aec1a016363bb11cad869ec428a826"  # also in assets/digits/README.md
PER_CLASS = [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
TINY = ViTConfig(d_model=16, n_heads=2, d_ff=32, n_layers=2, dropout=0.0)


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def tiny_model(cfg: ViTConfig = TINY, seed: int = 0) -> ViT:
    torch.manual_seed(seed)
    return ViT(cfg).eval()


# ----------------------------------------------------------------------------- the asset and the split

def test_asset_loads_without_pickle_and_is_the_uci_test_set():
    with np.load(D.DIGITS_FILE, allow_pickle=False) as z:
        assert sorted(z.files) == ["images", "labels"]
    images, labels = D.load_digits()
    assert images.shape == (1797, 8, 8) and images.dtype == np.uint8
    assert labels.shape == (1797,) and labels.dtype == np.uint8
    assert images.min() == 0 and images.max() == 16 and set(np.unique(labels)) == set(range(10))
    assert np.bincount(labels).tolist() == PER_CLASS
    assert hashlib.sha256(images.tobytes() + labels.tobytes()).hexdigest() == DIGEST
    assert DIGEST in (ROOT / "assets" / "digits" / "README.md").read_text(encoding="utf-8")
    assert not images.flags.writeable  # shared, read-only


def test_a_damaged_asset_is_a_clear_error(tmp_path):
    bad = tmp_path / "digits.npz"
    np.savez(bad, images=np.zeros((3, 4, 4), np.uint8), labels=np.zeros(3, np.uint8))
    with pytest.raises(D.DigitsError, match="expected images"):
        D.load_digits(bad)
    with pytest.raises(D.DigitsError, match="not found"):
        D.load_digits(tmp_path / "none.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(D.DigitsError):
        D.load_digits(tmp_path / "junk.npz")


def test_split_is_deterministic_disjoint_complete_and_stratified():
    first = {k: v.copy() for k, v in D.split_indices().items()}
    D.split_indices.cache_clear()
    again = D.split_indices()
    assert all(np.array_equal(first[k], again[k]) for k in D.SPLITS)
    assert not np.array_equal(D.split_indices(seed=1)["test"], first["test"])  # the seed matters
    sets = [set(first[k].tolist()) for k in D.SPLITS]
    assert all(not (a & b) for i, a in enumerate(sets) for b in sets[i + 1:])
    assert set().union(*sets) == set(range(1797))
    _, labels = D.load_digits()
    for name, frac in D.FRACTIONS.items():
        counts = np.bincount(labels[first[name]], minlength=10)
        assert np.all(np.abs(counts - frac * np.array(PER_CLASS)) <= 1), (name, counts)
    assert [len(first[k]) for k in D.SPLITS] == [1258, 179, 360]
    images, test_labels = D.split("test")
    assert images.shape == (360, 8, 8) and np.array_equal(test_labels, labels[first["test"]])


def test_training_batches_depend_only_on_their_arguments():
    x1, y1 = D.train_batch(5, 0, 0, 32)
    x2, y2 = D.train_batch(5, 0, 0, 32)
    assert np.array_equal(x1, x2) and np.array_equal(y1, y2)
    x3, _ = D.train_batch(6, 0, 0, 32)
    x4, _ = D.train_batch(5, 1, 0, 32)
    assert not np.array_equal(x1, x3) and not np.array_equal(x1, x4)
    assert x1.shape == (32, 8, 8) and x1.dtype == np.uint8 and y1.dtype == np.int64
    # without augmentation every image is one of the train split's
    plain, labels = D.train_batch(5, 0, 0, 32, augment=False)
    train_images, _ = D.split("train")
    flat = {im.tobytes() for im in train_images}
    assert all(im.tobytes() in flat for im in plain)


def test_shift_moves_by_one_pixel_and_fills_with_zero():
    img = np.zeros((1, 8, 8), np.uint8)
    img[0, 0, 0], img[0, 4, 4] = 16, 7
    down_right = D.shift(img, np.array([1]), np.array([1]))[0]
    assert down_right[1, 1] == 16 and down_right[5, 5] == 7 and down_right.sum() == 23
    up_left = D.shift(img, np.array([-1]), np.array([-1]))[0]
    assert up_left[3, 3] == 7 and up_left.sum() == 7  # the corner pixel left the frame
    assert np.array_equal(D.shift(img, np.array([0]), np.array([0])), img)


# ----------------------------------------------------------------------------- an image typed as text

def test_grid_text_round_trip_and_characters():
    images, _ = D.split("test")
    for im in images[:20]:
        text = D.image_to_text(im)
        assert len(text.splitlines()) == 8 and all(len(r) == 8 for r in text.splitlines())
        assert np.array_equal(D.image_from_text(text), im)
    assert D.image_from_text("\n  #.......\n" + "........\n" * 7 + "\n")[0, 0] == 16  # blank lines, spaces ignored
    img = D.image_from_text("0123456g\n89abcdef\n" + "#A......\n" + "........\n" * 5)
    assert img[0].tolist() == [0, 1, 2, 3, 4, 5, 6, 16] and img[1].tolist() == list(range(8, 16))
    assert img[2, :2].tolist() == [16, 10]


@pytest.mark.parametrize("text, code", [
    ("", "family_vit.errors.grid_empty_text"),
    ("   \n \n", "family_vit.errors.grid_empty_text"),
    ("#.......\n" * 7, "family_vit.errors.grid_size"),
    ("#........\n" * 8, "family_vit.errors.grid_size"),
    ("#......x\n" * 8, "family_vit.errors.grid_chars"),
    ("<script>\n" * 8, "family_vit.errors.grid_chars"),
    ("........\n" * 8, "family_vit.errors.grid_blank"),
    ("00000000\n" * 8, "family_vit.errors.grid_blank"),
])
def test_bad_grids_are_clear_user_errors(text, code):
    with pytest.raises(UserError) as e:
        D.image_from_text(text)
    assert e.value.message.code == code


def test_toggle_pixel_and_lenient_canvas():
    blank = D.blank_text()
    one = D.toggle_pixel(blank, 2, 3)
    img = D.image_from_text(one)
    assert img[2, 3] == 16 and img.sum() == 16
    assert D.toggle_pixel(one, 2, 3) == blank
    assert D.toggle_pixel(one, 9, 9) == one  # off the canvas: nothing changes
    messy = "#x\n..#"  # short rows, an unknown character: read as far as it goes
    img = D.lenient_image(messy)
    assert img[0, 0] == 16 and img[0, 1] == 0 and img[1, 2] == 16 and img.sum() == 32


# ----------------------------------------------------------------------------- the configuration

def test_config_round_trip_and_unknown_keys():
    cfg = ViTConfig(patch_size=4, upsample=2, d_model=32, n_heads=4, n_layers=1)
    assert ViTConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    with pytest.raises(ValueError, match="unknown config keys"):
        ViTConfig.from_dict({**cfg.to_dict(), "vocab_size": 3})
    for bad in ({"patch_size": 3}, {"d_model": 30, "n_heads": 4}, {"dropout": 1.0}, {"activation": "tanh"},
                {"n_layers": 0}, {"norm_first": "yes"}, {"patch_size": 2.0}):
        with pytest.raises(ValueError):
            ViTConfig(**bad)


def test_patch_and_token_counts():
    assert (ViTConfig().n_patches, ViTConfig().n_tokens, ViTConfig().grid) == (16, 17, 4)
    up = ViTConfig(upsample=2, patch_size=4)
    assert (up.side, up.n_patches, up.n_tokens, up.patch_dim) == (16, 16, 17, 16)
    assert ViTConfig(patch_size=1).n_tokens == 65
    enc = ViTConfig().encoder_config()
    assert enc.architecture == "encoder-only" and enc.positional == "learned" and enc.norm_first
    assert enc.activation == "gelu" and enc.max_len == 17 and enc.n_encoder_layers == 4


def test_default_config_honours_the_trainer_flags():
    import argparse
    task = family_task("vit-digits")
    assert isinstance(task, VitDigitsTask) and task.config_class is ViTConfig
    none = argparse.Namespace(d_model=None, heads=None, d_ff=None, layers=None, dropout=None, max_len=64)
    assert task.default_config(none) == ViTConfig()
    some = argparse.Namespace(d_model=32, heads=2, d_ff=48, layers=1, dropout=0.0, max_len=64)
    cfg = task.default_config(some)
    assert (cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.n_layers, cfg.dropout) == (32, 2, 48, 1, 0.0)


# ----------------------------------------------------------------------------- the model

def test_the_layers_are_the_papers_encoder_layers():
    from model.nn.attention import MultiHeadAttention
    from model.nn.layers import EncoderLayer
    model = tiny_model()
    assert len(model.layers) == TINY.n_layers and all(isinstance(l, EncoderLayer) for l in model.layers)
    assert all(isinstance(l.self_attn, MultiHeadAttention) for l in model.layers)
    assert model.position.shape == (TINY.n_tokens, TINY.d_model) and model.cls_token.shape == (1, 1, TINY.d_model)
    assert model.patch_embed.in_features == TINY.patch_dim


def test_patches_in_reading_order():
    img = torch.arange(64, dtype=torch.float32).reshape(1, 8, 8) * 16 / 63
    p = image_patches(img, ViTConfig())
    assert p.shape == (1, 16, 4)
    # patch 5 = grid row 1, column 1: pixels (2,2) (2,3) (3,2) (3,3)
    assert torch.allclose(p[0, 5] * 63, torch.tensor([18.0, 19.0, 26.0, 27.0]))
    up = image_patches(img, ViTConfig(upsample=2, patch_size=4))
    assert up.shape == (1, 16, 16) and torch.allclose(up[0, 5], p[0, 5].reshape(2, 2).repeat_interleave(2, 0)
                                                      .repeat_interleave(2, 1).reshape(-1))


def test_forward_shapes_and_attention_rows():
    model = tiny_model()
    x = torch.as_tensor(D.split("test")[0][:3].astype(np.float32))
    out = model(x)
    assert out.logits.shape == (3, 10) and out.attention is None
    out_w = model(x, return_attention=True)
    assert torch.allclose(out.logits, out_w.logits, atol=1e-5)  # the fused path and the explicit one agree
    assert len(out_w.attention) == TINY.n_layers
    for w in out_w.attention:
        assert w.shape == (3, TINY.n_heads, 17, 17)
        assert torch.allclose(w.sum(-1), torch.ones(3, TINY.n_heads, 17), atol=1e-5)
    with pytest.raises(ValueError, match="expected images"):
        model(torch.zeros(2, 7, 7))


def test_no_mask_every_patch_sees_every_patch():
    model = tiny_model()
    x = torch.as_tensor(D.split("test")[0][:1].astype(np.float32))
    w = torch.stack(model(x, return_attention=True).attention)
    assert (w > 0).all()


def test_classify_rollout_and_position_similarity():
    model = tiny_model()
    image = D.split("test")[0][0]
    c = classify(model, image)
    L, H = TINY.n_layers, TINY.n_heads
    assert c.probs.shape == (10,) and abs(c.probs.sum() - 1) < 1e-6
    assert c.attention.shape == (L, H, 17, 17) and np.allclose(c.attention.sum(-1), 1, atol=1e-5)
    assert c.cls_to_patches.shape == (L, H, 4, 4)
    assert np.allclose(c.cls_to_patches.reshape(L, H, -1), c.attention[:, :, 0, 1:])
    assert np.allclose(c.cls_to_patches.sum((-1, -2)) + c.cls_to_cls, 1, atol=1e-5)
    assert c.rollout.shape == (16,) and abs(c.rollout.sum() - 1) < 1e-9 and (c.rollout >= 0).all()
    assert c.rollout_grid.shape == (4, 4) and c.patches.shape == (16, 2, 2) and c.cell == 2.0
    assert 0 <= c.prediction < 10
    assert not model.training  # classify leaves the mode as it found it
    with pytest.raises(ValueError):
        classify(model, np.zeros((7, 8)))
    S = position_similarity(model)
    assert S.shape == (16, 16) and np.allclose(np.diag(S), 1) and np.allclose(S, S.T)
    near, far = neighbour_similarity(S, 4)
    assert -1 <= near <= 1 and -1 <= far <= 1


def test_rollout_by_hand():
    T = 3
    uniform = np.full((1, 1, T, T), 1 / T)
    # one layer: ½·A + ½·I
    assert np.allclose(attention_rollout(uniform), 0.5 * uniform[0, 0] + 0.5 * np.eye(T))
    # identity attention keeps every token to itself, so [CLS] reaches no patch: spread evenly
    eye = np.broadcast_to(np.eye(T), (2, 2, T, T))
    assert np.allclose(attention_rollout(eye), np.eye(T))
    assert np.allclose(cls_rollout(eye), [0.5, 0.5])
    rng = np.random.default_rng(0)
    a = rng.random((3, 2, 5, 5))
    a /= a.sum(-1, keepdims=True)
    R = attention_rollout(a)
    assert np.allclose(R.sum(-1), 1)
    mixed = [0.5 * layer.mean(0) + 0.5 * np.eye(5) for layer in a]
    assert np.allclose(R, mixed[2] @ mixed[1] @ mixed[0])
    assert abs(cls_rollout(a).sum() - 1) < 1e-12


def test_task_batch_loss_and_scores():
    task = family_task("vit-digits", seed=3)
    model = task.build(TINY)
    images, labels = task.batch(0, 3, 0, 8, "cpu")
    assert images.shape == (8, 8, 8) and images.dtype == torch.float32 and labels.dtype == torch.int64
    loss, n = task.loss(model, (images, labels))
    assert loss.ndim == 0 and torch.isfinite(loss) and n == 8
    model.eval()
    ev = task.evaluate(model, "cpu")
    assert set(ev) == {"val_loss", "val_accuracy"} and 0 <= ev["val_accuracy"] <= 1
    sc = task.score_test(model, "cpu")
    assert sc["test_images"] == 360 and 0 <= sc["test_accuracy"] <= 1 and sc["test_loss"] > 0


def test_save_and_load_a_family_folder(tmp_path):
    task = family_task("vit-digits")
    model = tiny_model()
    save_family_dir(tmp_path / "m", task, model, {"steps": 0})
    loaded = load_family_dir(tmp_path / "m", expect="vit-digits")
    assert loaded.config == TINY and loaded.meta["task"] == "vit-digits"
    x = torch.as_tensor(D.split("test")[0][:2].astype(np.float32))
    assert torch.allclose(loaded.model(x).logits, model(x).logits)


# ----------------------------------------------------------------------------- the trainer

@pytest.mark.slow
def test_training_smoke_through_the_trainer(tmp_path):
    from model.training.train import main
    out = tmp_path / "run"
    rc = main(["--task", "vit-digits", "--steps", "30", "--out", str(out), "--threads", "1", "--batch-size", "16",
               "--eval-every", "15", "--log-every", "10", "--ckpt-every", "30", "--d-model", "32", "--heads", "2",
               "--d-ff", "64", "--layers", "1", "--dropout", "0.0"])
    assert rc == 0
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    evals = [r for r in records if r["kind"] == "eval"]
    assert [r["step"] for r in evals] == [15, 30] and all(0 <= r["val_accuracy"] <= 1 for r in evals)
    trains = [r for r in records if r["kind"] == "train"]
    assert trains and all(np.isfinite(r["loss"]) for r in trains)
    loaded = load_family_dir(out / "model", expect="vit-digits")
    assert loaded.config.d_model == 32 and loaded.config.n_layers == 1
    assert loaded.meta["step"] == 30
    assert json.loads((out / "config.json").read_text())["d_model"] == 32


# ----------------------------------------------------------------------------- the shipped model

@pytest.fixture(scope="module")
def shipped():
    if not (SHIPPED / "config.json").is_file():
        pytest.skip("no shipped vit-digits model")
    return load_family_dir(SHIPPED, expect="vit-digits")


def test_shipped_model_is_small_and_described(shipped):
    size = sum(p.stat().st_size for p in SHIPPED.iterdir())
    assert size < 2_000_000
    meta = shipped.meta
    assert meta["source"] == "shipped" and meta["task"] == "vit-digits"
    assert "--task vit-digits" in meta["command"] and "--threads 1" in meta["command"]
    assert meta["train_seconds"] < 15 * 60
    assert meta["scores"]["test_accuracy"] >= 0.95 and meta["scores"]["test_images"] == 360
    card = (SHIPPED / "CARD.md").read_text(encoding="utf-8")
    assert "test_accuracy" in card and meta["command"] in card
    assert shipped.config.n_patches >= 16


def test_shipped_model_scores_what_its_card_says(shipped):
    scores = score_split(shipped.model, "test")
    assert scores["n"] == 360
    assert scores["accuracy"] >= shipped.meta["scores"]["test_accuracy"] - 0.01


def test_shipped_model_learned_the_2d_grid(shipped):
    S = position_similarity(shipped.model)
    near, far = neighbour_similarity(S, shipped.config.grid)
    assert near > far + 0.1


# ----------------------------------------------------------------------------- the figures

def test_figures_are_built_and_escape_labels():
    from app.charts import family_vit as F
    model = tiny_model()
    image = D.split("test")[0][0]
    c = classify(model, image)
    fig = F.patch_tokens(image, 4, 2.0, cls_label="<CLS>")
    assert len(fig.layout.annotations) == 17 and "&lt;CLS&gt;" in fig.layout.annotations[-1].text
    assert len(fig.layout.shapes) == 6
    fig = F.cls_attention_tiles(image, c.cls_to_patches, c.cls_to_cls, layer_title="<l>", first_layer=2)
    assert len(fig.data) == 2 and len(fig.layout.annotations) == TINY.n_layers * TINY.n_heads
    assert fig.layout.annotations[0].text.startswith("&lt;l&gt; 2")
    up = ViTConfig(upsample=2, patch_size=4, d_model=16, n_heads=2, d_ff=32, n_layers=1)
    cu = classify(tiny_model(up), image)
    assert cu.cell == 2.0 and F.cls_attention_tiles(image, cu.cls_to_patches, cu.cls_to_cls).data[0].z.shape == (8, 18)
    odd = ViTConfig(patch_size=8, d_model=16, n_heads=2, d_ff=32, n_layers=1)  # one patch: 1×1 grid
    co = classify(tiny_model(odd), image)
    assert co.rollout.tolist() == [1.0] and F.rollout_overlay(image, co.rollout_grid, co.cell).data
    fig = go.Figure(F.class_probabilities(c.probs, predicted=3, true_label=5))
    assert fig.data[0].marker.color[3] != fig.data[0].marker.color[0] and len(fig.layout.shapes) == 1
    S = position_similarity(model)
    assert go.Figure(F.position_similarity_map(S)).data[0].z.shape == (16, 16)
    assert F.patch_similarity_grid(S[5], 4, 5).data[0].z.shape == (4, 4)


# ----------------------------------------------------------------------------- the section

SCRIPT = section_script("""
from pages.family import vit as section
if st.session_state.pop('_click', None):  # what the canvas's callback gets from a stroke over one pixel
    from app.fast.canvas import drawn_pixels
    section._drawn(drawn_pixels([16 if i == 19 else 0 for i in range(64)], 8, 16))
section.render()
""")


@pytest.fixture
def model_for_section(monkeypatch, tmp_path):
    """The shipped model when there is one, else an untrained one in a run folder."""
    if not (SHIPPED / "config.json").is_file():
        save_family_dir(tmp_path / "runs" / "x" / "model", family_task("vit-digits"), tiny_model(), {"step": 0})
        monkeypatch.setenv("ATLAS_RUNS_DIR", str(tmp_path / "runs"))
    else:
        monkeypatch.setenv("ATLAS_RUNS_DIR", str(tmp_path / "no-runs"))


def _clean(at):
    assert not at.exception, [e.value for e in at.exception]


@pytest.mark.slow
@pytest.mark.parametrize("lang", list(LANGS))
def test_section(lang, model_for_section):
    from streamlit.testing.v1 import AppTest

    from app.i18n import catalogue
    words = catalogue(lang)
    at = AppTest.from_string(SCRIPT.format(lang=lang), default_timeout=120)
    at.run()
    _clean(at)
    assert at.header[0].value == words["family_vit.header"]
    test_images, test_labels = D.split("test")
    grid = at.text_area(key="fam_vit_grid")
    assert grid.value == D.image_to_text(test_images[0])
    labels = [m.label for m in at.metric]
    assert words["family_vit.predicted"] in labels and words["family_vit.neighbours"] in labels
    n_charts = len(charts(at))
    assert n_charts == 6  # tokens, probabilities, tiles, rollout, similarity, one patch (the canvas: a component)
    caption = fill(words["family_vit.is_test_digit"], dict(index=0, label=int(test_labels[0])))
    assert caption in [c.value for c in at.caption]

    # another test digit: the canvas follows
    at.number_input(key="fam_vit_index").set_value(42).run()
    _clean(at)
    assert at.text_area(key="fam_vit_grid").value == D.image_to_text(test_images[42])
    assert fill(words["family_vit.is_test_digit"], dict(index=42, label=int(test_labels[42]))) in [c.value for c in at.caption]
    assert at.query_params.get("vit_index") in ("42", ["42"])  # the link follows

    # a typed grid: a vertical bar
    at.text_area(key="fam_vit_grid").set_value("...##...\n" * 8).run()
    _clean(at)
    assert words["family_vit.is_drawing"] in [c.value for c in at.caption]
    assert len(charts(at)) == n_charts

    # one layer only, another patch
    at.selectbox(key="fam_vit_layer").set_value(1)
    at.session_state["fam_vit_patch"] = 1  # as a link or a tour stop sets it (the slider is answered in the browser)
    at.run()
    assert _patch(at) == 1
    _clean(at)

    # an empty canvas -> a message, not a traceback; then a stroke on the canvas draws a pixel
    at.button(key="fam_vit_clear").click().run()
    _clean(at)
    assert at.text_area(key="fam_vit_grid").value == D.blank_text()
    assert words["family_vit.errors.grid_blank"] in [i.value for i in at.info]
    at.session_state["_click"] = True
    at.run()
    _clean(at)
    drawn = D.image_from_text(at.text_area(key="fam_vit_grid").value)
    assert drawn[2, 3] == 16 and drawn.sum() == 16

    # a bad grid -> the message names the problem
    at.text_area(key="fam_vit_grid").set_value("#......x\n" * 8).run()
    _clean(at)
    assert any(fill(words["family_vit.errors.grid_chars"], dict(count=1)) in e.value for e in at.error)
    at.text_area(key="fam_vit_grid").set_value("#.\n#.").run()
    _clean(at)
    assert any(fill(words["family_vit.errors.grid_size"], dict(rows=2, cols="2")) in e.value for e in at.error)
    at.text_area(key="fam_vit_grid").set_value("").run()
    _clean(at)
    assert words["family_vit.errors.grid_empty_text"] in [e.value for e in at.error]

    # back to the test digit
    at.button(key="fam_vit_use").click().run()
    _clean(at)
    assert at.text_area(key="fam_vit_grid").value == D.image_to_text(test_images[42])


@pytest.mark.slow
def test_section_from_a_link(model_for_section):
    """A shared link with only an index puts that test digit on the canvas; a bad index is ignored."""
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_string(SCRIPT.format(lang="en"), default_timeout=120)
    at.query_params["vit_index"] = "7"
    at.query_params["vit_layer"] = "99"
    at.run()
    _clean(at)
    assert at.number_input(key="fam_vit_index").value == 7
    assert at.text_area(key="fam_vit_grid").value == D.image_to_text(D.split("test")[0][7])
    assert at.selectbox(key="fam_vit_layer").value == 0


@pytest.mark.slow
@pytest.mark.parametrize("lang", list(LANGS))
def test_section_in_the_real_page(lang, model_for_section):
    """Through app/main.py and pages/family.py, as a shared link opens it (the concept links resolve)."""
    from tests.apptest_util import assert_clean, open_link

    from app.i18n import catalogue
    at = open_link("family.py", {"member": "vit", "vit_index": "3", "vit_patch": "1"}, lang=lang)
    assert_clean(at)
    assert catalogue(lang)["family_vit.header"] in [h.value for h in at.header]
    assert at.text_area(key="fam_vit_grid").value == D.image_to_text(D.split("test")[0][3])
    assert _patch(at) == 1


def _patch(at) -> int:
    """The patch the browser's patch slider shows first (app/fast/choice.py)."""
    from tests.apptest_read import choice_specs
    spec = next(s for s in choice_specs(at) if s.get("channel") == "vit-patch")
    return spec["values"][spec["index"]]


@pytest.mark.slow
def test_every_patch_the_browser_shows_is_what_the_server_draws(monkeypatch):
    from tests.apptest_read import array_of, charts
    from tests.apptest_util import assert_clean, open_link
    at = open_link("family.py", {"member": "vit"}, lang="en")
    assert_clean(at)
    mine = next(c for c in charts(at) if c.id.endswith("fam-vit-patch-similarity"))
    n = len(mine.follow["channels"][0]["values"])
    for p in (1, n):
        monkeypatch.setenv("ATLAS_ATTENTION_VIEW", "server")
        server = open_link("family.py", {"member": "vit", "vit_patch": str(p)}, lang="en")
        monkeypatch.delenv("ATLAS_ATTENTION_VIEW")
        ref = next(c for c in charts(server) if c.id.endswith("fam-vit-patch-similarity")).figure
        got = mine.variant(p - 1)
        assert np.allclose(array_of(got["data"][0]["z"]), array_of(ref["data"][0]["z"]), atol=1e-6)
        assert got["data"][0]["text"] == ref["data"][0]["text"]
        assert got["layout"]["shapes"][0]["x0"] == ref["layout"]["shapes"][0]["x0"]
        assert got["layout"]["title"]["text"] == ref["layout"]["title"]["text"]


@pytest.mark.slow
def test_section_with_unusual_models(monkeypatch, tmp_path):
    """Models a learner may train: one patch only (no slider, no neighbour pairs), an upsampled image, one layer."""
    from streamlit.testing.v1 import AppTest
    task = family_task("vit-digits")
    odd = {"one-patch": ViTConfig(patch_size=8, d_model=16, n_heads=2, d_ff=32, n_layers=1),
           "upsampled": ViTConfig(upsample=2, patch_size=4, d_model=16, n_heads=4, d_ff=32, n_layers=1)}
    for name, cfg in odd.items():
        save_family_dir(tmp_path / "runs" / name / "model", task, tiny_model(cfg), {"step": 0})
    monkeypatch.setenv("ATLAS_RUNS_DIR", str(tmp_path / "runs"))
    at = AppTest.from_string(SCRIPT.format(lang="en"), default_timeout=120)
    at.run()
    _clean(at)
    picker = at.selectbox(key="fam_vit_model")
    for name in odd:
        picker.set_value(f"run: {name}").run()
        _clean(at)
        assert f"{odd[name].n_tokens} tokens" in at.caption[0].value
        at.selectbox(key="fam_vit_layer").set_value(1).run()
        _clean(at)


def test_canvas_takes_only_a_grid_of_pixel_values():
    """What the drawing canvas sends comes over the socket: only a flat list of size² numbers is a drawing, each
    rounded and held to 0..top; anything else is ignored (None), never an exception."""
    from app.fast.canvas import drawn_pixels
    rows = drawn_pixels([0] * 63 + [16], 8, 16)
    assert len(rows) == 8 and all(len(r) == 8 for r in rows) and rows[7][7] == 16 and sum(map(sum, rows)) == 16
    assert drawn_pixels([99.6, -3] + [0] * 62, 8, 16)[0][:2] == [16, 0]
    for bad in (None, "x" * 64, [0] * 63, [0] * 65, [True] * 64, ["1"] * 64, [float("nan")] * 64, {"a": 1}):
        assert drawn_pixels(bad, 8, 16) is None, bad
