"""The attention inspector through AppTest: both languages, all three attention kinds, bad input,
damaged models; and its text helpers (app/inspector.py)."""
import json
import re
import shutil

import numpy as np
import pytest

from app import inspector as ins
from app.i18n import catalogue
from app.resources import SHIPPED
from tests.apptest_read import figures, title, z_of
from tests.apptest_util import assert_clean, run_page

pytestmark = pytest.mark.skipif(not (SHIPPED["en-ko"] / "model.safetensors").is_file(),
                                reason="the shipped en-ko model is not built")


@pytest.fixture
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
    detail = [f for f in figures(at) if "average" in title(f)]
    assert detail, "the averaged detail map is drawn"
    z = z_of(detail[0])
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


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_corrupt_run_model_gets_a_message(empty_runs, lang):
    """A clear translated message, and the technical detail verbatim (the damaged file's name)."""
    bad = empty_runs / "broken-run" / "model"
    shutil.copytree(SHIPPED["en-ko"], bad)
    (bad / "model.safetensors").write_bytes(b"\x00garbage" * 10)

    def setup(at):
        at.session_state["insp_model"] = "run: broken-run"
    at = run_page("inspector.py", lang, setup=setup)
    assert_clean(at)
    shown = at.error[0].value
    assert shown.startswith(catalogue(lang)["inspector.errors.cannot_load"]) and "model.safetensors" in shown
    if lang == "en":
        assert "cannot be loaded" in shown


# CommonMark: a closing `*`/`**` preceded by punctuation and followed by a letter is not a closing
# delimiter, so Korean particles glued to emphasis (`*정렬(alignment)*이`, `**`x`**을`) show raw stars.
_BROKEN_EMPHASIS = re.compile(r"(?<=[^\s\w*])\*{1,3}(?=[가-힣])")


def _rendered_text(at) -> list[str]:
    return [e.value for kind in ("markdown", "caption", "info", "warning", "error", "success")
            for e in getattr(at, kind)]


def test_korean_emphasis_closes_before_particles():
    at = run_page("inspector.py", "ko")
    assert_clean(at)
    bad = [m.string[max(0, m.start() - 30):m.end() + 10] for text in _rendered_text(at)
           for m in _BROKEN_EMPHASIS.finditer(text)]
    assert not bad, bad
    assert any("토큰을 썼습니다" in text for text in _rendered_text(at))  # the sentence that had `**`token`**을(를)`


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_step_bars_keep_repeated_source_tokens(lang):
    """The decoding-steps bar chart uses a category axis: a source token that occurs twice
    ("teacher" below) was drawn as ONE bar, the two weights painted over each other."""
    at = run_page("inspector.py", lang)
    at.text_area(key="insp_text").set_value("The teacher likes the teacher.").run()
    assert_clean(at)
    bars = [c for c in at.get("plotly_chart") if "steprow" in c.proto.id]
    names = json.loads(bars[0].proto.spec)["data"][0]["y"]
    assert len(names) == len(set(names)) and sum("teacher" in n for n in names) == 2


def test_korean_tables_legends_and_tabs():
    """Every label of the inspector is translated: table headers, the 'all' row, head-view legend, tabs."""
    ko = catalogue("ko")
    at = run_page("inspector.py", "ko", setup=with_text("I go to school."))
    assert_clean(at)
    stats, averages = at.dataframe[-2].value, at.dataframe[-1].value
    assert list(stats.columns[:3]) == [ko["common.layer"], ko["common.head"], ko["inspector.stat.entropy"]]
    assert averages.iloc[-1, 0] == ko["inspector.all"]
    tokens = at.dataframe[0].value
    assert ko["inspector.table.seen"] in tokens.columns and ko["inspector.table.piece"] in tokens.columns
    legend = [tr.get("name") for f in figures(at) for tr in f["data"] if tr.get("showlegend", True) and tr.get("name")]
    assert "헤드 1" in legend  # the head view's legend
    assert [tab.label for tab in at.tabs] == [ko[f"inspector.tab.{k}"] for k in ("grid", "head", "steps", "stats")]


def test_no_model_at_all_gets_a_message(empty_runs, monkeypatch):
    import app.resources as resources
    monkeypatch.setattr(resources, "SHIPPED", {})
    at = run_page("inspector.py", "ko")
    assert_clean(at)
    assert at.error[0].value.startswith(catalogue("ko")["inspector.errors.no_models"])


# ----------------------------------------------------------------------------- app/inspector.py

class _Tok:
    pad_id, bos_id, eos_id, unk_id = 0, 2, 3, 1

    @staticmethod
    def is_byte(i):
        return i >= 100


def test_labels_show_control_characters_and_stay_unescaped():
    assert ins.labels(["a\nb", "\t", "", "<s>"]) == ["a\\nb", "\\t", "∅", "<s>"]  # figures escape labels themselves
    assert ins.clean_input("  hi  ") == ("hi", False)
    assert ins.clean_input("x" * 5, max_chars=3) == ("xxx", True)


def test_token_table_and_unseen_pieces():
    rows = ins.token_table([2, 5, 100, 7], ["<s>", "▁a", "<0xF0>", "b"], _Tok, frozenset({5}))
    en = catalogue("en")
    assert [r[en["inspector.table.seen"]] for r in rows] == [None, True, False, False]
    assert [r[en["inspector.table.byte"]] for r in rows] == [False, False, True, False]
    assert ins.token_table([5], ["a"], _Tok, None)[0][en["inspector.table.seen"]] is None  # training data unknown
    assert ins.unseen([2, 5, 100, 7], ["<s>", "▁a", "<0xF0>", "b"], _Tok, frozenset({5})) == ["<0xF0>", "b"]


def test_stats_and_averages_rows():
    stats = [{"layer": 0, "head": 0, "entropy": 0.12345, "entropy_norm": float("nan")},
             {"layer": 1, "head": 1, "entropy": 1.0}]
    rows = ins.stats_rows(stats)
    assert rows[0]["layer"] == 1 and rows[0]["head"] == 1 and rows[0]["entropy"] == 0.123
    assert rows[0]["entropy_norm"] is None and rows[1]["diagonal"] is None
    avg = ins.averages_rows([{"layer": 0, "entropy": 0.5}, {"layer": None, "entropy": float("nan")}])
    assert avg == [{"layer": "1", "entropy": 0.5}, {"layer": "all", "entropy": None}]
