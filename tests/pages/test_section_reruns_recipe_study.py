"""The recipe and study pages: each section with its own inputs (the recipe's schedule, Adam,
label smoothing and dropout; the study's factor view) is a fragment: a control reruns its own section only,
and the section shows what the whole page shows, from a cold or a warm figure cache."""
from __future__ import annotations

import pytest

from tests.apptest_util import assert_clean, run_page
from tests.pages.test_section_reruns_attention_masks import drop_cached_views, fragment_reruns, keep_calls, shown


SCHEDULE = {"sch_d", "sch_w", "sch_range", "sch_pairs", "sch_log"}
ADAM = {"adam_theta", "adam_c", "adam_lr", "adam_steps"}
SMOOTHING = {"ls_eps", "ls_V"}
DROPOUT = {"drop_sentence", "drop_p", "drop_seed"}

def family_member(at, member: str):
    at.button_group(key="fam_member").set_value(member)
    at.run()


SECTIONS = [
    ("family-fam-detr-detail", lambda at: at.selectbox(key="fam_detr_query").set_value(3),
     {"fam_detr_query", "fam_detr_layer", "fam_detr_head"}),
    ("family-fam-vit-cls", lambda at: at.selectbox(key="fam_vit_layer").set_value(2), {"fam_vit_layer"}),
    # the patch is picked in the browser (app/fast/choice.py): here it is asked anew, as a link or a tour stop does
    ("family-fam-vit-positions", lambda at: at.session_state.__setitem__("fam_vit_patch", 3), {"fam_vit_patch"}),
    ("study-factor", lambda at: at.radio(key="study_metric").set_value("exact_match"), {"study_group", "study_metric"}),
    ("study-factor", lambda at: at.button_group(key="study_group").set_value("C"), {"study_group", "study_metric"}),
    ("recipe-schedule", lambda at: at.slider(key="sch_d").set_value(256), SCHEDULE),
    ("recipe-schedule", lambda at: at.text_input(key="sch_pairs").set_value("128, 400"), SCHEDULE),
    ("recipe-adam", lambda at: at.select_slider(key="adam_c").set_value(10.0), ADAM),
    ("recipe-smoothing", lambda at: at.slider(key="ls_eps").set_value(0.3), SMOOTHING),
    ("recipe-smoothing", lambda at: at.number_input(key="ls_V").set_value(20_000), SMOOTHING),
    # the rate is picked in the browser too: asked anew here
    ("recipe-dropout", lambda at: at.session_state.__setitem__("drop_p", 0.5), DROPOUT),
    ("recipe-dropout", lambda at: at.text_input(key="drop_sentence").set_value("the boy eats an apple"), DROPOUT),
]


@pytest.mark.parametrize("fragment, act, inputs", SECTIONS, ids=[f"{f}-{i}" for i, (f, _, _) in enumerate(SECTIONS)])
def test_a_control_reruns_its_section_only(fragment, act, inputs):
    page, fragment = fragment.split("-")[0], fragment.split("-", 1)[1] if fragment.startswith("family-") else fragment
    run_page(page + ".py", "en")  # the app modules a page uses are imported (keep_calls swaps their `keep`)
    with keep_calls() as drawn:
        at = run_page(page + ".py", "en")
        for member in ("detr", "vit"):
            if fragment.startswith(f"fam-{member}-"):
                family_member(at, member)
        assert_clean(at)
        assert not set(drawn) <= inputs
        act(at)
        drawn.clear()
        with fragment_reruns(at, fragment):
            at.run()
        assert_clean(at)
    assert drawn and set(drawn) <= inputs, drawn
    section = shown(at)
    at.run()
    assert_clean(at)
    page_now = shown(at)
    for kind, items in section.items():
        assert set(items) <= set(page_now[kind]), kind
    drop_cached_views()
    at.run()
    assert shown(at) == page_now
