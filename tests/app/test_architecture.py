"""The house rules, checked on the source: computation lives in model/, figures in app/charts/, words in
the catalogues; pages are thin. "Pages" is everything under pages/: the pages themselves, the family page's
members (pages/family/) and the page-side helpers (pages/views/)."""
import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "pages").rglob("*.py"))
MODEL = sorted((ROOT / "model").rglob("*.py"))
APP = sorted((ROOT / "app").rglob("*.py"))
HANGUL = re.compile(r"[\uac00-\ud7a3]")
# Korean that is data, not UI text: the corpus lexicon and the worked example's tokens.
KOREAN_DATA_OK = {"model/data/corpus/grammar.py", "model/data/corpus/parser.py", "model/inference/metrics.py",
                  "app/i18n.py", "model/lessons/worked_example.py"}


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("path", PAGES, ids=rel)
def test_pages_do_not_import_torch(path):
    assert not any(m == "torch" or m.startswith("torch.") for m in imports(path))


@pytest.mark.parametrize("path", PAGES, ids=rel)
def test_pages_define_no_computing_functions(path):
    """A function in a page may lay out widgets; one that touches numpy, torch or math belongs in model/."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            if names & {"np", "torch", "math", "F"}:
                bad.append(node.name)
    assert bad == []


@pytest.mark.parametrize("path", MODEL, ids=rel)
def test_model_knows_no_streamlit_and_no_app(path):
    mods = imports(path)
    assert not any(m.split(".")[0] in ("streamlit", "app", "plotly") for m in mods), mods


@pytest.mark.parametrize("path", sorted((ROOT / "app" / "charts").glob("*.py")), ids=rel)
def test_charts_are_pure(path):
    mods = imports(path)
    assert not any(m.split(".")[0] in ("streamlit", "torch") for m in mods), mods


@pytest.mark.parametrize("path", PAGES + APP + MODEL, ids=rel)
def test_no_inline_translations(path):
    """One mechanism for two languages: no inline (en, ko) helpers, no Korean UI text in code."""
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"(?<![.\w])(tr|explain|fail)\(", text), "inline bilingual text: use t()/text()/error()"
    if rel(path) not in KOREAN_DATA_OK:
        assert not HANGUL.search(text), "Korean text in code: move it to app/locales or app/content"


def test_no_app_pages_folder():
    assert not (ROOT / "app" / "pages").exists(), "Streamlit would auto-detect app/pages/"


def test_the_pages_are_the_listed_files_and_the_subfolders_hold_none():
    """app/pages_list.py names the app's pages (app/main.py hands them to st.navigation): every top-level file of
    pages/ is one of them; pages/family/ and pages/views/ hold views and helpers the pages import, never a page."""
    from app.pages_list import PAGES as LISTED
    listed = sorted(p.file for p in LISTED)
    assert listed == sorted(p.name for p in (ROOT / "pages").glob("*.py"))
    assert {p.parent.name for p in PAGES if p.parent != ROOT / "pages"} == {"family", "views"}
    assert (ROOT / "pages" / "family" / "__init__.py").is_file(), "`import pages.family` must find the package, not the page"


INPUTS = {"text_input", "text_area", "number_input", "slider", "select_slider", "selectbox", "radio", "checkbox",
          "toggle", "segmented_control", "pills", "multiselect", "data_editor", "date_input", "color_picker"}
# Inputs that are momentary by design, not something a learner sets and expects back.
MOMENTARY = {
    "insp_example": "picks an example into the sentence box and is empty again",
    "insp_pal_": "word palette: a click appends a word to the sentence, then the palette clears",
}


@pytest.mark.parametrize("path", PAGES, ids=rel)
def test_every_input_is_kept(path):
    """The class of defect: an input drawn without app.state.keep is forgotten when the learner
    visits another page. Every input widget of a page passes **keep(...) (or is a listed momentary one)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in INPUTS):
            continue
        kept = any(k.arg is None and isinstance(k.value, ast.Call)  # keep(...) or a declared input's .keep(...)
                   and (getattr(k.value.func, "id", "") == "keep" or getattr(k.value.func, "attr", "") == "keep")
                   for k in node.keywords)
        key = next((k.value for k in node.keywords if k.arg == "key"), None)
        key_text = ast.unparse(key) if key is not None else ""
        if not kept and not any(m in key_text for m in MOMENTARY):
            bad.append(f"line {node.lineno}: {node.func.attr}({key_text or 'no key'})")
    assert bad == [], "inputs without keep(): " + "; ".join(bad)


@pytest.mark.parametrize("path", PAGES + [ROOT / "app" / "main.py"], ids=rel)
def test_no_page_relies_on_magic(path):
    """.streamlit/config.toml switches Streamlit's magic off (it re-parsed every page before its first run):
    a bare expression statement (`x`, `a if b else c`, a string that is not the docstring) would no longer
    be drawn, so a page has none."""
    assert "magicEnabled = false" in (ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bare = []
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if not isinstance(body, list):
                continue
            for i, child in enumerate(body):
                if isinstance(child, ast.Expr) and not isinstance(child.value, (ast.Call, ast.Await, ast.Yield)):
                    if i == 0 and isinstance(child.value, ast.Constant) and isinstance(child.value.value, str):
                        continue  # a docstring
                    bare.append(child.lineno)
    assert not bare, f"{rel(path)}: bare expressions on lines {bare} (draw them with st.write)"


@pytest.mark.parametrize("path", PAGES + APP, ids=rel)
def test_no_streamlit_placeholder_in_english(path):
    """Streamlit's own placeholder ("Choose options", "Choose an option") is English in both languages: it showed
    in the Korean printed-example exercise. A multiselect, and a select box that can be empty (index=None), pass
    their own `placeholder=t(...)`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        names = {k.arg for k in node.keywords}
        empty_select = node.func.attr == "selectbox" and any(
            k.arg == "index" and isinstance(k.value, ast.Constant) and k.value.value is None for k in node.keywords)
        if (node.func.attr == "multiselect" or empty_select) and "placeholder" not in names:
            bad.append(f"line {node.lineno}: {node.func.attr}")
    assert bad == [], "Streamlit's English placeholder: " + "; ".join(bad)


UNSCOPED_CHARTS = re.compile(r"""(?:document\.querySelector(?:All)?|page\.locator)\(\s*['"]\.js-plotly-plot[ '"]""")


@pytest.mark.parametrize("path", sorted((ROOT / "tests").glob("*.py")) + sorted((ROOT / "bench").glob("*.py")),
                         ids=lambda p: p.name)
def test_browser_checks_read_the_pages_charts_only(path):
    """The document also holds the warm-up's off-screen charts while it draws them (app/static/atlas_chart.js):
    a test or bench that reads `.js-plotly-plot` anywhere in the document can meet one (CI: the dark-theme test
    read a purged chart's `_fullLayout`). The page's charts are those under [data-testid="stMain"]."""
    found = [m.group(0) for m in UNSCOPED_CHARTS.finditer(path.read_text(encoding="utf-8"))]
    assert not found, found


ACTION_THEN_PAUSE = re.compile(r"^(?P<indent>[ \t]*)(?P<act>\S[^\n]*\.(?:click|press)\([^\n]*)\n"
                               r"(?P=indent)(?:wait_idle\(|settle\(|page\.wait_for_(?:function|timeout)\()", re.M)


@pytest.mark.parametrize("path", sorted((ROOT / "tests").glob("test_browser*.py")), ids=lambda p: p.name)
def test_browser_actions_wait_for_their_run(path):
    """A click that makes Streamlit run the page again, followed by a pause (wait_idle, settle) or a wait for a
    condition that may hold before the run, races a loaded machine: the run may not have started when the pause ends, and the test reads the page before the
    click (CI: the inspector's tab test read an empty panel). The click goes in `with rerun(page):`, which waits
    for a run to end; a click that starts no run says so in a comment ("no run follows")."""
    found = [m.group("act").strip() for m in ACTION_THEN_PAUSE.finditer(path.read_text(encoding="utf-8"))
             if "no run follows" not in m.group("act")]
    assert not found, found


@pytest.mark.parametrize("path", [p for p in sorted((ROOT / "tests").glob("*.py")) if p.name != "streamlit_server.py"],
                         ids=lambda p: p.name)
def test_browser_tests_open_pages_through_new_page(path):
    """A test's browser page comes from tests.streamlit_server.new_page: it counts the page's runs (rerun) and keeps
    the warm-up's hidden elements away (app.fast.browser_warm.elements: a run of their own, seconds after the page opens, drew
    a second progress bar and metric beside those the speed test read)."""
    found = re.findall(r"[^\n]*(?<!\bnew_page\()\b\w+\.new_page\([^\n]*", path.read_text(encoding="utf-8"))
    assert not found, found


def _calls(path: Path, name: str) -> bool:
    """Whether the file calls `<something>.name(...)` or passes `name=` to a call."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr == name:
                return True
            if any(k.arg == name for k in node.keywords):
                return True
    return False


def _page_code(page: Path) -> set[Path]:
    """The page's file and every module of pages/ it imports, directly or through another (the family page
    imports its members by name: all of pages/family/)."""
    seen, todo = set(), [page]
    if page.name == "family.py":
        todo += sorted((ROOT / "pages" / "family").glob("*.py"))
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for module in imports(path):
            if module.startswith("pages."):
                target = ROOT / (module.replace(".", "/") + ".py")
                if target.is_file():
                    todo.append(target)
    return seen


@pytest.mark.parametrize("page", sorted((ROOT / "pages").glob("*.py")), ids=rel)
def test_a_page_that_refreshes_itself_leaves_by_links(page):
    """A page with a self-refreshing fragment (run_every) moves the learner to another page with st.page_link,
    never st.switch_page: with a server-side switch the browser keeps the old page's fragment timers until the
    new page's first message, and a timer that fires in that moment reruns the old page's fragment after the
    new page has drawn, leaving it empty (app.state.opened_run)."""
    code = _page_code(page)
    refreshing = [rel(p) for p in code if _calls(p, "run_every")]
    switching = [rel(p) for p in code if _calls(p, "switch_page")]
    assert not (refreshing and switching), f"run_every in {refreshing}, st.switch_page in {switching}"
