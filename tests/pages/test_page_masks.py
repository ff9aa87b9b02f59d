"""The masks page through AppTest, both languages: the three masks before and after softmax, the three
kinds of attention, the architecture table, bad input, and models the page cannot use."""
from pathlib import Path

import numpy as np
import pytest
from app.i18n import LANGS
import torch

from app.resources import SHIPPED
from tests.apptest_read import errors, figures, metric, tables, title, z_of
from tests.apptest_util import assert_clean, run_page
from tests import apptest_util


@pytest.fixture(autouse=True)
def server_drawn_maps(monkeypatch):
    """The three kinds' layer and head sliders and maps as the server draws them (where the browser cannot draw the
    attention view); tests/pages/test_page_masks_view.py reads the browser's view."""
    monkeypatch.setenv("ATLAS_ATTENTION_VIEW", "server")


def run_with_model(tmp_path, monkeypatch, name: str, make, lang="en"):
    """The page with one run folder `name` (made by make(folder)) picked in the model selector."""
    monkeypatch.setenv("ATLAS_RUNS_DIR", str(tmp_path / "runs"))
    make(tmp_path / "runs" / name / "model")
    return run_page("masks.py", lang, setup=lambda a: a.session_state.__setitem__("mask_model", f"run: {name}"))


@pytest.mark.slow
def test_masks_page_en():
    at = run_page("masks.py", "en")
    assert_clean(at)
    caps = [c.value for c in at.caption if "largest weight on a masked cell" in c.value]
    assert len(caps) == 3 and all("**0** (exactly zero)" in c for c in caps)
    assert metric(at, "decoder self: largest weight on a future token") == 0.0
    figs = figures(at)
    weights = [f for f in figs if title(f).startswith("softmax")]
    scores = [f for f in figs if title(f).startswith("scores after the mask")]
    assert len(weights) == 3 and len(scores) == 3
    for w, s in zip(weights, scores):
        zw, zs = z_of(w), z_of(s)
        masked = np.isnan(zs)  # −∞ scores are drawn as empty cells
        assert masked.any()
        assert (zw[masked] == 0).all()  # exactly zero after the softmax
        assert np.allclose(zw.sum(-1), 1, atol=1e-6)
    # the causal one: upper triangle masked
    zc = z_of(scores[0])
    assert np.isnan(zc[np.triu_indices(zc.shape[0], 1)]).all() and not np.isnan(np.diag(zc)).any()
    # cross-attention: target queries on rows, source keys on columns
    at.radio(key="kind").set_value("cross").run()
    assert_clean(at)
    cross = next(f for f in figures(at) if title(f).startswith("encoder–decoder attention"))
    assert cross["layout"]["yaxis"]["title"]["text"].startswith("target (query)")
    assert cross["layout"]["xaxis"]["title"]["text"].startswith("source (key)")
    from model.lessons.probe import examples
    from model.data.tokenizer import load_tokenizer
    tok = load_tokenizer(Path(__file__).resolve().parents[2] / "assets" / "tokenizer")
    ex = examples()["masks"]
    # <s> + the target's pieces (queries) × the source's pieces (keys)
    assert z_of(cross).shape == (1 + len(tok.encode(ex["target"])), len(tok.encode(ex["source"])))
    # the seeded, untrained model (the default when no trained EN→KO model ships with the app):
    # its option value is the language-free id "seeded", shown with a translated label
    picker = at.selectbox(key="mask_model")
    assert "seeded, untrained model" in picker.options
    picker.set_value("seeded").run()
    assert_clean(at)
    assert any("untrained" in c.value for c in at.caption)
    assert metric(at, "decoder self: largest weight on a future token") == 0.0
    table = tables(at)[-1]
    assert list(table.iloc[:, 0]) == ["encoder-only", "decoder-only", "encoder-decoder"]
    assert table.iloc[2, 1] == "63.1M"  # paper_base, same as the overview page


def test_masks_page_ko_bad_input():
    at = run_page("masks.py", "ko")
    assert_clean(at)
    assert at.title[0].value == "마스크와 세 가지 어텐션"
    assert at.radio(key="kind").options == ["인코더 셀프 어텐션 (전체 → 전체)",
                                            "마스크드 디코더 셀프 어텐션 (과거와 현재)",
                                            "인코더–디코더 어텐션 (타깃 → 소스)"]
    lines = ["😀 🎉", "", "하나"] + [f"sentence {i}" for i in range(8)] + [" ".join(["word"] * 64)]
    at.text_area(key="mask_batch").set_value("\n".join(lines))
    at.text_input(key="kind_tgt").set_value("   ")
    at.run()
    assert_clean(at)
    assert any("6개 문장만" in w.value for w in at.warning)
    assert any("타깃 문장" in e for e in errors(at))
    at.text_area(key="mask_batch").set_value("\n\n").run()
    assert_clean(at)
    assert any("문장을 하나 이상" in e for e in errors(at))


@pytest.mark.slow
@pytest.mark.parametrize("lang", list(LANGS))
def test_every_kind_and_tab_in_both_languages(lang):
    at = run_page("masks.py", lang, setup=lambda a: a.session_state.__setitem__("mask_model", "seeded"))
    assert_clean(at)
    assert len(at.tabs) >= 3
    at.selectbox(key="mask_which").set_value(2).run()  # the longest sentence: no padding to show
    assert_clean(at)
    assert at.info, "the padding tab says the longest sentence has no padding"
    for kind in ("encoder_self", "decoder_self", "cross"):
        at.radio(key="kind").set_value(kind).run()
        assert_clean(at)
    table = tables(at)[-1]
    assert len(table) == 3 and len(table.columns) == 6


def _one_by_one(folder):
    """An encoder-decoder model with 1 layer and 1 head, as the training page allows (N = 1, h = 1)."""
    from model.training.checkpoint import save_model_dir
    from model.nn.config import TransformerConfig
    from model.data.tokenizer import load_tokenizer
    from model.nn.transformer import Transformer

    tok = load_tokenizer()
    cfg = TransformerConfig(vocab_size=tok.vocab_size, d_model=16, n_heads=1, d_ff=32, n_encoder_layers=1,
                            n_decoder_layers=1, dropout=0.0, max_len=64)
    torch.manual_seed(0)
    save_model_dir(folder, Transformer(cfg).eval(), tok, meta={"task": "en-ko"})


@pytest.mark.parametrize("lang", list(LANGS))
def test_masks_page_with_a_one_layer_one_head_model(tmp_path, monkeypatch, lang):
    """st.slider(1, 1) raises StreamlitInvalidMinMaxError: the head and layer pickers must not be
    sliders when there is only one head or layer."""
    at = run_with_model(tmp_path, monkeypatch, "one", _one_by_one, lang)
    assert_clean(at)
    assert at.selectbox(key="mask_model").value == "run: one"
    assert not [s for s in at.slider if s.key in ("mask_head", "kind_layer", "kind_head")]
    assert any("(하나뿐)" in c.value if lang == "ko" else "(the only one)" in c.value for c in at.caption)
    for kind in ("decoder_self", "cross"):
        at.radio(key="kind").set_value(kind).run()
        assert_clean(at)


def test_a_damaged_model_falls_back_to_the_seeded_one(tmp_path, monkeypatch):
    """A broken checkpoint gets a clear message (with the technical detail) and the seeded model."""
    def damaged(folder):
        _one_by_one(folder)
        (folder / "model.safetensors").write_bytes(b"\x00garbage" * 10)

    at = run_with_model(tmp_path, monkeypatch, "broken", damaged)
    assert_clean(at)
    shown = [e.replace("\\", "") for e in errors(at)]  # as the learner reads it: the name is Markdown-escaped
    assert shown and "Could not load “run: broken”" in shown[0] and "model.safetensors" in shown[0]
    assert any("seeded random weights" in c.value for c in at.caption)


@pytest.mark.skipif(not (SHIPPED["lm"] / "config.json").is_file(), reason="the shipped lm model is not built")
def test_the_picker_offers_only_models_the_page_can_show(tmp_path, monkeypatch):
    """The page shows an encoder-decoder's three attentions. The shipped "lm" is a decoder-only language model:
    offered in the picker, it showed the seeded, untrained model's maps under a warning. Now the picker lists
    only encoder-decoder models (and says so in its help); a decoder-only run is left out too, a link that
    names one is refused with a notice, and the seeded model says plainly that it is untrained."""
    from model.nn.config import TransformerConfig
    from model.training.checkpoint import save_model_dir
    from model.data.tokenizer import load_tokenizer
    from model.nn.transformer import Transformer

    def decoder_only(folder):
        tok = load_tokenizer()
        cfg = TransformerConfig(vocab_size=tok.vocab_size, d_model=16, n_heads=1, d_ff=32, n_encoder_layers=1,
                                n_decoder_layers=1, dropout=0.0, max_len=64, architecture="decoder-only")
        save_model_dir(folder, Transformer(cfg).eval(), tok, meta={"task": "lm"})

    for lang in LANGS:
        at = run_with_model(tmp_path, monkeypatch, "gpt-like", decoder_only, lang)
        assert_clean(at)
        picker = at.selectbox(key="mask_model")
        assert "lm" not in picker.options and "run: gpt-like" not in picker.options, picker.options
        assert "en-ko" in picker.options and picker.value == "en-ko"
        assert not at.warning, [w.value for w in at.warning]
        assert picker.help and ("encoder–decoder" in picker.help or "인코더–디코더" in picker.help)
    at = apptest_util.open_link("masks.py", {"model": "lm"}, lang="en")
    assert_clean(at)
    assert at.selectbox(key="mask_model").value == "en-ko"
    assert any("model" in m for m in apptest_util.toasts(at)), "a link naming a model the page cannot show"
    at.selectbox(key="mask_model").set_value("seeded").run()
    assert any("untrained" in c.value for c in at.caption)


@pytest.mark.parametrize("lang", list(LANGS))
def test_the_causal_mask_is_shown_on_decoder_scores(lang):
    """Section 1 laid the causal mask on the ENCODER's scores, which the encoder never masks.
    The causal views now show the decoder's first self-attention layer, the padding view the encoder's,
    and each says which."""
    from model.lessons.mask_demo import mask_demo_batch
    from model.data.tokenizer import load_tokenizer

    at = run_page("masks.py", lang, setup=lambda a: a.session_state.__setitem__("mask_model", "seeded"))
    assert_clean(at)
    tok = load_tokenizer()
    model = probe_model(tok.vocab_size)
    sentences = probe_examples()["masks"]["batch"]
    b = mask_demo_batch(model, [tok.encode(s) for s in sentences], tok.pad_id)
    n = b.lengths[0]
    figs = figures(at)
    scores = [f for f in figs if title(f).startswith("scores after the mask" if lang == "en" else "마스크 적용 후")]
    assert len(scores) == 3
    causal, padding, both = (z_of(f) for f in scores)
    lower = np.tril_indices(n)
    assert np.allclose(causal[lower], b.decoder_scores[0, 0, :n, :n].numpy()[lower], atol=1e-4)
    assert not np.allclose(causal[lower], b.encoder_scores[0, 0, :n, :n].numpy()[lower], atol=1e-3)
    keep = ~np.isnan(padding)
    assert np.allclose(padding[keep], b.encoder_scores[0, 0].numpy()[keep], atol=1e-4)
    keep = ~np.isnan(both)
    assert np.allclose(both[keep], b.decoder_scores[0, 0].numpy()[keep], atol=1e-4)
    text = "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption]).lower()
    for side in (("decoder", "encoder") if lang == "en" else ("디코더", "인코더")):
        assert (f"{side} self-attention" if lang == "en" else f"{side} 셀프 어텐션") in text


def probe_model(vocab_size):
    from model.lessons.probe import seeded_demo_model
    return seeded_demo_model(vocab_size)


def probe_examples():
    from model.lessons.probe import examples
    return examples()


def test_the_picked_sentence_survives_an_edit_of_its_text():
    """The sentence picker's labels hold the sentences' text: editing a sentence changes every label,
    and the browser keeps reporting the old one. The pick must stay on the same sentence."""
    from tests.pages.test_page_attention import browser_keeps

    at = run_page("masks.py", "en", setup=lambda a: a.session_state.__setitem__("mask_model", "seeded"))
    at.selectbox(key="mask_which").set_value(1).run()
    old = at.selectbox(key="mask_which").options[1]
    batch = at.text_area(key="mask_batch").value.splitlines()
    batch[1] = "I love red roses."
    at.text_area(key="mask_batch").set_value("\n".join(batch)).run()
    assert_clean(at)
    assert at.selectbox(key="mask_which").options[1] == "#2: I love red roses."
    browser_keeps(at, "mask_which", old)
    at.slider(key="mask_head").set_value(2).run()
    assert_clean(at)
    assert at.selectbox(key="mask_which").value == 1


# ---------------------------------------------------------------- links and kept inputs

def open_link(params: dict, lang: str = "en"):
    return apptest_util.open_link("masks.py", params, lang)


toasts = apptest_util.toasts


def test_a_link_opens_the_view_it_describes():
    from model.lessons.mask_demo import mask_demo_batch
    from model.lessons.probe import attention_maps
    from model.data.tokenizer import load_tokenizer

    batch, src, tgt = "the cat sat\nI love you very much", "my sister reads a book", "언니가 책을 읽는다"
    at = open_link({"model": "seeded", "batch": batch, "which": "2", "head": "3", "src": src, "tgt": tgt,
                    "kind": "cross", "layer": "2", "kind_head": "4", "preset": "paper_big"})
    assert_clean(at)
    assert not toasts(at)
    assert at.selectbox(key="mask_model").value == "seeded"
    assert at.text_area(key="mask_batch").value == batch
    assert at.selectbox(key="mask_which").value == 1
    assert at.slider(key="mask_head").value == 3
    assert (at.text_input(key="kind_src").value, at.text_input(key="kind_tgt").value) == (src, tgt)
    assert at.radio(key="kind").value == "cross"
    assert (at.slider(key="kind_layer").value, at.slider(key="kind_head").value) == (2, 4)
    assert at.selectbox(key="arch_preset").value == "paper_big"
    assert len(tables(at)[0]) == 2  # one row of token ids per sentence

    tok = load_tokenizer()
    model = probe_model(tok.vocab_size)
    b = mask_demo_batch(model, [tok.encode(s) for s in batch.splitlines()], tok.pad_id)
    n = b.lengths[1]
    causal = z_of(next(f for f in figures(at) if title(f).startswith("scores after the mask")))
    lower = np.tril_indices(n)  # sentence #2, head 3 of the decoder's first layer
    assert np.allclose(causal[lower], b.decoder_scores[1, 2, :n, :n].numpy()[lower], atol=1e-4)
    maps = attention_maps(model, tok.encode(src), [tok.bos_id] + tok.encode(tgt))
    cross = next(f for f in figures(at) if title(f).startswith("encoder–decoder attention"))
    assert "layer 2 · head 4" in title(cross)
    assert np.allclose(z_of(cross), maps["cross"][1, 3], atol=1e-5)
    assert tables(at)[-1].iloc[2, 1] != "63.1M"  # paper_big, not paper_base


BAD_LINK = {"model": "no-such-model", "batch": "x" * 100_000, "which": "<b>x</b>", "head": "99",
            "kind": "<b>cross</b>", "preset": "paper_huge", "src": "y" * 100_000}


def test_bad_link_values_fall_back_to_the_defaults_with_a_notice():
    fresh = run_page("masks.py", "en")
    at = open_link(BAD_LINK)
    assert_clean(at)
    shown = toasts(at)
    for name in BAD_LINK:
        assert any(f"“{name}”" in s for s in shown), (name, shown)
    assert all("<b>" not in s and "xxxx" not in s for s in shown)  # the notice never repeats the link's text
    for kind, key in (("selectbox", "mask_model"), ("text_area", "mask_batch"), ("selectbox", "mask_which"),
                      ("slider", "mask_head"), ("radio", "kind"), ("selectbox", "arch_preset"),
                      ("text_input", "kind_src")):
        assert getattr(at, kind)(key=key).value == getattr(fresh, kind)(key=key).value, key
    assert at.query_params["head"] == "1" and at.query_params["model"] == fresh.query_params["model"]
    assert not any("<b>" in m.value for m in at.markdown)


def test_a_head_beyond_the_new_model_falls_back():
    """Layer and head counts depend on the model: a kept or linked index the model lacks goes back to 1."""
    at = open_link({"model": "seeded", "layer": "3", "kind_head": "5"})
    assert_clean(at)
    assert at.slider(key="kind_layer").value == 1 and at.slider(key="kind_head").value == 1
    assert {"“layer”", "“kind_head”"} <= {s[s.index("“"):s.index("”") + 1] for s in toasts(at)}


def test_widget_changes_are_written_to_the_link():
    at = run_page("masks.py", "en", setup=lambda a: a.session_state.__setitem__("mask_model", "seeded"))
    assert at.query_params["model"] == "seeded" and at.query_params["kind"] == "encoder_self"
    at.text_area(key="mask_batch").set_value("a cat\nthe dog runs far away")
    at.radio(key="kind").set_value("decoder_self")
    at.slider(key="mask_head").set_value(2)
    at.slider(key="kind_layer").set_value(2)
    at.text_input(key="kind_tgt").set_value("개가 달린다")
    at.selectbox(key="arch_preset").set_value("paper_big")
    at.run()
    assert_clean(at)
    at.selectbox(key="mask_which").set_value(1).run()
    assert_clean(at)
    q = at.query_params
    assert q["batch"] == "a cat\nthe dog runs far away" and q["kind"] == "decoder_self"
    assert (q["head"], q["layer"], q["which"]) == ("2", "2", "2")
    assert q["tgt"] == "개가 달린다" and q["preset"] == "paper_big"


# Causal + padding: a query sees the real tokens up to and including itself, not only earlier ones.
BOTH_SAYS = {"en": "earlier **real** tokens and itself", "ko": "자기 자신과 그 앞의 **실제** 토큰"}
BOTH_NEVER = {"en": "sees only earlier **real** tokens", "ko": "자기 앞의 **실제** 토큰만 봅니다"}


@pytest.mark.parametrize("lang", list(LANGS))
def test_causal_and_padding_say_a_query_also_sees_itself(lang):
    at = run_page("masks.py", lang, setup=lambda a: a.session_state.__setitem__("mask_model", "seeded"))
    assert_clean(at)
    shown = [m.value for m in at.markdown]
    assert any(BOTH_SAYS[lang] in s for s in shown)
    assert not any(BOTH_NEVER[lang] in s for s in shown)


def test_parameter_counts_are_written_as_the_overview_writes_them():
    """The architectures' table counts parameters in millions with one decimal, as the overview does ("63.1M"),
    not as a long whole number beside it ("22,565,376")."""
    import re
    from app.i18n import catalogue
    at = run_page("masks.py")
    assert_clean(at)
    column = catalogue("en")["masks.column.parameters"]
    arch = next(tb for tb in tables(at) if column in tb.columns)
    assert all(re.fullmatch(r"\d+\.\dM", str(v)) for v in arch[column]), list(arch[column])
