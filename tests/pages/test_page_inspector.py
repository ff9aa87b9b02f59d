"""The attention inspector through AppTest: both languages, all three attention kinds, bad input,
damaged models; and its text helpers (pages/views/inspector.py)."""
import json
import re
import shutil

import numpy as np
import pytest
from app.i18n import LANGS

from pages.views import inspector as ins
from app.i18n import catalogue
from app.resources import SHIPPED
from app.state import open_tab
from tests.apptest_read import charts, figures, tables, title, z_of
from tests.apptest_util import assert_clean, each_view, run_page
from tests import apptest_util

pytestmark = pytest.mark.skipif(not (SHIPPED["en-ko"] / "model.safetensors").is_file(),
                                reason="the shipped en-ko model is not built")


@pytest.fixture(autouse=True)
def server_drawn_maps(monkeypatch):
    """These tests read the grid, the map under it and the head view as the server draws them (where the browser
    cannot draw the attention view: app.fast.attention_view.available); tests/pages/test_page_inspector_view.py
    reads the browser's view."""
    monkeypatch.setenv("ATLAS_ATTENTION_VIEW", "server")


@pytest.fixture
def empty_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("ATLAS_RUNS_DIR", str(tmp_path / "runs"))
    return tmp_path / "runs"


def with_text(text, **state):
    def setup(at):
        at.session_state["insp_for"] = "en-ko"
        at.session_state["insp_model"] = "en-ko"
        at.session_state["insp_text"] = text
        at.session_state["insp_tokens__open"] = True  # the tokenization box, opened (its table is read below)
        for k, v in state.items():
            at.session_state[k] = v
    return setup


def translation_of(at) -> str | None:
    """The translation's code block (the model card's original text is a code block too)."""
    shown = [c.value for c in at.code if not c.value.startswith("# Model card")]
    return shown[0] if shown else None


def open_insp_tab(at, name: str):
    """A click on the attention section's tab `name` (grid, head, steps, positions, stats): only the open
    tab is drawn."""
    open_tab(at.session_state, "insp_tab", name)
    at.run()
    return at


def stats_and_averages(at, lang: str):
    """The head statistics (a data grid: sortable) and the layer averages (a Markdown table), in the stats
    tab (opened)."""
    open_insp_tab(at, "stats")
    c = catalogue(lang)
    stats = next(d.value for d in at.dataframe if c["common.head"] in d.value.columns)
    averages = next(d for d in tables(at)
                    if c["inspector.stat.entropy"] in d.columns and c["common.head"] not in d.columns)
    return stats, averages


def table_with(at, column: str):
    """The first table that has this column: a data grid, else a Markdown table (tests.apptest_read.tables)."""
    return next(d for d in [d.value for d in at.dataframe] + tables(at) if column in d.columns)


@pytest.mark.parametrize("lang", list(LANGS))
def test_translates_and_shows_all_kinds(lang):
    at = run_page("inspector.py", lang, setup=with_text("She drank cold water yesterday."))
    assert_clean(at)
    assert translation_of(at) == "그녀는 어제 차가운 물을 마셨다."
    radio = at.radio(key="insp_kind")
    assert radio.options == ([
        "encoder self-attention", "masked decoder self-attention", "cross-attention (target → source)"] if lang == "en"
        else ["인코더 셀프 어텐션", "마스크드 디코더 셀프 어텐션", "크로스 어텐션 (타깃 → 소스)"])
    for kind in ("encoder_self", "decoder_self", "cross"):
        at.radio(key="insp_kind").set_value(kind).run()
        assert_clean(at)
        assert all(len(x) for x in stats_and_averages(at, lang))


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
    assert translation_of(at) == "내 친구는 빨간 사과를 사지 않았다."
    open_insp_tab(at, "steps")
    at.slider(key="insp_step").set_value(3).run()
    assert_clean(at)
    assert any("Step 3" in m.value for m in at.markdown)


@pytest.mark.parametrize("text, message", [
    ("", "Type a sentence"),
    ("   \n\t ", "Type a sentence"),
    ("I love my 🐈 very much!", "never saw these words"),
    ("나는 학교에 간다.", "never saw these words"),
    ("<script>alert('x')</script> <b>bold</b>", "never saw these words"),
    ("I go to school. " * 200, "cut to its first 2000"),
])
def test_bad_input_gets_a_message(text, message):
    at = run_page("inspector.py", "en", setup=with_text(text))
    assert_clean(at)
    shown = " ".join(x.value for x in [*at.info, *at.warning])
    if message:
        assert message in shown
    if text.strip():
        assert translation_of(at) is not None, "a translation is shown for any non-empty input"
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
    assert all(len(x) for x in stats_and_averages(at, "ko"))
    before = at.text_area(key="insp_text").value
    at.button(key="insp_append").click().run()
    assert_clean(at)
    assert at.text_area(key="insp_text").value != before or at.info


@pytest.mark.parametrize("lang", list(LANGS))
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
    texts = [text for view in each_view(at) for text in _rendered_text(view)]  # every box and tab
    bad = [m.string[max(0, m.start() - 30):m.end() + 10] for text in texts for m in _BROKEN_EMPHASIS.finditer(text)]
    assert not bad, bad
    assert any("토큰을 썼습니다" in text for text in texts)  # the sentence that had `**`token`**을(를)`


@pytest.mark.parametrize("lang", list(LANGS))
def test_step_bars_keep_repeated_source_tokens(lang):
    """The decoding-steps bar chart uses a category axis: a source token that occurs twice
    ("teacher" below) was drawn as ONE bar, the two weights painted over each other."""
    at = run_page("inspector.py", lang)
    at.text_area(key="insp_text").set_value("The teacher likes the teacher.").run()
    assert_clean(at)
    open_insp_tab(at, "steps")
    bars = [c for c in charts(at) if "steprow" in c.id]
    names = bars[0].figure["data"][0]["y"]
    assert len(names) == len(set(names)) and sum("teacher" in n for n in names) == 2


def test_korean_tables_legends_and_tabs():
    """Every label of the inspector is translated: table headers, the 'all' row, head-view legend, tabs."""
    ko = catalogue("ko")
    at = run_page("inspector.py", "ko", setup=with_text("I go to school."))
    assert_clean(at)
    stats, averages = stats_and_averages(at, "ko")
    assert list(stats.columns[:3]) == [ko["common.layer"], ko["common.head"], ko["inspector.stat.entropy"]]
    assert averages.iloc[-1, 0] == ko["inspector.all"]
    tokens = table_with(at, ko["inspector.table.seen"])
    assert ko["inspector.table.piece"] in tokens.columns
    open_insp_tab(at, "head")
    legend = [tr.get("name") for f in figures(at) for tr in f["data"] if tr.get("showlegend", True) and tr.get("name")]
    assert "헤드 1" in legend  # the head view's legend
    assert [tab.label for tab in at.tabs][-4:] == [ko[f"inspector.tab.{k}"] for k in ("grid", "head", "steps", "stats")]


# earlier fixes
def _warnings(at) -> str:
    return "\n".join(w.value for w in at.warning)


@pytest.mark.slow
def test_korean_in_the_english_box_is_flagged():
    """The en-ko model's encoder never read Korean (Korean is only its target side): typing Korean
    into its box gave a confident wrong translation with no warning."""
    at = run_page("inspector.py", "en", setup=with_text("나는 학교에 간다."))
    assert_clean(at)
    shown = _warnings(at)
    for word in ("나는", "학교에", "간다"):
        assert f"`{word}`" in shown
    assert "translation below is a guess" in shown
    seen = table_with(at, catalogue("en")["inspector.table.seen"])[catalogue("en")["inspector.table.seen"]]
    assert list(seen) == [False] * (len(seen) - 1) + [True], "no Korean piece was seen by the encoder, only the '.'"


@pytest.mark.slow
def test_unknown_input_names_whole_words_and_marks_the_translation():
    at = run_page("inspector.py", "en", setup=with_text("I love my 🐈 very much!"))
    assert_clean(at)
    shown = _warnings(at)
    for word in ("🐈", "very", "much", "!"):
        assert f"`{word}`" in shown
    assert "▁" not in shown and "`I`" not in shown and "`love`" not in shown
    assert "translation below is a guess" in shown
    assert translation_of(at), "the translation is still shown"
    at = run_page("inspector.py", "en", setup=with_text("i go to school."))  # the corpus writes "I"
    assert "`i` (it knows `I`)" in _warnings(at)
    at = run_page("inspector.py", "en", setup=with_text("She drank cold water yesterday."))
    assert not at.warning


@pytest.mark.slow
def test_word_palette_builds_a_sentence_and_examples_show_the_kinds():
    en = catalogue("en")
    at = run_page("inspector.py", "en", setup=with_text("", insp_vocab__open=True))  # the box opened by hand
    assert_clean(at)
    pills = {w.key: w for w in at.get("button_group")}
    assert list(pills) == ["insp_pal_subject"], "only the open word group is drawn"
    assert pills["insp_pal_subject"].label == en["inspector.pos.subject"]
    for group, word in (("subject", "the teacher"), ("verb", "like"), ("object", "the sea"), ("punctuation", ".")):
        open_tab(at.session_state, "insp_pal_tab", group)  # a click on the group's tab
        at.run()
        assert [w.key for w in at.get("button_group")] == [f"insp_pal_{group}"]
        at.get("button_group")[0].set_value(word).run()
        assert_clean(at)
        assert at.session_state["insp_pal_tab__open"] == group, "the group stays open after a word click"
    assert at.text_area(key="insp_text").value == "The teacher like the sea."
    assert all(w.value is None for w in at.get("button_group")), "the palette is ready for the next click"
    shown = "\n".join(m.value for m in at.markdown)
    assert en["inspector.example_kind.negation"] in shown and "`I go to school.`" in shown


@pytest.mark.slow
def test_the_palette_is_drawn_only_while_its_box_is_open_and_the_box_keeps_its_state():
    """The palette's ~350 word buttons cost the browser ~0.3 s each time the page opened, in a box
    nobody had opened. Now they are drawn when the box is open; the box stays as the learner left it
    (reruns, a language switch that renames it), and new unknown words open it once."""
    at = run_page("inspector.py", "en", setup=with_text("I go to school."))
    assert_clean(at)
    assert not at.get("button_group"), "a closed box draws no palette"
    assert catalogue("en")["inspector.vocabulary_title"] in [e.label for e in at.expander]
    at.session_state["insp_vocab__open"] = True  # what the box's on_change records when a learner opens it
    at.run()
    assert len(at.get("button_group")) == 1, "the open word group only"
    at.session_state["insp_pal_tab"] = catalogue("en")["inspector.pos.verb"]  # the browser's tab click
    at.run()
    assert [w.key for w in at.get("button_group")] == ["insp_pal_verb"]
    at.session_state["lang"] = "ko"
    at.run()
    assert_clean(at)
    assert at.get("button_group")[0].label == catalogue("ko")["inspector.pos.verb"], "the box and its group stay open"
    open_tab(at.session_state, "insp_pal_tab", "subject")
    at.run()
    at.session_state["insp_vocab__open"] = False  # closed by hand
    at.run()
    assert not at.get("button_group")
    at.text_area(key="insp_text").set_value("I go to the zebras.").run()  # "zebras": a word it never saw
    assert at.get("button_group") and at.session_state["insp_vocab__open"], "new unknown words open the box"
    at.session_state["insp_vocab__open"] = False
    at.run()
    at.text_area(key="insp_text").set_value("I go to the zebras today.").run()  # the same unknown word
    assert not at.get("button_group"), "closed by hand, it stays closed for words it already named"


def test_the_tokenization_grid_is_drawn_only_while_its_box_is_open():
    en = catalogue("en")
    at = run_page("inspector.py", "en", setup=with_text("I go to school.", insp_tokens__open=False))
    assert_clean(at)
    assert not [d for d in at.dataframe if en["inspector.table.seen"] in d.value.columns]
    assert any(e.label.startswith(en["inspector.tokenization_title"].split("{")[0]) for e in at.expander)
    at.session_state["insp_tokens__open"] = True
    at.run()
    tokens = table_with(at, en["inspector.table.seen"])
    assert len(tokens) > 3 and en["inspector.table.piece"] in tokens.columns


@pytest.mark.slow
def test_the_score_says_what_it_is():
    at = run_page("inspector.py", "en", setup=with_text("I go to school."))
    headline = at.caption[0].value
    meta = json.loads((SHIPPED["en-ko"] / "meta.json").read_text(encoding="utf-8"))
    bleu = f"character BLEU {meta['scores']['bleu_beam4']:.1f}"
    assert bleu in headline and "synthetic" in headline and "28.4" in headline
    assert "not comparable" in headline


@pytest.mark.slow
def test_language_model_shows_next_token_candidates_per_position():
    if not (SHIPPED["lm"] / "model.safetensors").is_file():
        pytest.skip("the shipped lm model is not built")
    en = catalogue("en")

    def setup(at):
        at.session_state["insp_model"] = "lm"
        at.session_state["insp_for"] = "lm"
        at.session_state["insp_text"] = "The children walk home"
    at = run_page("inspector.py", "en", setup=setup)
    assert_clean(at)
    assert [tab.label for tab in at.tabs][-2] == en["inspector.tab.positions"]
    open_insp_tab(at, "positions")
    assert not [i for i in at.info if i.value == en["inspector.steps_none"]]
    table = next(d.value for d in at.dataframe if en["inspector.pos_table.first"] in d.value.columns)
    assert len(table) == 5  # <s> The children walk home
    assert list(table[en["inspector.pos_table.token"]])[:2] == ["<s>", "▁The"]
    assert list(table[en["inspector.pos_table.next"]])[:2] == ["▁The", "▁children"]
    assert table[en["inspector.pos_table.rank"]].iloc[-1] is None or table[en["inspector.pos_table.rank"]].isna().iloc[-1]
    at.slider(key="insp_pos").set_value(2).run()
    assert_clean(at)
    assert any("After position 2 the text continues with `▁children`" in m.value for m in at.markdown)


@pytest.mark.slow
def test_sampling_seed_is_shown_reproducible_and_renewable():
    if not (SHIPPED["lm"] / "model.safetensors").is_file():
        pytest.skip("the shipped lm model is not built")

    def session(seed=None):
        def setup(at):
            at.session_state["insp_model"] = "lm"
            at.session_state["insp_for"] = "lm"
            at.session_state["insp_text"] = "The children"
            if seed is not None:
                at.session_state["insp_seed"] = seed
        return run_page("inspector.py", "en", setup=setup)
    at = session()
    assert at.number_input(key="insp_seed").value == 0
    assert any(c.value.startswith("Seed 0, draw 1") for c in at.caption)
    at.button(key="insp_new_seed").click().run()
    assert_clean(at)
    seed = at.number_input(key="insp_seed").value
    assert seed != 0 and any(c.value.startswith(f"Seed {seed}, draw 1") for c in at.caption)
    texts = []
    for _ in range(2):  # two new sessions with the same seed draw the same tokens
        at = session(seed=7)
        for _ in range(3):
            at.button(key="insp_append").click().run()
        assert_clean(at)
        texts.append(at.text_area(key="insp_text").value)
    assert texts[0] == texts[1] and texts[0] != "The children"


@pytest.mark.slow
@pytest.mark.parametrize("model", ["en-ko", "lm"])
def test_korean_mode_card_and_device_are_korean(model):
    if not (SHIPPED[model] / "model.safetensors").is_file():
        pytest.skip(f"the shipped {model} model is not built")
    ko = catalogue("ko")

    def setup(at):
        at.session_state["insp_model"] = model
    at = run_page("inspector.py", "ko", setup=setup)
    assert_clean(at)
    captions = "\n".join(c.value for c in at.caption)
    assert "threads" not in captions and "스레드" in captions  # the sidebar's device line
    assert "layers=" not in captions and "레이어" in captions
    card = table_with(at, ko["inspector.card.col_fact"])
    assert list(card.columns) == [ko["inspector.card.col_fact"], ko["inspector.card.col_value"]]
    facts = dict(zip(card.iloc[:, 0], card.iloc[:, 1]))
    assert "배치당 64문장" in facts[ko["inspector.card.row.recipe"]]
    device = facts[ko["inspector.card.row.device"]]  # as recorded when the model was trained
    assert ("스레드" in device and "threads" not in device) or "CUDA" in device
    assert not re.search(r"\b(batch|steps|parameters|threads)\b", " ".join(map(str, facts.values())))
    labels = [e.label for e in at.get("expander")]
    assert ko["inspector.card.original"] in labels
    original = [c.value for c in at.code if c.value.startswith("# Model card")]
    assert original, "the full English card stays available, verbatim"


def _run_with_corpus(root, name, corpus: str | None, task="tsv"):
    """A training-page run folder: model/ (a copy of the shipped en-ko), args.json, corpus.tsv."""
    run = root / name
    shutil.copytree(SHIPPED["en-ko"], run / "model")
    meta = json.loads((run / "model" / "meta.json").read_text())
    (run / "model" / "meta.json").write_text(json.dumps({"task": task, "step": 10, "source": "training page",
                                                          "run": name, "has_tokenizer": meta["has_tokenizer"]}))
    (run / "model" / "CARD.md").unlink()
    (run / "args.json").write_text(json.dumps({"task": task, "seed": 0, "warmup": 100, "lr_factor": 2.0,
                                               "batch_size": 16, "tsv": str(run / "corpus.tsv")}))
    if corpus is not None:
        (run / "corpus.tsv").write_text(corpus, encoding="utf-8")


@pytest.mark.slow
def test_uploaded_corpus_run_gets_its_own_words(empty_runs):
    lines = [f"the bird sings song {i}\t새가 노래 {i}을 부른다" for i in range(40)]
    _run_with_corpus(empty_runs, "tsv-run", "\n".join(lines) + "\n")
    _run_with_corpus(empty_runs, "tsv-lost", None)
    en = catalogue("en")

    def setup(at):
        at.session_state["insp_model"] = "run: tsv-run"
        at.session_state["insp_vocab__open"] = True
    at = run_page("inspector.py", "en", setup=setup)
    assert_clean(at)
    assert at.text_area(key="insp_text").value.startswith("the bird sings song")  # examples from its corpus
    pills = {w.key: w for w in at.get("button_group")}
    assert "bird" in pills["insp_pal_words"].options
    at.text_area(key="insp_text").set_value("the bird sings a loud song").run()
    assert_clean(at)
    assert "`a`, `loud`" in _warnings(at)
    table = table_with(at, en["inspector.card.col_fact"])
    card = dict(zip(table.iloc[:, 0], table.iloc[:, 1]))
    assert "batches of 16 sentences" in card[en["inspector.card.row.recipe"]]  # from the run's args.json

    def lost(at):
        at.session_state["insp_model"] = "run: tsv-lost"
    at = run_page("inspector.py", "en", setup=lost)
    assert_clean(at)
    assert not at.get("button_group")
    captions = [c.value for c in at.caption]
    assert en["inspector.palette_none"] in captions and en["inspector.no_training_data"] in captions


def test_no_model_at_all_gets_a_message(empty_runs, monkeypatch):
    import app.resources as resources
    monkeypatch.setattr(resources, "SHIPPED", {})
    at = run_page("inspector.py", "ko")
    assert_clean(at)
    assert at.error[0].value.startswith(catalogue("ko")["inspector.errors.no_models"])


# ----------------------------------------------------------------------------- pages/views/inspector.py

class _Tok:
    pad_id, bos_id, eos_id, unk_id = 0, 2, 3, 1

    @staticmethod
    def is_byte(i):
        return i >= 100


def test_labels_show_control_characters_and_stay_unescaped():
    assert ins.labels(["a\nb", "\t", "", "<s>"]) == ["a\\nb", "\\t", "∅", "<s>"]  # figures escape labels themselves
    assert ins.clean_input("  hi  ") == ("hi", False)
    assert ins.clean_input("x" * 5, max_chars=3) == ("xxx", True)


def test_token_table():
    rows = ins.token_table([2, 5, 100, 7], ["<s>", "▁a", "<0xF0>", "b"], _Tok, frozenset({5}))
    en = catalogue("en")
    assert [r[en["inspector.table.seen"]] for r in rows] == [None, True, False, False]
    assert [r[en["inspector.table.byte"]] for r in rows] == [False, False, True, False]
    assert ins.token_table([5], ["a"], _Tok, None)[0][en["inspector.table.seen"]] is None  # training data unknown


def test_unknown_list_append_word_and_examples():
    known = frozenset({"You", "see", "."})
    assert ins.unknown_list(["you", "🐈", "a`b"], known) == "`you` (it knows `You`), `🐈`, `aʼb`"
    assert ins.append_word("", "the teacher") == "The teacher"
    assert ins.append_word("The teacher ", "like") == "The teacher like"
    assert ins.append_word("The teacher like the sea", ".") == "The teacher like the sea."
    assert ins.append_word("I go.", "you") == "I go. You"
    assert ins.append_word("x", "") == "x"
    lines = ins.example_lines([("motion", ["I go to school."]), ("brand_new_kind", ["a", "b"])])
    assert lines.splitlines() == [f"- **{catalogue('en')['inspector.example_kind.motion']}**: `I go to school.`",
                                  "- **brand_new_kind**: `a` · `b`"]  # a kind without a label yet shows its name
    assert ins.fresh_seed(5) != 5 and 0 <= ins.fresh_seed(None) < 1_000_000


def test_card_rows_and_summary_from_facts():
    from dataclasses import replace

    from model.training.card import CardFacts, Recipe
    facts = CardFacts(task="en-ko", architecture="encoder-decoder", norm_first=False, positional="sinusoidal",
                      d_model=128, n_heads=4, d_ff=512, n_encoder_layers=2, n_decoder_layers=2, vocab_size=800,
                      parameters=1_028_096, dropout=0.1, label_smoothing=0.1, recipe=Recipe(400, 1.0, 64, 0),
                      steps=1200, train_seconds=278.4, device="CPU · 2 threads (x86_64)",
                      scores={"exact_match_beam4": 0.992, "bleu_beam4": 99.82, "test_sentences": 1123.0, "new_metric": 1.0},
                      character_bleu=True)
    rows = {r["fact"]: r["value"] for r in ins.card_rows(facts)}
    assert rows["size"] == ("d_model=128, h=4, d_ff=512, 2 encoder + 2 decoder layers, vocabulary of 800, "
                            "1,028,096 parameters")
    assert rows["recipe"].startswith("Adam(β₁=0.9, β₂=0.98, ε=1e-09), warm-up over 400 steps (factor 1)")
    assert rows["training"] == "1,200 steps in 4.6 min" and rows["trained on"] == "CPU · 2 threads (x86_64)"
    assert rows["exact match, beam search (4)"] == "99.2%" and rows["character BLEU, beam search (4)"] == "99.8"
    assert rows["test sentences"] == "1,123" and "new_metric" not in rows
    summary = ins.summary(facts)
    assert summary[:4] == ["encoder-decoder", "d_model=128", "h=4", "2 encoder + 2 decoder layers"]
    assert "character BLEU 99.8" in summary[-1] and "28.4" in summary[-1] and "Hangul" in ins.score_note(facts)
    letters = replace(facts, task="copy", character_bleu=False)  # BLEU on words (here: letters)
    assert ins.summary(letters)[-1].startswith("test split: exact match 99.2%, BLEU 99.8")
    assert {r["fact"]: r["value"] for r in ins.card_rows(letters)}["BLEU, beam search (4)"] == "99.8"
    assert ins.score_note(letters) is None
    bare = CardFacts(task=None, architecture="decoder-only", norm_first=True, positional="learned", d_model=64,
                     n_heads=2, d_ff=128, n_encoder_layers=0, n_decoder_layers=1, vocab_size=10, parameters=5,
                     dropout=0.0, label_smoothing=0.0)
    rows = {r["fact"]: r["value"] for r in ins.card_rows(bare)}
    assert rows["recipe"] == rows["training"] == rows["trained on"] == "not recorded"
    assert ins.score_text(bare) is None and ins.layers_text(bare) == "1 decoder layer"


def test_position_rows():
    from model.lessons.probe import PositionCandidates
    cands = [PositionCandidates(0, [(5, 0.6), (6, 0.3)], 6, 0.3, 2), PositionCandidates(1, [(7, 0.9)], None, None, None)]
    rows = ins.position_rows([2, 6], cands, {2: "<s>", 5: "▁a", 6: "▁b", 7: "."}.get)
    assert rows == [{"position": 1, "token": "<s>", "next token": "▁b", "its probability": 0.3, "its rank": 2,
                     "first choice": "▁a (0.600)"},
                    {"position": 2, "token": "▁b", "next token": None, "its probability": None, "its rank": None,
                     "first choice": ". (0.900)"}]


def test_stats_and_averages_rows():
    stats = [{"layer": 0, "head": 0, "entropy": 0.12345, "entropy_norm": float("nan")},
             {"layer": 1, "head": 1, "entropy": 1.0}]
    rows = ins.stats_rows(stats)
    assert rows[0]["layer"] == 1 and rows[0]["head"] == 1 and rows[0]["entropy"] == 0.123
    assert rows[0]["entropy_norm"] is None and rows[1]["diagonal"] is None
    avg = ins.averages_rows([{"layer": 0, "entropy": 0.5}, {"layer": None, "entropy": float("nan")}])
    assert avg == [{"layer": "1", "entropy": 0.5}, {"layer": "all", "entropy": None}]


def test_device_text_reads_parts_and_recorded_descriptions():
    from app.resources import device_description, device_text
    from model.nn.device import DeviceParts, describe_device, format_parts
    assert device_text(DeviceParts("cpu", threads=2, machine="x86_64")) == "CPU · 2 threads (x86_64)"
    assert device_text(DeviceParts("cuda", name="NVIDIA H200", memory_gib=139.8)) == "CUDA · NVIDIA H200 (140 GiB)"
    assert device_text("CPU · 4 threads (arm64)") == "CPU · 4 threads (arm64)"
    assert format_parts(DeviceParts("cpu", threads=1, machine="x86_64")) == "CPU · 1 thread (x86_64)"
    assert device_text("CPU · 1 threads (x86_64)") == "CPU · 1 thread (x86_64)"  # a run file written before
    assert device_text("a TPU somewhere") == "a TPU somewhere" and device_text(None) == ""
    assert device_description() == describe_device()  # English: the same words as the run files


# ----------------------------------------------------------------------------- links

def open_link(params: dict, timeout: float = 120):
    return apptest_util.open_link("inspector.py", params, timeout=timeout)


def test_a_link_opens_the_exact_view():
    """model, sentence, attention kind, layer and head from a link: the widgets hold them, and the detail
    map is that head's cross-attention computed by the model itself."""
    from model.training.checkpoint import load_model_dir
    from model.inference.decode import translate
    from model.lessons.probe import kind_weights, pick_map

    sentence = "My mother loves the new movie."
    at = open_link({"model": "en-ko", "text": sentence, "kind": "cross", "layer": "2", "head": "3",
                    "decoding": "greedy", "lang": "ko"})
    assert_clean(at)
    assert not at.toast
    assert at.session_state["lang"] == "ko"
    assert at.selectbox(key="insp_model").value == "en-ko"
    assert at.text_area(key="insp_text").value == sentence
    assert at.radio(key="insp_kind").value == "cross"
    assert (at.selectbox(key="insp_layer").value, at.selectbox(key="insp_head").value) == (1, 2)
    assert at.radio(key="insp_method").value == "greedy"
    words = catalogue("ko")
    detail = [f for f in figures(at) if f"{words['common.layer']} 2 · {words['common.head']} 3" in title(f)]
    assert len(detail) == 1, [title(f) for f in figures(at)]
    result = translate(load_model_dir(SHIPPED["en-ko"]), sentence, greedy=True)
    expected = pick_map(kind_weights(result.attention, "cross"), 1, 2).numpy()
    assert any(z_of(f).shape == expected.shape and np.allclose(z_of(f), expected, atol=1e-5) for f in detail), \
        "the detail map is the linked head's cross-attention"
    # the address bar keeps describing the view
    assert at.query_params["layer"] == "2" and at.query_params["head"] == "3" and at.query_params["kind"] == "cross"


@pytest.mark.parametrize("params, bad", [
    ({"model": "no-such-model"}, "model"),
    ({"head": "99"}, "head"),
    ({"layer": "-5"}, "layer"),
    ({"kind": "<script>alert(1)</script>"}, "kind"),
    ({"text": "x" * 100_000}, "text"),
    ({"beam": "<b>4</b>"}, "beam"),
    ({"lang": "fr"}, "lang"),
])
def test_bad_link_values_fall_back_with_a_notice(params, bad):
    at = open_link({"model": "en-ko", **params})
    assert_clean(at)
    notices = [x.value for x in at.toast]
    assert len(notices) == 1 and bad in notices[0], notices
    assert at.selectbox(key="insp_model").value == "en-ko" or bad != "model"
    assert at.selectbox(key="insp_model").value in ("en-ko", "lm") if bad == "model" else True
    assert len(at.text_area(key="insp_text").value) < 1000
    assert at.radio(key="insp_kind").value == "encoder_self"
    assert (at.selectbox(key="insp_layer").value, at.selectbox(key="insp_head").value) == (0, 0)


def test_html_in_a_linked_sentence_is_never_rendered():
    """A link's text goes into the sentence box only: no Markdown/HTML element shows it as markup."""
    evil = "<img src=x onerror=alert(1)> **bold** [a](javascript:alert(1))"
    at = open_link({"model": "en-ko", "text": evil})
    assert_clean(at)
    assert at.text_area(key="insp_text").value == evil
    for element in [*at.markdown, *at.warning, *at.info, *at.caption]:
        assert "<img" not in element.value and "javascript:" not in element.value, element.value


@pytest.mark.parametrize("name, code", [("Helsinki-NLP/opus-mt-en-de", "offline"), ("not a name <b>", "bad_name")])
def test_the_download_box_explains_offline_and_bad_names(monkeypatch, name, code):
    """No network here: the download button says so at once (and a mistyped name is named as such)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    at = run_page("inspector.py", "en", setup=with_text("I see the sky."))
    at.text_input(key="insp_hub_name").set_value(name)
    at.button(key="insp_hub_fetch").click().run()
    assert_clean(at)
    assert catalogue("en")[f"inspector.hub.{code}"] in [w.value for w in at.warning]
    assert at.selectbox(key="insp_model").value == "en-ko"


def test_a_link_restores_the_head_view_and_the_decoding_step():
    """The head view's layer and heads and the step-by-step decoding's step and layer come back from a link."""
    at = open_link({"tab": "head", "hv_layer": "2", "hv_heads": "0,2"})
    assert_clean(at)
    assert at.selectbox(key="insp_hv_layer").value == 1 and at.multiselect(key="insp_hv_heads").value == [0, 2]
    at = open_link({"tab": "steps", "step": "2", "step_layer": "1"})
    assert_clean(at)
    assert at.slider(key="insp_step").value == 2 and at.selectbox(key="insp_step_layer").value == 0
