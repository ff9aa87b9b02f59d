"""The family page's masked LM with two segments: an edit keeps every mask the learner clicked that still
applies. Editing the second segment keeps the first segment's masks (and the reverse, their positions moved
when the first segment's length changed); a token that survives an edit of its own segment stays masked; a
token the edit removed drops out. AppTest on the section (the shipped mlm model)."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from app.i18n import LANGS
from model.data.corpus import ASSETS
from tests.apptest_util import section_script

pytestmark = pytest.mark.skipif(not (ASSETS / "models" / "mlm" / "config.json").is_file(),
                                reason="no shipped mlm model")

SCRIPT = section_script("""
from pages.family.mlm import render
render()
""")


def section(lang: str) -> AppTest:
    at = AppTest.from_string(SCRIPT.format(lang=lang), default_timeout=120)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def pills(at):
    return next(b for b in at.get("button_group") if b.key == "fam_mlm_masked")


def masked(at) -> list[str]:
    """The clicked masks, as the pieces they hide (the pills' labels), in order."""
    p = pills(at)
    return [p.options[i] for i in sorted(p.indices)]


def set_text(at, key: str, value: str) -> None:
    at.text_input(key=key).set_value(value).run()
    assert not at.exception, [e.value for e in at.exception]


def click(at, *pieces: str) -> None:
    """Mask these pieces (by their labels; the first of each) in addition to those masked now."""
    p = pills(at)
    values = {p.format_func(v): v for v in range(len(p.options) + 3) if _label(p, v) is not None}
    p.set_value(sorted(set(p.value) | {values[piece] for piece in pieces})).run()
    assert not at.exception, [e.value for e in at.exception]


def _label(p, v):
    try:
        return p.format_func(v)
    except (IndexError, KeyError):
        return None


@pytest.mark.parametrize("lang", list(LANGS))
def test_editing_one_segment_keeps_the_masks_of_the_other(lang):
    at = section(lang)
    set_text(at, "fam_mlm_text", "I see the sea every day.")
    set_text(at, "fam_mlm_pair", "나는 매일 바다를 본다.")
    assert masked(at) == []
    click(at, "▁sea", "▁바다를")
    assert masked(at) == ["▁sea", "▁바다를"]
    # the second segment edited: the first segment's mask stays, the second's too (its token survived)
    set_text(at, "fam_mlm_pair", "나는 매일 바다를 자주 본다.")
    assert masked(at) == ["▁sea", "▁바다를"]
    # the second segment replaced entirely: only the first segment's mask is left
    set_text(at, "fam_mlm_pair", "나는 매일 본다.")
    assert masked(at) == ["▁sea"]
    click(at, "▁매일")
    # the first segment made longer at its start: both masks follow their tokens to their new positions
    set_text(at, "fam_mlm_text", "Today I see the sea every day.")
    assert masked(at) == ["▁sea", "▁매일"]
    # the masked token itself edited away: its mask goes, and nothing else is masked instead
    set_text(at, "fam_mlm_text", "Today I see the river every day.")
    assert masked(at) == ["▁매일"]
    # the pair removed, then a single sentence: the masks of the first segment still apply
    click(at, "▁river")
    set_text(at, "fam_mlm_pair", "")
    assert masked(at) == ["▁river"]


def test_an_edit_of_one_segment_keeps_every_mask_of_the_other():
    """The class: whatever is typed in one segment, each mask of the other stays on its own token."""
    import random

    from model.family import load_family_dir
    from model.family.mlm import tokens
    tok = load_family_dir(ASSETS / "models" / "mlm", expect="mlm").extra
    rng = random.Random(0)
    words_a = "I see the sea every day . she went to school park coffee hot".split()
    words_b = "나는 매일 바다를 본다 . 학교에 갔다 공원에서 커피를".split()
    for _ in range(40):
        a, b = " ".join(rng.choices(words_a, k=rng.randint(1, 8))), " ".join(rng.choices(words_b, k=rng.randint(1, 6)))
        a2, b2 = " ".join(rng.choices(words_a, k=rng.randint(1, 8))), " ".join(rng.choices(words_b, k=rng.randint(1, 6)))
        for old_text, new_text, kept_segment in (((a, b), (a, b2), 0), ((a, b), (a2, b), 1)):
            old, new = tokens(tok, *old_text), tokens(tok, *new_text)
            picked = [p for p in old.content_positions(tok) if old.segments[p] == kept_segment]
            moved = new.follow((old.pieces, old.segments), picked)
            assert [new.pieces[p] for p in moved] == [old.pieces[p] for p in picked], (old_text, new_text)
            assert all(new.segments[p] == kept_segment for p in moved)
