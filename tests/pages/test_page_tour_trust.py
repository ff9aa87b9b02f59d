"""A tour a learner can trust, in AppTest: reset resets, a question is computed from the inputs it names, ties are
right, the first answer checked is scored, the hint comes before the real answer, nothing is preselected, the link
reproduces numbers and score in a fresh session, numbers at the precision asked, colour words that match the
figures, the seeds' spread shown and respected, no SentencePiece markers, and a stop opens its page's section."""
import re

import pytest

from app.i18n import LANGS, catalogue
from model.lessons import tour
from model.lessons import worked_example as wx
from pages.views import tour as tv
from tests.apptest_read import figures
from tests.apptest_util import assert_clean, open_link, run_page


def _stop(step_id):
    return next((i, s) for i, s in enumerate(tv.STEPS, 1) if s.id == step_id)


def _asked(step, **inputs):
    preset = {s.key: s.value for s in step.settings}
    return step.ask(lambda k: inputs.get(k, preset[k]))


def _at_stop(step_id, lang="en", **inputs):
    n, step = _stop(step_id)
    at = run_page("tour.py", lang)
    at.session_state["tour_step"] = n
    for k, v in inputs.items():
        at.session_state[k] = v
    at.run()
    assert_clean(at)
    return at, n, step


def _check(at, step, value):
    at.session_state[f"tour_a_{step.id}"] = value
    at.run()
    at.button(key="tour_check").click().run()
    assert_clean(at)


def _wrong(asked):
    return asked.truth + 100 if asked.kind == "number" else next(o for o in asked.options if not asked.right(o))


def _score(at) -> int:
    return int(re.search(r"\*\*(\d+)\*\*", at.markdown[-1].value).group(1))


def test_reset_tour_forgets_every_check_and_answer_in_the_session_and_the_link():
    at = run_page("tour.py")
    for step in tv.STEPS[:3]:
        _check(at, step, _wrong(_asked(step)))
        at.button(key="tour_next").click().run()
    assert at.query_params["checked"] and "a1" in at.query_params
    at.button(key="tour_reset").click().run()
    at.run()  # the next run must not read the old checks back from the address
    assert_clean(at)
    assert at.session_state["tour_step"] == 1
    assert not at.warning and not at.info and not at.success
    assert "checked" not in at.query_params and not any(f"a{i}" in at.query_params for i in (1, 2, 3))
    assert _score(at) == 0


def test_the_masking_stop_computes_with_the_causal_mask_on_whatever_the_page_holds():
    at, n, step = _at_stop("mask", att_causal=False)  # the first stop's set-up turns the mask off
    masked = tour.weight_at(tour.qkv_weights(*(wx.matrix_text(m) for m in (wx.EXAMPLE_Q, wx.EXAMPLE_K, wx.EXAMPLE_V)),
                                             True), 0, 2)
    assert masked == 0.0
    _check(at, step, 0.0)
    assert len(at.success) == 1, [w.value for w in at.warning]
    assert "✕" in str(figures(at)[-1]["data"][0]["text"])  # the figure shows the mask on


def test_a_tie_is_right():
    """At dₖ = 1 the three candidates 1, √dₖ and dₖ are all 1."""
    at, n, step = _at_stop("scale", att_dk=1)
    _check(at, step, "sqrt_dk")
    assert len(at.success) == 1 and not at.warning


def test_the_first_answer_checked_is_scored_and_a_stop_is_retried_by_resetting_it():
    at, n, step = _at_stop("qkv")
    asked = _asked(step)
    _check(at, step, _wrong(asked))
    assert at.button(key="tour_check").disabled and at.radio(key=f"tour_a_{step.id}").disabled
    at.session_state[f"tour_a_{step.id}"] = asked.truth  # even a changed answer does not change the scored one
    at.run()
    assert not at.success and _score(at) == 0 and at.radio(key=f"tour_a_{step.id}").value == _wrong(asked)
    at.button(key="tour_retry").click().run()
    assert at.session_state[f"tour_a_{step.id}"] is None and not at.warning
    _check(at, step, asked.truth)
    assert len(at.success) == 1 and _score(at) == 1


def test_the_hint_comes_first_and_the_real_answer_on_request_and_then_scores_nothing():
    at, n, step = _at_stop("warmup")
    asked = _asked(step)
    _check(at, step, asked.truth + 500.0)
    assert len(at.warning) == 1 and not at.info and not at.success
    assert str(asked.truth) not in " ".join(w.value for w in at.warning)  # the hint does not give it away
    at.button(key="tour_show").click().run()
    assert len(at.info) == 1 and f"**{asked.truth}**" in at.info[0].value
    at.button(key="tour_retry").click().run()
    _check(at, step, float(asked.truth))
    assert len(at.success) == 1 and _score(at) == 0  # an answer once shown scores nothing


@pytest.mark.parametrize("step_id", ["qkv", "positions"])
def test_no_answer_is_chosen_at_first_and_check_waits_for_one(step_id):
    at, n, step = _at_stop(step_id)
    widget = at.radio(key=f"tour_a_{step_id}") if _asked(step).kind == "choice" else at.number_input(
        key=f"tour_a_{step_id}")
    assert widget.value is None
    assert at.button(key="tour_check").disabled  # a browser cannot press it
    assert not at.warning and not at.success and "checked" not in at.query_params


def test_the_link_carries_the_inputs_and_answers_and_a_fresh_session_sees_the_same():
    at = run_page("tour.py")
    first = tv.STEPS[0]
    _check(at, first, _asked(first).truth)
    n, step = _stop("positions")
    at.session_state["tour_step"] = n
    at.session_state["pe_anchor"], at.session_state["pe_d"] = 63, 124
    at.run()
    asked = _asked(step, pe_anchor=63, pe_d=124)
    _check(at, step, round(asked.truth, 1))
    assert len(at.success) == 1 and _score(at) == 2
    question = next(m.value for m in at.markdown if "PE(63)" in m.value)
    at.switch_page("../pages/recipe.py").run()  # another page, and back: the earlier answers stay in the address
    at.switch_page("../pages/tour.py").run()
    params = dict(at.query_params.items()) if hasattr(at.query_params, "items") else at.query_params
    assert "a1" in params and f"a{n}" in params
    fresh = open_link("tour.py", {k: (v[0] if isinstance(v, list) else v) for k, v in params.items()})
    assert_clean(fresh)
    assert fresh.session_state["tour_step"] == n
    assert any(m.value == question for m in fresh.markdown), "the same question, for anchor 63 at d_model 124"
    assert len(fresh.success) == 1 and _score(fresh) == 2


DECIMALS = {"mask": 2, "attentions": 0, "layer": 2, "positions": 1, "warmup": 0, "smoothing": 2}  # as each question asks


@pytest.mark.parametrize("step_id", list(DECIMALS))
def test_numbers_are_written_at_the_precision_the_question_asks(step_id):
    at, n, step = _at_stop(step_id)
    _check(at, step, 1000.0)
    if any(b.key == "tour_show" for b in at.button):
        at.button(key="tour_show").click().run()
    info = at.info[0].value
    numbers = re.findall(r"\*\*([-\d.,]+)\*\*", info) + re.findall(r"you said ([-\d.,]+\d)", info)
    assert len(numbers) == 2, info
    for text in numbers:  # e.g. 62.1 and 1000.0 for one decimal, 4000 and 1000 for a whole number
        assert len(text.partition(".")[2]) == DECIMALS[step_id], (text, info)
    question = catalogue("en")[f"tour.{step_id}.question"]  # says the precision it asks for
    assert "decimal" in question or "whole number" in question or "how many" in question.lower(), question


def test_colour_words_match_the_figures():
    """Weights are drawn on a white-to-blue scale (0 white): no tour text calls a masked or zero cell dark, or a
    large weight bright; a masked cell is marked, so that it differs from an open one that rounds to 0.00."""
    en = catalogue("en")
    texts = [v for k, v in en.items() if k.startswith("tour.")]
    from tests.streamlit_server import ROOT
    texts.append((ROOT / "app" / "content" / "en" / "tour.md").read_text(encoding="utf-8"))
    for text in texts:
        assert not re.search(r"\bbright|masked cell is dark|go dark|dark cell", text), text
    at, n, step = _at_stop("attentions")
    _check(at, step, _asked(step).truth)
    cells = figures(at)[-1]["data"][0]["text"]
    assert cells[0][1] == "✕" and cells[0][0] != "✕"  # query 1 may not see key 2 in the masked self-attention


def test_the_table3_stop_shows_the_seeds_spread_and_respects_it():
    at, n, step = _at_stop("table3")
    asked = _asked(step)
    _check(at, step, asked.truth)
    fig = figures(at)[-1]
    assert any("error_y" in tr for tr in fig["data"]), "the seeds' range around each row"
    from pages.views import study
    doc = study.load_table(study.SHIPPED)
    rows = {r["row"]: r for r in doc["rows"]}
    best = tour.best_row(rows, ["base"] + [p.key for p in tour.table3.PAPER_TABLE3 if p.group == "A"], "perplexity")
    for other in best["alike"]:  # a row the seeds cannot tell from the best is as right
        assert asked.right(other)
    for other in set(best["scores"]) - set(best["alike"]):
        assert not asked.right(other)


@pytest.mark.parametrize("lang", list(LANGS))
def test_no_sentencepiece_marker_and_questions_that_read(lang):
    at, n, step = _at_stop("cross", lang)
    radio = at.radio(key="tour_a_cross")
    assert radio.options and not any("▁" in o for o in radio.options), radio.options
    assert not any("▁" in m.value for m in at.markdown)
    at2, n, step = _at_stop("heads", lang)
    question = next(m.value for m in at2.markdown if "**the**" in m.value)
    assert "**the** on **cat**" not in question and "1" in question and "2" in question, question


def test_small_bars_carry_their_values():
    at, n, step = _at_stop("smoothing")
    _check(at, step, round(_asked(step).truth, 2))
    bars = [tr for tr in figures(at)[-1]["data"] if tr.get("type") == "bar"]
    assert bars and all(tr.get("textposition") == "outside" for tr in bars)


@pytest.mark.parametrize("step_id", ["scale", "heads", "positions", "cross", "smoothing"])
def test_a_stop_opens_its_page_at_its_section(step_id):
    from app.page_inputs import SECTIONS
    at, n, step = _at_stop(step_id)
    at.button(key="tour_open").click().run()
    assert_clean(at)
    anchor = SECTIONS[step.section]
    headers = [h for h in (*at.header, *at.subheader)]
    assert any(h.proto.anchor == anchor for h in headers), [h.proto.anchor for h in headers]
    scripts = [e for e in at.get("html") if anchor in str(e.proto)]
    assert scripts, "the page scrolls to the section"
    at.run()  # once: the next run stays where the learner is
    assert not [e for e in at.get("html") if anchor in str(e.proto)]


def test_a_stop_opened_from_a_korean_link_opens_its_page_in_korean():
    """A session that a link started in Korean keeps Korean across the server-side page switch of Open."""
    n, step = _stop("smoothing")
    at = open_link("tour.py", {"step": str(n)}, lang="ko")
    at.button(key="tour_open").click().run()
    assert_clean(at)
    assert at.session_state["lang"] == "ko" and at.title[0].value == catalogue("ko")["pages.recipe.title"]


def test_the_tour_names_the_pages_inputs_by_their_declarations_only():
    """No session key or link name of another page written out in the tour: it reads them from app.page_inputs."""
    import ast
    from app import page_inputs
    from tests.streamlit_server import ROOT
    declared = {v.key for c in vars(page_inputs).values() if isinstance(c, type)
                for v in vars(c).values() if isinstance(v, page_inputs.Input)} - {"kind"}  # also a message's argument
    for path in (ROOT / "pages" / "tour.py", ROOT / "pages" / "views" / "tour.py"):
        literals = {n.value for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                    if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        assert not literals & declared, (path.name, literals & declared)


@pytest.mark.parametrize("step", tv.STEPS, ids=lambda s: s.id)
def test_every_stop_names_a_section_its_page_draws(step):
    """The anchor a stop opens its page at is a header anchor in that page's code (or its members')."""
    from app.pages_list import PAGES
    from tests.streamlit_server import ROOT
    file = ROOT / "pages" / next(p.file for p in PAGES if p.url == step.page)
    code = [file] + sorted((ROOT / "pages" / file.stem).glob("*.py"))
    assert any(f'anchor=SECTIONS["{step.section}"]' in p.read_text(encoding="utf-8") for p in code), step.section
    assert step.link("en").endswith("#" + tv.SECTIONS[step.section])
