"""The attention inspector through AppTest: both languages, all three attention kinds, bad input."""
import base64
import json
import shutil

import numpy as np

import pytest

from app.resources import SHIPPED
from tests.apptest_util import assert_clean, run_page

pytestmark = pytest.mark.skipif(not (SHIPPED["en-ko"] / "model.safetensors").is_file(),
                                reason="the shipped en-ko model is not built")


@pytest.fixture(autouse=True)
def empty_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("ATLAS_RUNS_DIR", str(tmp_path / "runs"))
    return tmp_path / "runs"


def with_text(text, **state):
    def setup(at):
        at.session_state["insp_for"] = "en-ko"
        at.session_state["insp_model"] = "en-ko"
        at.session_state["insp_text"] = text
        for k, v in state.items():
            at.session_state[k] = v
    return setup


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_translates_and_shows_all_kinds(lang):
    at = run_page("inspector.py", lang, setup=with_text("She drank cold water yesterday."))
    assert_clean(at)
    assert at.code[0].value == "그녀는 어제 차가운 물을 마셨다."
    radio = at.radio(key="insp_kind")
    assert radio.options == ([
        "encoder self-attention", "masked decoder self-attention", "cross-attention (target → source)"] if lang == "en"
        else ["인코더 셀프 어텐션", "마스크드 디코더 셀프 어텐션", "크로스 어텐션 (타깃 → 소스)"])
    for kind in ("encoder_self", "decoder_self", "cross"):
        at.radio(key="insp_kind").set_value(kind).run()
        assert_clean(at)
        assert len(at.dataframe) >= 2  # head statistics and averages


def test_average_over_heads_and_layers():
    at = run_page("inspector.py", "en", setup=with_text("We see the sky."))
    at.selectbox(key="insp_layer").set_value(-1)
    at.selectbox(key="insp_head").set_value(-1).run()
    assert_clean(at)
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    detail = [f for f in specs if "average" in json.dumps(f.get("layout", {}).get("title", ""))]
    assert detail, "the averaged detail map is drawn"
    z = detail[0]["data"][0]["z"]  # plotly ships arrays as base64 ("bdata") with dtype and shape
    z = np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(
        [int(n) for n in z["shape"].split(",")]) if isinstance(z, dict) else np.asarray(z)
    assert z.shape[0] > 3
    np.testing.assert_allclose(z.sum(1), 1.0, atol=1e-4)  # a mean of attention rows still sums to 1


def test_greedy_and_decoding_steps():
    at = run_page("inspector.py", "en", setup=with_text("My friend did not buy a red apple."))
    at.radio[0].set_value("greedy").run()
    assert_clean(at)
    assert at.code[0].value == "내 친구는 빨간 사과를 사지 않았다."
    at.slider(key="insp_step").set_value(3).run()
    assert_clean(at)
    assert any("Step 3" in m.value for m in at.markdown)


@pytest.mark.parametrize("text, message", [
    ("", "Type a sentence"),
    ("   \n\t ", "Type a sentence"),
    ("I love my 🐈 very much!", "Out of domain"),
    ("나는 학교에 간다.", None),
    ("<script>alert('x')</script> <b>bold</b>", "Out of domain"),
    ("I go to school. " * 200, "cut to its first 2000"),
])
def test_bad_input_gets_a_message(text, message):
    at = run_page("inspector.py", "en", setup=with_text(text))
    assert_clean(at)
    shown = " ".join(x.value for x in [*at.info, *at.warning])
    if message:
        assert message in shown
    if text.strip():
        assert at.code, "a translation is shown for any non-empty input"
    if "<script>" in text:  # rendered as text, never as HTML
        assert not [m for m in at.markdown if "<script>" in m.value and m.allow_html]


def test_language_model():
    def setup(at):
        at.session_state["insp_model"] = "lm"
    if not (SHIPPED["lm"] / "model.safetensors").is_file():
        pytest.skip("the shipped lm model is not built")
    at = run_page("inspector.py", "ko", setup=setup)
    assert_clean(at)
    assert at.radio(key="insp_kind").options == ["마스크드 디코더 셀프 어텐션"]
    assert at.code == [] and len(at.dataframe) >= 2
    before = at.text_area(key="insp_text").value
    at.button[0].click().run()
    assert_clean(at)
    assert at.text_area(key="insp_text").value != before or at.info


def test_corrupt_run_model_gets_a_message(empty_runs):
    bad = empty_runs / "broken-run" / "model"
    shutil.copytree(SHIPPED["en-ko"], bad)
    (bad / "model.safetensors").write_bytes(b"\x00garbage" * 10)

    def setup(at):
        at.session_state["insp_model"] = "run: broken-run"
    at = run_page("inspector.py", "en", setup=setup)
    assert_clean(at)
    assert "cannot be loaded" in at.error[0].value
