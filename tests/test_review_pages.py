"""Regression tests for bugs found by reviewing the pages with adversarial inputs."""
import json
import re

import pytest
import torch

from tests.apptest_util import assert_clean, run_page


@pytest.fixture
def one_by_one_run(tmp_path, monkeypatch):
    """A runs folder holding one encoder-decoder model with 1 layer and 1 head, as the training
    page allows (layers N = 1, heads h = 1)."""
    from model.checkpoint import save_model_dir
    from model.config import TransformerConfig
    from model.tokenizer import load_tokenizer
    from model.transformer import Transformer

    tok = load_tokenizer()
    cfg = TransformerConfig(vocab_size=tok.vocab_size, d_model=16, n_heads=1, d_ff=32, n_encoder_layers=1,
                            n_decoder_layers=1, dropout=0.0, max_len=64)
    torch.manual_seed(0)
    save_model_dir(tmp_path / "runs" / "one" / "model", Transformer(cfg).eval(), tok, meta={"task": "en-ko"})
    monkeypatch.setenv("ATLAS_RUNS_DIR", str(tmp_path / "runs"))
    return "run: one"


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_masks_page_with_a_one_layer_one_head_model(one_by_one_run, lang):
    """st.slider(1, 1) raises StreamlitInvalidMinMaxError: the head and layer pickers must not be
    sliders when there is only one head or layer."""
    at = run_page("masks.py", lang, setup=lambda a: a.session_state.__setitem__("mask_model", one_by_one_run))
    assert_clean(at)
    assert at.selectbox(key="mask_model").value == one_by_one_run
    assert not [s for s in at.slider if s.key in ("mask_head", "kind_layer", "kind_head")]
    assert any("(하나뿐)" in c.value if lang == "ko" else "(the only one)" in c.value for c in at.caption)
    for kind in ("decoder_self", "cross"):
        at.radio(key="kind").set_value(kind).run()
        assert_clean(at)


# CommonMark: a closing `*`/`**` preceded by punctuation and followed by a letter is not a closing
# delimiter, so Korean particles glued to emphasis (`*정렬(alignment)*이`, `**`x`**을`) show raw stars.
_BROKEN_EMPHASIS = re.compile(r"(?<=[^\s\w*])\*{1,3}(?=[가-힣])")


def _rendered_text(at) -> list[str]:
    return [e.value for kind in ("markdown", "caption", "info", "warning", "error", "success")
            for e in getattr(at, kind)]


@pytest.mark.parametrize("page", ["overview.py", "inspector.py"])
def test_korean_emphasis_closes_before_particles(page):
    at = run_page(page, "ko")
    assert_clean(at)
    bad = [m.string[max(0, m.start() - 30):m.end() + 10] for text in _rendered_text(at)
           for m in _BROKEN_EMPHASIS.finditer(text)]
    assert not bad, bad
    if page == "inspector.py":  # the decoding-steps sentence that had `**`token`**을(를)`
        assert any("토큰을 썼습니다" in text for text in _rendered_text(at))


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_positional_waves_survive_a_smaller_d_model(lang):
    """The default dimensions 0, 1, 6, 20 made section 2 fail as soon as the d_model slider went
    below 21; now the missing dimensions are skipped with a warning and the others are plotted."""
    at = run_page("positional.py", lang)
    at.slider(key="pe_d").set_value(16).run()
    assert_clean(at)
    assert all("99" in e.value for e in at.error)  # only the learned-table demo's lookup of row 99 fails
    assert any("20" in w.value and "15" in w.value for w in at.warning)
    waves = [c for c in at.get("plotly_chart") if "pe_waves" in c.proto.id]
    assert len(json.loads(waves[0].proto.spec)["data"]) == 3  # dimensions 0, 1, 6
    at.text_input(key="pe_dims").set_value("20, 30").run()  # nothing left to draw: a clear error
    assert_clean(at)
    assert any(("0" in e.value and "15" in e.value) for e in at.error)
    at.text_input(key="pe_dims").set_value("600").run()  # beyond every d_model: still an error
    assert_clean(at)
    assert any("600" in e.value for e in at.error)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_inspector_step_bars_keep_repeated_source_tokens(lang):
    """The decoding-steps bar chart uses a category axis: a source token that occurs twice
    ("teacher" below) was drawn as ONE bar, the two weights painted over each other."""
    at = run_page("inspector.py", lang)
    at.text_area(key="insp_text").set_value("The teacher likes the teacher.").run()
    assert_clean(at)
    bars = [c for c in at.get("plotly_chart") if "steprow" in c.proto.id]
    names = json.loads(bars[0].proto.spec)["data"][0]["y"]
    assert len(names) == len(set(names)) and sum("teacher" in n for n in names) == 2


def test_inspector_bar_chart_unique_categories():
    from app.inspector import bar_chart

    for horizontal in (True, False):
        fig = bar_chart([0.2, 0.3, 0.5], ["a", "a", "b"], horizontal=horizontal)
        cats = fig.data[0].y if horizontal else fig.data[0].x
        assert len(set(cats)) == 3
