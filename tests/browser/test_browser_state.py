"""What a learner set survives, in a real browser: on every page with inputs, set values that
differ from the defaults, visit two other pages and switch the language while away, come back — every
input and every number in every figure is as it was. Then "reset this page" brings the defaults back,
and the page's address opened in a fresh browser (a shared link) shows the same view."""
from __future__ import annotations

import json

import pytest

from app.pages_list import PAGES
from tests.streamlit_server import new_page, rerun, wait_idle
from tests.browser.test_browser_pages import SHOTS, assert_charts_readable, assert_no_exception, open_page, set_language

pytestmark = pytest.mark.browser
playwright = pytest.importorskip("playwright.sync_api")

BY_URL = {p.url: p for p in PAGES}

# What a learner does on each page: (action, widget key, argument). Keys are the pages' own widget keys;
# Streamlit gives a keyed widget's container the class `st-key-<key>`.
RECIPES = {
    "attention": [("slide", "att_dk", 5), ("toggle", "att_causal", None), ("slide", "att_hidden", 3),
                  ("fill", "att_tokens_q", "we eat rice")],
    "multihead": [("fill", "mh_sentence", "the old dog sleeps near the warm fire"), ("slide", "mh_d", 1),
                  ("toggle", "mh_pe", None), ("fill", "mh_seed", "7")],
    "positional": [("slide", "pe_len", 4), ("fill", "pe_dims", "0, 2, 5"), ("fill", "perm_sentence", "we like long walks"),
                   ("radio", "perm_order", 1), ("fill", "rot_k", "9")],
    "masks": [("fill", "mask_batch", "the cat sat\nI love you very much"), ("radio", "kind", 2),
              ("fill", "kind_src", "my sister reads a book")],
    "recipe": [("slide", "sch_d", 2), ("fill", "sch_pairs", "256, 2000"), ("slide", "ls_eps", 4),
               ("fill", "drop_sentence", "the boy eats an apple")],
    "why": [("fill", "cx_n", "400"), ("slide", "cx_r", 3)],  # k is a browser choice: tests/browser/test_browser_choices.py
    "inspector": [("fill", "insp_text", "My mother loves the new movie."), ("radio", "insp_kind", 2),
                  ("radio", "insp_method", 1)],
    "train": [("select", "train_task", 2), ("radio", "train_size", 1)],
    "family": [("fill", "fam_mlm_text", "The cat sees the [MASK] today."), ("fill", "fam_mlm_pair", "")],
}

SNAPSHOT_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const inputs = {};
  main.querySelectorAll('[class*="st-key-"]').forEach(el => {
    const key = Array.from(el.classList).find(c => c.startsWith('st-key-')).slice(7);
    const vals = [];
    el.querySelectorAll('input, textarea').forEach(i => {
      if (i.type === 'radio' || i.type === 'checkbox') vals.push(i.checked ? 'on' : 'off');
      else if (i.getAttribute('role') === 'combobox') vals.push('select=' + i.value);
      else vals.push(i.value);
    });
    if (vals.length) inputs[key] = vals;
  });
  const numbers = v => (Array.isArray(v) ? v.flat(3) : []).filter(x => typeof x === 'number').map(x => +x.toPrecision(6));
  // each chart's numbers: a Plotly plot's traces, or what a map drawn by app/static/atlas_map.js drew
  const figures = Array.from(main.querySelectorAll('.atlas-chart')).map(box => !box.atlasDrawn
      ? (box.data || []).map(tr => [numbers(tr.z), numbers(tr.x), numbers(tr.y)])
      : box.atlasDrawn.curves ? box.atlasDrawn.curves.map(c => [[], numbers(c.x), numbers(c.y)])
      : [[numbers(box.atlasDrawn.z), numbers(box.atlasDrawn.x), numbers(box.atlasDrawn.y)]]);
  return JSON.stringify({inputs, figures});
}"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from tests.streamlit_server import CHROMIUM, CHROMIUM_ARGS, streamlit_server
    SHOTS.mkdir(exist_ok=True)
    with streamlit_server({"ATLAS_RUNS_DIR": str(tmp_path_factory.mktemp("runs"))}) as url, \
            playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield url, b
        b.close()


def page_in_english(browser, info):
    """A fresh browser context on the page `info` in English, opened by its address (one page load, where going
    through the start page and the language switch took three runs): (context, page)."""
    base, b = browser
    ctx = b.new_context(viewport={"width": 1400, "height": 1000})
    page = new_page(ctx)
    page.goto(f"{base}/{'' if info == PAGES[0] else info.url}?lang=en")
    wait_idle(page)
    return ctx, page


def act(page, action: str, key: str, arg) -> None:
    box = page.locator(f"[data-testid='stMain'] .st-key-{key}").first
    assert box.count() == 1, f"no widget with key {key}"
    box.scroll_into_view_if_needed()
    with rerun(page):  # every action here changes its control: a run follows
        if action == "fill":
            field = box.locator("textarea, input").first
            field.fill(arg)
            field.press("Control+Enter" if field.evaluate("e => e.tagName") == "TEXTAREA" else "Enter")
        elif action == "slide":
            thumb = box.locator("input[type='range']").first
            thumb.focus()
            for _ in range(arg):
                thumb.press("ArrowRight")
        elif action == "toggle":
            box.locator("label").first.click()
        elif action == "radio":
            box.locator("label:has(input)").nth(arg).click()
        elif action == "select":
            box.locator("input[role='combobox']").first.click()
            page.locator("[role='option']").nth(arg).click()
        else:
            raise ValueError(action)


def snapshot(page, settle_ms: int = 500, tries: int = 60) -> dict:
    """Inputs and figure numbers once the page has settled: two reads `settle_ms` apart that agree (on a
    loaded machine, widgets inside columns and the charts can arrive seconds after the script run ends)."""
    wait_idle(page)
    last = page.evaluate(SNAPSHOT_JS)
    for _ in range(tries):
        page.wait_for_timeout(settle_ms)
        now = page.evaluate(SNAPSHOT_JS)
        if now == last:
            break
        last = now
    return json.loads(last)


def others(url: str) -> list:
    return [p for p in PAGES if p.url not in (url, "train")][:2]


@pytest.mark.parametrize("url", list(RECIPES))
def test_inputs_survive_other_pages_and_a_language_switch(browser, url):
    info = BY_URL[url]
    ctx, page = page_in_english(browser, info)
    try:
        before_defaults = snapshot(page)
        for action, key, arg in RECIPES[url]:
            act(page, action, key, arg)
            assert_no_exception(page, f"{url}: {action} {key}")
        changed = snapshot(page)
        assert_charts_readable(page, f"{url}: after its controls moved")
        for _, key, _ in RECIPES[url]:
            assert changed["inputs"].get(key) != before_defaults["inputs"].get(key), f"{url}: {key} did not change"
        first, second = others(url)
        open_page(page, "en", first)
        set_language(page, "ko")
        open_page(page, "ko", second)
        set_language(page, "en")
        open_page(page, "en", info)
        back = snapshot(page)
        page.screenshot(path=str(SHOTS / f"state-{url}-back.png"), full_page=True)
        assert back["inputs"] == changed["inputs"], f"{url}: inputs changed after visiting other pages"
        assert back["figures"] == changed["figures"], f"{url}: figures changed after visiting other pages"

        # The address bar now describes this view: a fresh browser session opened on it shows the same.
        link = page.url
        fresh = new_page(ctx.browser.new_context(viewport={"width": 1400, "height": 1000}))
        fresh.goto(link)
        wait_idle(fresh)
        shared = snapshot(fresh)
        linked_keys = [key for _, key, _ in RECIPES[url] if key in LINKED.get(url, ())]
        for key in linked_keys:
            assert shared["inputs"].get(key) == changed["inputs"].get(key), f"{url}: link {link} lost {key}"
        fresh.context.close()

        # Reset this page: every input back to where a new visitor starts.
        with rerun(page):
            page.locator("[data-testid='stSidebar'] .st-key-reset_page button").first.click()
        reset = snapshot(page)
        assert reset["inputs"] == before_defaults["inputs"], f"{url}: reset did not restore the defaults"
    finally:
        ctx.close()


# Inputs that a shared link carries (the page's main inputs).
LINKED = {
    "attention": {"att_tokens_q", "att_causal", "att_dk"},
    "multihead": {"mh_sentence", "mh_d", "mh_pe", "mh_seed"},
    "positional": {"pe_len", "pe_dims", "perm_sentence", "perm_order"},
    "masks": {"mask_batch", "kind", "kind_src"},
    "recipe": {"sch_d", "sch_pairs", "ls_eps"},
    "why": {"cx_n", "cx_r"},
    "inspector": {"insp_text", "insp_kind", "insp_method"},
    "train": {"train_task", "train_size"},
    "family": {"fam_mlm_text", "fam_mlm_pair"},
}


# What the browser shows as chosen in every choice widget of the page: a radio's checked option, a select
# slider's position, and whether each select box / multiselect shows a value.
CHOICES_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const out = [];
  main.querySelectorAll('[data-testid="stRadio"]').forEach((r, i) => {
    const inputs = Array.from(r.querySelectorAll('input[type="radio"]'));
    out.push('radio' + i + '=' + inputs.map((x, j) => x.checked ? j : null).filter(j => j !== null).join(','));
  });
  main.querySelectorAll('[data-testid="stSlider"] [role="slider"]').forEach((s, i) => {
    out.push('slider' + i + '=' + s.getAttribute('aria-valuenow'));
  });
  main.querySelectorAll('[data-testid="stSelectbox"]').forEach((s, i) => {
    const shown = (s.querySelector('[data-baseweb="select"]') || s).innerText.trim();
    out.push('select' + i + '=' + (shown ? 'shown' : 'empty'));
  });
  return out;
}"""


def settled(page, js: str, expect=None, tries: int = 60, pause_ms: int = 500):
    """What `js` reads once the page has settled: two reads `pause_ms` apart that agree (on a loaded machine
    widgets in columns and fragments can arrive seconds after the run ends), or, given `expect`, as soon as
    a read equals it. A widget drawn without its choice stays so, and the last read is returned."""
    wait_idle(page)
    last = page.evaluate(js)
    for _ in range(tries):
        if expect is not None and last == expect:
            return last
        page.wait_for_timeout(pause_ms)
        now = page.evaluate(js)
        if expect is None and now == last:
            return now
        last = now
    return last


@pytest.mark.parametrize("info", [p for p in PAGES if p.url != "train"], ids=lambda p: p.url)
def test_a_language_switch_keeps_every_choice_on_screen(browser, info):
    """A radio, select box or select slider matches its value by the option's label; a language switch
    changes every label, and Streamlit then drew the radio with no option selected (the value itself was
    kept). After switching on the page, and back, the browser shows the same choices."""
    ctx, page = page_in_english(browser, info)
    try:
        en = settled(page, CHOICES_JS)
        set_language(page, "ko")
        ko = settled(page, CHOICES_JS, expect=en)
        page.screenshot(path=str(SHOTS / f"lang-switch-{info.url}-ko.png"), full_page=True)
        assert ko == en, f"{info.url}: after switching to Korean the page shows other choices"
        set_language(page, "en")
        assert settled(page, CHOICES_JS, expect=en) == en, f"{info.url}: after switching back the page shows other choices"
        assert_no_exception(page, f"{info.url}: language switch")
    finally:
        ctx.close()


def test_the_word_palette_draws_its_open_group_and_keeps_its_place(browser):
    """The inspector's palette box is a fragment that draws only its open word group. In a real
    browser: opening the box and another group shows that group's words only; a word click reaches the
    sentence box and the translation (the sentence's section reruns, not the page above it: the server reports
    fragment runs only), and the box and its group stay open, also through a language switch; closed by hand,
    it stays closed."""
    info = BY_URL["inspector"]
    ctx, page = page_in_english(browser, info)
    try:
        main = page.locator("[data-testid='stMain']")
        words = main.locator("[data-testid='stButtonGroup'] button")  # every word button drawn
        summary = main.locator("[data-testid='stExpander'] summary").filter(has_text="Words and sentences")
        assert words.count() == 0, "a closed box draws no word buttons"
        with rerun(page):
            summary.click()
        assert main.locator(".st-key-insp_pal_subject button").count() > 10
        assert words.count() == main.locator(".st-key-insp_pal_subject button").count(), "the open group only"
        with rerun(page):
            main.get_by_role("tab", name="verbs", exact=True).click()
        assert main.locator(".st-key-insp_pal_verb button").count() > 10
        assert main.locator(".st-key-insp_pal_subject button").count() == 0
        pieces = main.locator("[data-testid='stExpander'] summary").filter(has_text="Tokenization")
        before = pieces.inner_text()  # "Tokenization: 9 pieces", drawn by the page above the box
        with rerun(page) as ended:
            main.locator(".st-key-insp_pal_verb button").filter(has_text="like").first.click()
        assert main.locator(".st-key-insp_text textarea").input_value().rstrip().lower().endswith("like")
        # the word lands after the sentence's full stop, so the text now holds two sentences: the section around the
        # box follows, with its tokens or with the note that each sentence is translated on its own
        follows = pieces.inner_text() != before or main.get_by_text("Sentence shown below").count() > 0
        assert follows, "the section around the box follows the new sentence"
        runs = ended()  # the palette's own run ends early, for the sentence's section
        assert "FINISHED_FRAGMENT_RUN_SUCCESSFULLY" in runs and "FINISHED_SUCCESSFULLY" not in runs, \
            f"a word click reruns the sentence's section only, not the page: {runs}"
        with rerun(page) as ended:
            typed = main.locator(".st-key-insp_text textarea")
            typed.fill("I like the sea.")
            typed.press("Control+Enter")
        assert pieces.inner_text() != before
        assert set(ended()) == {"FINISHED_FRAGMENT_RUN_SUCCESSFULLY"}, f"a typed sentence: {ended()}"
        assert main.locator(".st-key-insp_pal_verb button").count() > 10, "the box and its group stay open"
        assert_no_exception(page, "palette word click")
        set_language(page, "ko")
        assert main.get_by_role("tab", name="동사", exact=True).get_attribute("aria-selected") == "true"
        assert main.locator(".st-key-insp_pal_verb button").count() > 10
        with rerun(page):
            main.locator("[data-testid='stExpander'] summary").filter(has_text="이 모델이 아는").click()
        assert words.count() == 0
        with rerun(page):
            main.locator(".st-key-insp_method label:has(input)").nth(1).click()  # a rerun of the whole page
        assert words.count() == 0, "closed by hand, it stays closed"
        assert_no_exception(page, "palette closed")
    finally:
        ctx.close()


def test_back_leaves_a_page_in_two_steps_and_a_control_adds_one(browser):
    """Opening a page from the sidebar adds two entries to the browser's history: Streamlit's own (the page's
    address) and the page's link, sent once (app.state.send_link). Before, each of the link's parameters
    was an entry of its own: leaving the attention page took 17 presses of Back. A control that changes the
    link adds one entry."""
    base, b = browser
    ctx = b.new_context(viewport={"width": 1400, "height": 1000})
    page = new_page(ctx)
    try:
        page.goto(base)
        wait_idle(page)
        set_language(page, "en")
        start = page.evaluate("history.length")
        open_page(page, "en", BY_URL["attention"])
        opened = page.evaluate("history.length")
        assert opened - start <= 2, f"opening the attention page added {opened - start} history entries"
        for _ in range(2):
            page.go_back()
            wait_idle(page)
            page.wait_for_timeout(500)
        assert "/attention" not in page.url, page.url
        open_page(page, "en", BY_URL["attention"])
        opened = page.evaluate("history.length")
        act(page, "slide", "att_dk", 1)  # (a fragment's rerun: its change is sent at once)
        assert "dk=65" in page.url
        assert page.evaluate("history.length") - opened == 1, "one control, one entry"
        assert_no_exception(page, "attention, after Back")
    finally:
        ctx.close()


# ----------------------------------------------------------------------------- ranges that follow other controls
# The positional page's sliders whose range follows another slider: (key, link name, the range's end as a
# function of (length, d_model)). Each starts at 0. The anchor and the highlighted position only change the drawing:
# they are answered in the browser (app/fast/choice.py, their channel below), and their link holds the value the
# learner asked for, which the view shows where it fits and the nearest that fits where it does not.
DEPENDENT = {"pe_anchor": ("anchor", lambda L, D: L - 1), "rot_p": ("highlight", lambda L, D: L - 1),
             "rot_i": ("pair", lambda L, D: D // 2 - 1)}
IN_BROWSER = {"pe_anchor": ("pe-anchor", 50), "rot_p": ("pe-highlight", 3)}  # channel, first value
POSITIONAL_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const sliders = {};
  for (const key of ['pe_len', 'pe_d', 'rot_i']) {
    const input = main.querySelector('.st-key-' + key + ' input[type="range"]');
    sliders[key] = input ? +input.value : null;
  }
  for (const [key, channel] of [['pe_anchor', 'pe-anchor'], ['rot_p', 'pe-highlight']]) {
    const input = main.querySelector('input[data-channel="' + channel + '"]');
    sliders[key] = input ? +input.value : null;  // the index of the value: the values start at 0
  }
  const plots = Array.from(main.querySelectorAll('.js-plotly-plot'));
  const titles = plots.map(gd => (gd.layout && gd.layout.title && gd.layout.title.text) || '').concat(
    Array.from(main.querySelectorAll('.atlas-map')).map(d => d.atlasDrawn.titleText));  // maps on our canvas
  const ownDot = Array.from(main.querySelectorAll('.atlas-map')).map(d => d.atlasDrawn)
    .find(d => d && d.kind === 'lines' && d.titleText.includes('Dot product'));  // on our canvas, or Plotly's
  const dot = ownDot ? {layout: {shapes: ownDot.vlines.map(x => ({x0: x}))}}
    : plots.find(gd => ((gd.layout.title || {}).text || '').includes('Dot product'));
  const circle = plots.find(gd => ((gd.layout.title || {}).text || '').startsWith('<b>Pair'));
  return JSON.stringify({sliders, titles, url: location.search,
    dot_line: dot && dot.layout.shapes && dot.layout.shapes.length ? dot.layout.shapes[0].x0 : null,
    circle_marks: circle ? circle.data.slice(2).map(tr => tr.text[1]) : null});
}"""


def _positional_view(page) -> dict:
    """The sliders, figures and link once the page has settled (two reads 400 ms apart agree)."""
    from urllib.parse import parse_qs
    wait_idle(page)
    last = page.evaluate(POSITIONAL_JS)
    for _ in range(40):
        page.wait_for_timeout(400)
        now = page.evaluate(POSITIONAL_JS)
        if now == last:
            break
        last = now
    view = json.loads(last)
    view["link"] = {k: v[0] for k, v in parse_qs(view["url"].lstrip("?")).items()}
    return view


def _assert_agree(view: dict, where: str) -> None:
    s, link, titles = view["sliders"], view["link"], view["titles"]
    L, D = s["pe_len"], s["pe_d"]
    for key, name in (("pe_len", "length"), ("pe_d", "d_model"), ("rot_i", "pair")):
        assert link.get(name) == str(s[key]), f"{where}: {key} shows {s[key]}, the link says {name}={link.get(name)}"
    for key, (_, first) in IN_BROWSER.items():  # the link's value where it fits, else the nearest that does
        name = DEPENDENT[key][0]
        asked = int(link.get(name, first))
        assert min(asked, L - 1) == s[key], f"{where}: {key} shows {s[key]}, the link says {name}={link.get(name)}"
    assert any(f"PE: {L} positions × {D} dimensions" in x for x in titles), f"{where}: heatmap {titles[:1]}"
    assert any(f"Dot product with position p = {s['pe_anchor']}<" in x for x in titles), f"{where}: {titles}"
    assert view["dot_line"] == s["pe_anchor"], f"{where}: the anchor line at {view['dot_line']}"
    assert any(f"M_k for k = 5, pair i = {s['rot_i']}<" in x for x in titles), f"{where}: {titles}"
    marks = view["circle_marks"]  # p + k may lie past the table: the circle's arrow points there all the same
    assert marks == [f"position {s['rot_p']}", f"position {s['rot_p'] + 5}"], \
        f"{where}: the circle marks {marks}, the highlighted position is {s['rot_p']}"


def test_positional_sliders_their_figures_and_the_link_agree_after_any_moves(browser):
    """Set the anchor, the highlighted position and the dimension pair, then move length and d_model (first one
    step, as the learner who found it did, then a seeded random sequence of moves of all five): after every move
    each slider, its figure and the link say the same value, and each dependent slider shows the value the
    learner gave it, or the nearest that fits its range. Before, a slider whose range changed showed 0 (and its
    figure followed) while the link kept the old value."""
    import random
    base, b = browser
    ctx = b.new_context(viewport={"width": 1400, "height": 1000})
    page = new_page(ctx)
    try:
        page.goto(f"{base}/positional?lang=en")
        wait_idle(page)
        asked = {"pe_anchor": 50, "rot_p": 3, "rot_i": 0}  # the defaults, then what the learner moved them to
        moves = [("pe_anchor", "PageUp"), ("rot_p", "PageUp"), ("rot_i", "PageUp"), ("pe_len", "ArrowRight"),
                 ("pe_d", "ArrowRight")]
        rng = random.Random(45)
        for _ in range(9):
            key = rng.choice(["pe_len", "pe_d", "pe_len", "pe_d", *DEPENDENT])
            keys = ["ArrowLeft", "ArrowRight", "PageDown", "PageUp", "Home"] + (["End"] if key in DEPENDENT else [])
            moves.append((key, rng.choice(keys)))
        for i, (key, press) in enumerate(moves):
            where_thumb = f"input[data-channel='{IN_BROWSER[key][0]}']" if key in IN_BROWSER else \
                f".st-key-{key} input[type='range']"
            thumb = page.locator(f"[data-testid='stMain'] {where_thumb}").first
            thumb.scroll_into_view_if_needed()
            value, lo, hi = (float(thumb.evaluate(f"e => e.{a}")) for a in ("value", "min", "max"))
            thumb.focus()
            if value == (lo if press in ("ArrowLeft", "PageDown", "Home") else hi) or key in IN_BROWSER:
                runs = page.__dict__["atlas_runs"][0]
                thumb.press(press)  # at that end already, or answered in the browser: nothing runs
                page.wait_for_timeout(300)
                assert page.__dict__["atlas_runs"][0] == runs, f"{key} {press} ran the script"
            else:
                with rerun(page):
                    thumb.press(press)
            view = _positional_view(page)
            where = f"move {i + 1} ({key} {press})"
            assert_no_exception(page, where)
            _assert_agree(view, where)
            s = view["sliders"]
            if key in asked:
                asked[key] = s[key]
            for dep, (_, end) in DEPENDENT.items():
                expected = min(asked[dep], end(s["pe_len"], s["pe_d"]))
                assert s[dep] == expected, f"{where}: {dep} shows {s[dep]}, the learner gave {asked[dep]}"
        page.screenshot(path=str(SHOTS / "state-positional-moves.png"), full_page=False)
    finally:
        ctx.close()


# ----------------------------------------------------------------------------- what a shared link carries
def _selected_tab(page, name: str) -> bool:
    return page.locator("[data-testid='stMain']").get_by_role("tab", name=name, exact=True).first \
        .get_attribute("aria-selected") == "true"


def _click_tab(page, name: str) -> None:
    with rerun(page, timeout=30_000):  # (a plain st.tabs ran nothing on a click)
        page.locator("[data-testid='stMain']").get_by_role("tab", name=name, exact=True).first.click()


def _train_steps(page):
    return page.locator("[data-testid='stMain'] [class*='st-key-train_steps_'] input").first


def _set_train_steps(page) -> None:
    field = _train_steps(page)
    field.scroll_into_view_if_needed()
    with rerun(page):
        field.fill("700")
        field.press("Enter")


def _toggle_reveal(page) -> None:
    box = page.locator("[data-testid='stMain'] .st-key-att_reveal").first
    box.scroll_into_view_if_needed()
    with rerun(page):
        box.locator("label").first.click()


def _reveal_on(page) -> bool:
    return page.locator("[data-testid='stMain'] .st-key-att_reveal input").first.is_checked()


# (page, what the learner does, the link's parameter and value, what a fresh browser on the link must show,
# and the same after a language switch to Korean)
LINK_CASES = {
    "inspector-tab": ("inspector", lambda p: _click_tab(p, "Head view"), ("tab", "head"),
                      lambda p: _selected_tab(p, "Head view"), lambda p: _selected_tab(p, "헤드 뷰")),
    "train-settings": ("train", _set_train_steps, ("steps", "700"), lambda p: _train_steps(p).input_value() == "700",
                       lambda p: _train_steps(p).input_value() == "700"),
    "attention-reveal": ("attention", _toggle_reveal, ("reveal", "1"), _reveal_on, _reveal_on),
    "masks-tab": ("masks", lambda p: _click_tab(p, "padding mask"), ("tab", "padding"),
                  lambda p: _selected_tab(p, "padding mask"), lambda p: _selected_tab(p, "패딩 마스크")),
}


@pytest.mark.parametrize("case", list(LINK_CASES))
def test_a_shared_link_and_a_language_switch_keep_what_the_learner_chose(browser, case):
    """The inspector's open tab, the training page's settings, the attention page's reveal toggle and the masks
    page's tab: each is in the page's link (a fresh browser opened on it shows the same) and survives a switch
    to Korean. Before, the link left the first three out, and the masks page's tab reset to the first when the
    language changed its labels."""
    from urllib.parse import parse_qs, urlparse
    url, act_, (name, value), shown, shown_ko = LINK_CASES[case]
    base, b = browser
    ctx = b.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = new_page(ctx)
        page.goto(f"{base}/{url}?lang=en")
        wait_idle(page)
        act_(page)
        assert_no_exception(page, f"{case}: after the choice")
        link = page.url
        assert parse_qs(urlparse(link).query).get(name) == [value], f"{case}: the link {link} lacks {name}={value}"
        fresh = new_page(ctx.browser.new_context(viewport={"width": 1400, "height": 1000}))
        fresh.goto(link)
        wait_idle(fresh)
        assert shown(fresh), f"{case}: a fresh browser on {link} does not show the choice"
        fresh.context.close()
        set_language(page, "ko")
        assert shown_ko(page), f"{case}: the choice is lost in Korean"
        assert parse_qs(urlparse(page.url).query).get(name) == [value], f"{case}: the Korean link lost {name}"
        page.screenshot(path=str(SHOTS / f"state-link-{case}-ko.png"), full_page=False)
    finally:
        ctx.close()
