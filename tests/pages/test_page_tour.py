"""The guided tour in AppTest: every step's question answered right and wrong in both languages, its page's
inputs named as that page names them, a link to step N, the buttons, and the answers following the inputs."""
import pytest

from app.i18n import catalogue
from app.pages_list import PAGES
from app.state import URLS
from model.lessons import tour
from pages.views import tour as tv
from tests.apptest_read import errors
from tests.apptest_util import assert_clean, open_link, run_page

FILES = {p.url: p.file for p in PAGES}


def _truth(step):
    """The step's answer for its own settings, computed here from the step's inputs."""
    preset = {s.key: s.value for s in step.settings}
    return step.ask(preset.__getitem__).truth


def _answer(at, step, value):
    kind = step.ask({s.key: s.value for s in step.settings}.__getitem__).kind
    # a radio's options are labelled by a format function AppTest cannot call: the answer goes in as the widget's value
    at.session_state[f"tour_a_{step.id}"] = value if kind == "choice" else float(value)
    at.button(key="tour_check").click().run()
    assert_clean(at)


@pytest.mark.parametrize("page", sorted({s.page for s in tv.STEPS}))
def test_every_setting_is_the_pages_own_key_and_link_name(page):
    """A page that renames a session key or a link name the tour sets fails here, naming the setting."""
    at = run_page(FILES[page])
    assert_clean(at)
    names = at.session_state[URLS][page]
    for step in (s for s in tv.STEPS if s.page == page):
        for s in step.settings:
            assert s.key in names, f"step {step.id}: the {page} page has no input {s.key}"
            assert names[s.key] == s.url, f"step {step.id}: {page}'s {s.key} is `{names[s.key]}` in its link"


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_walk_the_whole_tour(lang):
    cat = catalogue(lang)
    at = run_page("tour.py", lang)
    assert_clean(at)
    assert at.title[0].value == cat["tour.title"]
    for n, step in enumerate(tv.STEPS, 1):
        assert at.session_state["tour_step"] == n
        assert at.header[0].value == f"{n}. {cat[f'tour.{step.id}.title']}"
        truth = _truth(step)
        asked = step.ask({s.key: s.value for s in step.settings}.__getitem__)
        wrong = truth + 1 if asked.kind == "number" else next(o for o in asked.options if o != truth)
        _answer(at, step, wrong)
        assert len(at.warning) == 1 and len(at.info) == 1 and not at.success  # the hint, then the real answer
        _answer(at, step, truth)
        assert len(at.success) == 1 and not at.warning, step.id
        assert not errors(at)
        assert at.markdown[-1].value.startswith(cat["tour.score"].split("{")[0])
        assert f"**{n}**" in at.markdown[-1].value  # every answer so far right
        if n < len(tv.STEPS):
            at.button(key="tour_next").click().run()
    at.button(key="tour_next").click().run()  # the last stop stays the last
    assert at.session_state["tour_step"] == len(tv.STEPS)
    assert at.query_params["checked"] == ",".join(sorted(s.id for s in tv.STEPS))
    at.button(key="tour_reset").click().run()
    assert_clean(at)
    assert at.session_state["tour_step"] == 1 and not at.success and "**0**" in at.markdown[-1].value


def test_a_link_to_step_n_lands_there_with_its_answer_and_checks():
    n = 6
    step = tv.STEPS[n - 1]
    at = open_link("tour.py", {"step": str(n), f"a{n}": "123", "checked": step.id}, lang="ko")
    assert_clean(at)
    assert at.session_state["tour_step"] == n
    assert at.header[0].value.startswith(f"{n}. ")
    assert at.number_input(key=f"tour_a_{step.id}").value == 123
    assert len(at.warning) == 1  # checked, and wrong: the hint
    assert at.query_params["step"] == str(n)


def test_the_answer_follows_the_pages_current_inputs():
    """The warm-up step: the learner moved warmup_steps on the recipe page; the tour's answer moves with it."""
    n, step = next((i, s) for i, s in enumerate(tv.STEPS, 1) if s.id == "warmup")
    at = run_page("tour.py")
    at.session_state["tour_step"] = n
    at.session_state["sch_w"] = 2000
    at.run()
    _answer(at, step, 2000)
    assert len(at.success) == 1
    assert tour.warmup_peak(256, 2000)["step"] == 2000
    at.session_state["sch_w"] = 6000
    at.run()
    assert len(at.warning) == 1 and "6000" in at.info[0].value.replace(",", "")


def test_open_sets_up_the_page():
    at = run_page("tour.py")
    at.button(key="tour_next").click().run()  # step 2: √dₖ
    at.session_state["att_dk"] = 7
    at.run()
    at.button(key="tour_open").click().run()
    assert_clean(at)
    assert at.session_state["att_dk"] == 64  # the step's setting, on the attention page
    assert at.title[0].value == catalogue("en")["attention.title"]
