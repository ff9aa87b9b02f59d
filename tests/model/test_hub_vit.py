"""ViT from the Hugging Face layout against transformers: tiny random ViTForImageClassification and ViTModel
checkpoints saved with save_pretrained (offline) load through model.hub.load_pretrained into the family's own ViT
(the same EncoderLayer as every model here), with logits within 1e-4 and every attention map within 1e-5; the
image processor's steps (resize, crop, rescale, normalise) match transformers' PIL backend; what cannot be run
exactly is refused by name."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest
from app.i18n import LANGS

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from model.hub import HubError, cached_models, load_pretrained, size_summary, supported  # noqa: E402
from model.hub import vit as hv  # noqa: E402

NAMES = ["tabby cat", "golden retriever", "teapot", "<b>bold</b> & co", "espresso", "daisy", "volcano"]


def _save(folder, config_kwargs, head: bool = True, processor: dict | None = None, seed: int = 0):
    from transformers import ViTConfig, ViTForImageClassification, ViTModel
    torch.manual_seed(seed)
    kw = dict(hidden_size=48, num_hidden_layers=3, num_attention_heads=4, intermediate_size=61, image_size=32,
              patch_size=8, initializer_range=0.2, id2label=dict(enumerate(NAMES)),
              label2id={n: i for i, n in enumerate(NAMES)})
    kw.update(config_kwargs)
    cfg = ViTConfig(**kw)
    model = (ViTForImageClassification if head else ViTModel)(cfg).eval()
    with torch.no_grad():  # LayerNorms away from 1/0 too, so that every weight matters
        for name, p in model.named_parameters():
            if "layernorm" in name:
                p.add_(0.3 * torch.randn_like(p))
    model.save_pretrained(folder)
    if processor is not None:
        (folder / hv.PROCESSOR_FILE).write_text(json.dumps(processor))
    return model


def _hf(folder):
    from transformers import AutoModel, ViTForImageClassification
    cfg = json.loads((folder / "config.json").read_text())
    cls = ViTForImageClassification if "ViTForImageClassification" in (cfg.get("architectures") or []) else AutoModel
    return cls.from_pretrained(folder, attn_implementation="eager").eval()


CASES = {
    "classifier": ({}, True),
    "no-qkv-bias-gelu-tanh": ({"qkv_bias": False, "hidden_act": "gelu_new", "layer_norm_eps": 1e-6}, True),
    "small-patches-grey": ({"image_size": 24, "patch_size": 4, "num_channels": 1, "num_attention_heads": 3}, True),
    "vit-model-with-pooler": ({}, False),
    "vit-model-one-layer": ({"num_hidden_layers": 1, "num_attention_heads": 6}, False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_logits_and_every_attention_map_match_transformers(tmp_path, case):
    kwargs, head = CASES[case]
    folder = tmp_path / case
    _save(folder, kwargs, head=head)
    ref = _hf(folder)
    loaded = load_pretrained(folder)
    cfg = loaded.config
    assert loaded.meta["task"] == "image" and loaded.meta["family"] == "vit"
    torch.manual_seed(1)
    x = torch.randn(3, cfg.channels, cfg.image_size, cfg.image_size)
    with torch.no_grad():
        theirs = ref(pixel_values=x, output_attentions=True)
        ours = loaded.model(x, return_attention=True)
    assert len(ours.attention) == len(theirs.attentions) == cfg.n_layers
    for layer, (a, b) in enumerate(zip(ours.attention, theirs.attentions)):
        assert a.shape == b.shape == (3, cfg.n_heads, cfg.n_tokens, cfg.n_tokens)
        assert (a - b).abs().max().item() < 1e-5, (case, layer)
    assert max(a.max().item() for a in ours.attention) > 3 / cfg.n_tokens  # far from uniform: the test can fail
    if head:
        assert ours.logits.shape == theirs.logits.shape
        assert (ours.logits - theirs.logits).abs().max().item() < 1e-4
        assert theirs.logits.std().item() > 0.1  # logits that differ between classes
    else:
        assert ours.logits is None  # a ViTModel has no classifier: attention only
        assert loaded.model.num_parameters() == sum(  # every tensor but the pooler's, which nothing here reads
            p.numel() for n, p in ref.named_parameters() if not n.startswith("pooler."))


def test_image_processor_matches_transformers_pil_backend(tmp_path):
    from transformers.models.vit.image_processing_pil_vit import ViTImageProcessorPil
    rng = np.random.default_rng(0)
    pictures = [rng.integers(0, 256, size=s, dtype=np.uint8) for s in [(50, 70, 3), (32, 32, 3), (19, 41, 3)]]
    settings = [
        {},
        {"size": {"height": 32, "width": 32}, "resample": 3, "image_mean": [0.485, 0.456, 0.406],
         "image_std": [0.229, 0.224, 0.225]},
        {"size": {"shortest_edge": 36}, "do_center_crop": True, "crop_size": {"height": 32, "width": 32}},
        {"size": {"height": 32, "width": 32}, "do_normalize": False, "rescale_factor": 0.5},
    ]
    for k, setting in enumerate(settings):
        folder = tmp_path / f"p{k}"
        folder.mkdir()
        ViTImageProcessorPil(**setting).save_pretrained(folder)
        theirs = ViTImageProcessorPil.from_pretrained(folder)
        ours = hv.ImageProcessor.load(folder, {"model_type": "vit", "image_size": 32})
        for picture in pictures:
            want = theirs(picture, return_tensors="np")["pixel_values"][0]
            got, shown = ours(picture)
            assert got.shape == want.shape and shown.shape == (*want.shape[1:], 3), (setting, picture.shape)
            assert np.abs(got - want).max() < 1e-6, (setting, picture.shape)


def test_see_image_reads_a_picture_with_its_labels(tmp_path):
    folder = tmp_path / "cls"
    _save(folder, {}, processor={"size": {"height": 32, "width": 32}, "do_resize": True, "resample": 2,
                                 "image_mean": [0.5] * 3, "image_std": [0.5] * 3})
    loaded = load_pretrained(folder)
    ref = _hf(folder)
    rng = np.random.default_rng(3)
    picture = rng.integers(0, 256, size=(40, 60, 3), dtype=np.uint8)
    seen = hv.see_image(loaded, picture)
    pixels, _ = loaded.tokenizer(picture)
    with torch.no_grad():
        probs = torch.softmax(ref(pixel_values=torch.as_tensor(pixels)[None]).logits[0], -1).numpy()
    order = np.argsort(-probs)[:5]
    assert [name for name, _ in seen.top] == [NAMES[i] for i in order]  # names from id2label, best first
    assert np.allclose([p for _, p in seen.top], probs[order], atol=1e-5)
    L, H, g = 3, 4, 4
    assert seen.cls_to_patches.shape == (L, H, g, g) and seen.cls_to_cls.shape == (L, H)
    assert np.allclose(seen.cls_to_patches.sum(axis=(2, 3)) + seen.cls_to_cls, 1.0, atol=1e-5)
    assert seen.rollout.shape == (g, g) and abs(seen.rollout.sum() - 1) < 1e-9
    assert seen.image.shape == (32, 32, 3) and seen.image.dtype == np.uint8
    # a ViTModel: attention, no classes
    bare = tmp_path / "bare"
    _save(bare, {}, head=False)
    assert hv.see_image(load_pretrained(bare), picture).top == []


def test_read_image_takes_image_files_and_refuses_others():
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(np.full((5, 7), 200, dtype=np.uint8)).save(buf, format="PNG")  # grey: becomes RGB
    img = hv.read_image(buf.getvalue())
    assert img.shape == (5, 7, 3) and img.dtype == np.uint8 and (img == 200).all()
    for bad in (b"", b"not an image", buf.getvalue()[:40]):
        with pytest.raises(ValueError):
            hv.read_image(bad)


def test_shipped_pictures_are_small_readable_images():
    from model.hub.vit import shipped_images
    found = shipped_images()
    assert 2 <= len(found) <= 4
    for path in found.values():
        assert path.stat().st_size < 60_000
        img = hv.read_image(path.read_bytes())
        assert img.ndim == 3 and min(img.shape[:2]) >= 64


def test_listed_as_an_image_model_not_a_text_model(tmp_path):
    """The inspector lists text models (supported), the family page image models (supported(images=True))."""
    folder = tmp_path / "models--someone--tiny-vit" / "snapshots" / "abc"
    _save(folder, {})
    assert supported(folder, images=True) and not supported(folder)
    assert list(cached_models(tmp_path, images=True)) == ["someone/tiny-vit"]
    assert cached_models(tmp_path) == {}
    summary = size_summary(folder)
    assert (summary["family"], summary["layers"], summary["d_model"], summary["heads"]) == ("vit", 3, 48, 4)
    assert summary["parameters"] == load_pretrained(folder).model.num_parameters()


def _edit(folder, config=None, weights=None):
    from safetensors.torch import load_file, save_file
    if config:
        cfg = json.loads((folder / "config.json").read_text())
        cfg.update(config)
        (folder / "config.json").write_text(json.dumps(cfg))
    if weights:
        state = load_file(str(folder / "model.safetensors"))
        weights(state)
        save_file(state, str(folder / "model.safetensors"))


REFUSED = {
    "non-square image": (dict(config={"image_size": [32, 48]}), "image_size"),
    "unknown activation": (dict(config={"hidden_act": "quick_gelu"}), "hidden_act"),
    "heads do not divide": (dict(config={"num_attention_heads": 5}), "num_attention_heads"),
    "config disagrees with weights": (dict(config={"intermediate_size": 64}), "shape"),
    "too many labels for the head": (dict(config={"id2label": {str(i): str(i) for i in range(9)}}), "classifier"),
    "unknown tensor": (dict(weights=lambda s: s.__setitem__("vit.extra.weight", torch.zeros(2))), "vit.extra.weight"),
    "missing tensor": (dict(weights=lambda s: s.pop("vit.layernorm.bias")), "vit.layernorm.bias"),
    "not finite": (dict(weights=lambda s: s["vit.embeddings.cls_token"].fill_(float("nan"))), "not finite"),
    "whole numbers": (dict(weights=lambda s: s.__setitem__("classifier.bias", torch.zeros(7, dtype=torch.int64))),
                      "int64"),
    "absurd layer count": (dict(config={"num_hidden_layers": 10**9}), "num_hidden_layers"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_what_cannot_be_run_exactly_is_refused_by_name(tmp_path, case):
    edit, words = REFUSED[case]
    folder = tmp_path / "m"
    _save(folder, {})
    _edit(folder, **edit)
    with pytest.raises(HubError) as refused:
        load_pretrained(folder)
    assert words in str(refused.value), str(refused.value)


def test_processor_options_that_are_not_run_are_refused(tmp_path):
    for bad, words in [({"size": {"longest_edge": 40}}, "size"), ({"resample": 9}, "resample"),
                       ({"image_std": [0.5, 0.0, 0.5]}, "image_std"), ({"image_mean": [0.5]}, "image_mean"),
                       ({"do_pad": True}, "do_pad")]:
        (tmp_path / hv.PROCESSOR_FILE).write_text(json.dumps(bad))
        with pytest.raises(HubError) as refused:
            hv.ImageProcessor.load(tmp_path, {"model_type": "vit"})
        assert words in str(refused.value)


# ----------------------------------------------------------------------------- the family page's real ViT

def _section_script():
    from tests.apptest_util import section_script
    return section_script("""
from pages.family import vit as section
section.render()
""")


@pytest.mark.parametrize("lang", list(LANGS))
def test_family_page_opens_a_real_vit_on_a_picture(tmp_path, monkeypatch, lang):
    """The ViT section finds a ViT in pretrained/ (none in the cache), shows a shipped picture's five most
    probable classes with their names from id2label (escaped once, in the figure), one attention tile per head of
    the chosen layer and the rollout; a folder that is not a model and a missing picture are one sentence each."""
    from streamlit.testing.v1 import AppTest

    from app.i18n import catalogue
    from tests.apptest_read import charts
    words = catalogue(lang)
    _save(tmp_path / "pretrained" / "tiny-vit", {}, processor={"size": {"height": 32, "width": 32}})
    monkeypatch.setenv("ATLAS_PRETRAINED_DIR", str(tmp_path / "pretrained"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "no-cache"))
    at = AppTest.from_string(_section_script().format(lang=lang), default_timeout=120)
    at.session_state["fam_vit_real_box__open"] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="fam_vit_real_model").value == "tiny-vit"
    figs = {c.id.split("atlas-chart-")[-1]: c.figure for c in charts(at) if "fam-vit-real" in c.id}
    assert set(figs) == {"fam-vit-real-top", "fam-vit-real-tiles", "fam-vit-real-rollout"}, list(figs)
    bars = figs["fam-vit-real-top"]["data"][0]
    names = bars["y"] if "y" in bars and isinstance(bars["y"], list) else bars["x"]
    assert len(names) == 5 and set(n.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
                                   for n in names) <= set(NAMES)
    assert all("<b>" not in n for n in names)  # a label with markup is shown as text
    tiles = figs["fam-vit-real-tiles"]
    assert len(tiles["data"]) == 1 + 4  # the picture, then one overlay per head
    assert at.selectbox(key="fam_vit_real_layer").value == 3  # the last layer first
    assert len(at.selectbox(key="fam_vit_real_layer").options) == 3
    at.selectbox(key="fam_vit_real_layer").set_value(1).run()
    assert not at.exception
    assert words["family_vit.real.tiles_title"].format(layer=1) in json.dumps(
        [c.figure["layout"].get("title") for c in charts(at)], ensure_ascii=False)
    # another shipped picture, then the learner's own with nothing uploaded yet
    at.segmented_control(key="fam_vit_real_picture").set_value("house").run()
    assert not at.exception and not at.error
    at.segmented_control(key="fam_vit_real_picture").set_value("__upload__").run()
    assert words["family_vit.real.upload_first"] in [i.value for i in at.info]
    # a typed folder that holds no model: one sentence, no traceback
    at.selectbox(key="fam_vit_real_model").set_value("__folder__").run()
    at.text_input(key="fam_vit_real_folder").set_value(str(tmp_path / "nothing-here")).run()
    assert not at.exception
    assert any(words["family_vit.real.cannot_load"] in e.value for e in at.error)


def test_family_page_says_where_to_put_a_vit_when_there_is_none(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from app.i18n import catalogue
    monkeypatch.setenv("ATLAS_PRETRAINED_DIR", str(tmp_path / "pretrained"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "no-cache"))
    at = AppTest.from_string(_section_script().format(lang="en"), default_timeout=120)
    at.session_state["fam_vit_real_box__open"] = True
    at.run()
    assert not at.exception
    want = catalogue("en")["family_vit.real.none"].format(folder=str(tmp_path / "pretrained"))
    assert want in [i.value for i in at.info]
