"""The guided tour in AppTest: every step's question answered right and wrong in both languages, its page's
inputs named as that page names them, a link to step N, the buttons, and the answers following the inputs."""
import pytest
from app.i18n import LANGS

from app.i18n import catalogue
from app.pages_list import PAGES
from app.state import URLS, open_tab
from model.lessons import tour
from pages.views import tour as tv
from tests.apptest_read import errors
from tests.streamlit_server import ROOT
from tests.apptest_util import assert_clean, open_link, run_page

FILES = {p.url: p.file for p in PAGES}


def _truth(step):
    """The step's answer for its own settings, computed here from the step's inputs."""
    preset = {s.key: s.value for s in step.settings}
    return step.ask(preset.__getitem__).truth


def _answer(at, step, value):
    """Answer the stop (trying it again first where it was checked: the first answer checked is locked)."""
    if any(b.key == "tour_retry" for b in at.button):
        at.button(key="tour_retry").click().run()
    kind = step.ask({s.key: s.value for s in step.settings}.__getitem__).kind
    # a radio's options are labelled by a format function AppTest cannot call: the answer goes in as the widget's value
    at.session_state[f"tour_a_{step.id}"] = value if kind == "choice" else float(value)
    at.run()
    at.button(key="tour_check").click().run()
    assert_clean(at)


def _show(at):
    at.button(key="tour_show").click().run()
    assert_clean(at)


@pytest.mark.parametrize("page", sorted({s.page for s in tv.STEPS}))
def test_every_setting_is_the_pages_own_key_and_link_name(page):
    """A page that renames a session key or a link name the tour sets fails here, naming the setting."""
    tabs = [s for step in tv.STEPS if step.page == page for s in step.settings if s.input.tab]
    at = run_page(FILES[page], setup=lambda at: [open_tab(at.session_state, s.key, s.value) for s in tabs])
    assert_clean(at)  # the tabs the tour opens are open (their inputs are drawn only there)
    names = at.session_state[URLS][page]
    for step in (s for s in tv.STEPS if s.page == page):
        for s in step.settings:
            assert s.key in names, f"step {step.id}: the {page} page has no input {s.key}"
            assert names[s.key] == s.input.url, f"step {step.id}: {page}'s {s.key} is `{names[s.key]}` in its link"


@pytest.mark.parametrize("lang", list(LANGS))
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
        wrong = truth + 1 if asked.kind == "number" else next(o for o in asked.options if not asked.right(o))
        _answer(at, step, wrong)
        assert len(at.warning) == 1 and not at.info and not at.success  # the hint; the real answer on request
        _answer(at, step, truth)  # tried again: the stop starts over
        assert len(at.success) == 1 and not at.warning, step.id
        assert not errors(at)
        assert at.markdown[-1].value.startswith(cat["tour.score"].split("{")[0])
        assert f"**{n}**" in at.markdown[-1].value  # every answer so far right
        if n < len(tv.STEPS):
            at.button(key="tour_next").click().run()
    at.button(key="tour_next").click().run()  # the last stop stays the last
    assert at.session_state["tour_step"] == len(tv.STEPS)
    assert at.query_params["checked"] == ",".join(s.id for s in tv.STEPS)  # in the order of the stops
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
    assert len(at.warning) == 1
    _show(at)
    assert "6000" in at.info[0].value.replace(",", "")


def test_open_sets_up_the_page():
    at = run_page("tour.py")
    at.button(key="tour_next").click().run()  # step 2: √dₖ
    at.session_state["att_dk"] = 7
    at.run()
    at.button(key="tour_open").click().run()
    assert_clean(at)
    assert at.session_state["att_dk"] == 64  # the step's setting, on the attention page
    assert at.title[0].value == catalogue("en")["attention.title"]


def _stop(step_id):
    return next((i, s) for i, s in enumerate(tv.STEPS, 1) if s.id == step_id)


def test_the_three_attentions_answer_follows_the_masks_pages_inputs():
    """Stop 3.2.3: the learner switched the masks page to cross-attention and a longer source; the count follows."""
    n, step = _stop("attentions")
    at = run_page("tour.py")
    at.session_state["tour_step"] = n
    at.run()
    _answer(at, step, 3)  # the decoder's masked self-attention: query 3 sees itself and the two before it
    assert len(at.success) == 1
    at.session_state["kind"] = "cross"
    at.session_state["kind_src"] = "the teacher bought a red apple in the park yesterday."
    at.run()
    assert_clean(at)
    from model.training.checkpoint import load_model_dir
    tok = load_model_dir(ROOT / "assets" / "models" / "en-ko").tokenizer
    src = len(tok.encode(at.session_state["kind_src"]))
    assert len(at.warning) == 1
    _show(at)
    assert f"**{src}**" in at.info[0].value  # every source token: no mask


def test_the_decoding_stop_opens_the_inspectors_step_and_follows_its_step():
    n, step = _stop("cross")
    at = run_page("tour.py")
    at.session_state["tour_step"] = n
    at.run()
    first = at.radio(key="tour_a_cross").options
    assert "2: friend" in first  # the inspector's sentence, token by token (without SentencePiece's space marker)
    _answer(at, step, 1)  # writing 친구는, the decoder looks at "friend"
    assert len(at.success) == 1
    from model.inference.decode import translate
    from model.lessons.probe import step_cross_attention
    from model.training.checkpoint import load_model_dir
    en_ko = load_model_dir(ROOT / "assets" / "models" / "en-ko")
    decoded = translate(en_ko, at.session_state["insp_text"] if "insp_text" in at.session_state
                        else "My friend did not buy a red apple.")
    for k in (1, 3):  # the learner moved the inspector's decoding step: the answer is that step's longest bar
        at.session_state["insp_step"] = k
        at.run()
        assert_clean(at)
        bars = step_cross_attention(decoded.attention, en_ko.config.n_decoder_layers - 1, k - 1).numpy()
        want = int(bars.argmax())
        _answer(at, step, want)
        assert len(at.success) == 1, k
        assert f"**{want + 1}: " in at.success[0].value
    at.button(key="tour_open").click().run()
    assert_clean(at)
    assert at.session_state["insp_step"] == 2 and at.session_state["insp_tab__open"] == "steps"
    assert at.title[0].value == catalogue("en")["inspector.title"]
    assert at.slider(key="insp_step").value == 2  # the steps tab is open, at the stop's step


def test_the_family_stop_asks_about_the_learners_sentence():
    n, step = _stop("family")
    at = run_page("tour.py", "ko")
    at.session_state["tour_step"] = n
    at.run()
    before = at.radio(key="tour_a_family").options
    at.session_state["fam_mlm_text"] = "The [MASK] sat on the mat."
    at.run()
    assert_clean(at)
    assert at.radio(key="tour_a_family").options != before  # the candidates for the learner's new sentence
    truth = step.ask(lambda k: at.session_state[k] if k in at.session_state else
                     {s.key: s.value for s in step.settings}[k]).truth
    _answer(at, step, truth)
    assert len(at.success) == 1
    at.session_state["fam_mlm_text"] = "no mask here"
    at.run()
    assert_clean(at)
    assert at.error and catalogue("ko")["tour.family.no_mask"].split(".")[0][:10] in at.error[0].value


@pytest.mark.parametrize("step_id", ["attentions", "family"])
def test_open_sets_up_the_new_stops_pages(step_id):
    n, step = _stop(step_id)
    at = run_page("tour.py")
    at.session_state["tour_step"] = n
    at.run()
    at.button(key="tour_open").click().run()
    assert_clean(at)
    assert not errors(at)
    assert at.title[0].value == catalogue("en")[f"{step.page}.title"]
    for s in step.settings:
        assert at.session_state[s.key] == s.value, s.key
