"""The training page in a real browser: start a tiny run, leave for the overview page, come back,
watch it finish (the page refreshes itself), switch to Korean, open the run in the inspector.
Screenshots go to test-artifacts/browser-train-*.png."""
from __future__ import annotations

import os
import re
import shutil

import pytest

from app.i18n import catalogue
from tests.streamlit_server import CHROMIUM, CHROMIUM_ARGS, ROOT, cut_texts, new_page, rerun, streamlit_server

pytestmark = pytest.mark.browser
playwright = pytest.importorskip("playwright.sync_api")

if not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM):
    pytest.skip(f"no Chromium at {CHROMIUM} (install Debian's chromium)", allow_module_level=True)

SHOTS = ROOT / "test-artifacts"
KO = catalogue("ko")
STEPS = 40


def body_has(page, text: str, timeout: float = 60_000) -> None:
    page.wait_for_function("t => document.body.innerText.includes(t)", arg=text, timeout=timeout)


def settle(page, timeout: float = 60_000) -> None:
    page.wait_for_selector("[data-testid='stMain'] h1", timeout=timeout)
    page.wait_for_timeout(1200)


def nav(page, title: str) -> None:
    """Click a sidebar link (same browser session, unlike page.goto); a long list shows its last pages after
    Streamlit's "View more"."""
    link = page.locator("[data-testid='stSidebarNav'] a").filter(has_text=title).first
    more = page.locator("[data-testid='stSidebarNav']").get_by_text(re.compile(r"^View \d+ more$"))
    if not link.is_visible() and more.count():
        more.first.click()
    with rerun(page, draw_all=False):
        link.click()
    settle(page)


def selectbox_text(page, label: str) -> str:
    """What a selectbox shows (its label, the chosen option's text and its input's value)."""
    return page.evaluate("""label => [...document.querySelectorAll("[data-testid='stSelectbox']")]
        .filter(b => (b.querySelector("[data-testid='stWidgetLabel']") || {}).innerText?.trim() === label)
        .map(b => b.textContent + " " + [...b.querySelectorAll("input")].map(i => i.value).join(" "))
        .join(" | ")""", label)


def no_exception(page, where: str) -> None:
    boxes = page.locator("[data-testid='stException']")
    assert boxes.count() == 0, f"{where}: {boxes.first.inner_text()[:800]}"


def _run_folders(runs):
    """The runs folder's runs, not a copy still being written (.new-…, renamed once complete)."""
    return [d for d in runs.iterdir() if d.is_dir() and not d.name.startswith(".")]


def test_train_leave_return_inspect(tmp_path):
    SHOTS.mkdir(exist_ok=True)
    runs = tmp_path / "runs"
    with streamlit_server({"ATLAS_RUNS_DIR": str(runs)}) as url, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = new_page(browser, viewport={"width": 1400, "height": 3400})
        try:
            page.goto(f"{url}/train")
            settle(page)
            body_has(page, "Train your own Transformer")
            body_has(page, "No runs yet")
            steps = page.locator("[data-testid='stNumberInput'] input").first
            steps.fill(str(STEPS))
            with rerun(page, draw_all=False):
                steps.press("Enter")
            page.get_by_role("button", name="Start training").click()
            body_has(page, f"of {STEPS}")  # the run's progress bar
            no_exception(page, "train page after start")
            page.screenshot(path=str(SHOTS / "browser-train-started-en.png"))
            run_dirs = _run_folders(runs)
            assert len(run_dirs) == 1 and run_dirs[0].name.startswith("copy-")

            nav(page, "Overview")  # the run keeps going without the page
            body_has(page, catalogue("en")["overview.paper_models"])
            no_exception(page, "overview")
            nav(page, "Train your own")
            body_has(page, f"done · step {STEPS} of {STEPS}", timeout=120_000)  # refreshed by the fragment
            body_has(page, f"finished {STEPS} steps")
            page.wait_for_timeout(2500)  # the app rerun that switches the auto-refresh off
            no_exception(page, "train page, run done")
            assert cut_texts(page) == [], "train page, run done: texts cut short"
            page.screenshot(path=str(SHOTS / "browser-train-done-en.png"), full_page=True)

            with rerun(page, draw_all=False):
                page.locator("[data-testid='stSidebar'] [data-testid='stRadio'] label").filter(has_text="한국어").click()
            settle(page)
            body_has(page, "나만의 Transformer 학습하기")
            body_has(page, f"{STEPS} 스텝을")
            no_exception(page, "train page (ko)")
            assert cut_texts(page) == [], "train page (ko): texts cut short"
            page.screenshot(path=str(SHOTS / "browser-train-done-ko.png"), full_page=True)

            inspector = ROOT / "pages" / "inspector.py"
            if not inspector.is_file():
                pytest.skip("pages/inspector.py does not exist yet: 'open in inspector' not clicked")
            page.get_by_role("link", name="인스펙터에서 열기").click()  # a link: the browser changes page itself
            page.wait_for_url("**/inspector?**", timeout=60_000)
            try:
                settle(page, timeout=120_000)
            except Exception:  # what the learner saw instead of the inspector, for the CI's artifacts
                page.screenshot(path=str(SHOTS / "browser-train-inspector-not-drawn.png"), full_page=True)
                raise
            # The inspector's model picker shows this run (a selectbox: its text is not in innerText).
            page.wait_for_function(
                """name => [...document.querySelectorAll("[data-testid='stSelectbox'] *, input")].some(
                       e => (e.textContent || "").includes(name) || (e.value || "").includes(name))""",
                arg=run_dirs[0].name, timeout=30_000)
            page.screenshot(path=str(SHOTS / "browser-train-inspector-ko.png"), full_page=True)

            # A new sentence reruns the inspector's sentence section only; but after newer weights of the open
            # model (a run saving a checkpoint), it reruns the whole page, whose card describes the weights.
            weights = run_dirs[0] / "model" / "model.safetensors"
            for sentence, newer in (("1 2 3", True), ("1 2 3 4", False)):
                if newer:
                    later = weights.stat().st_mtime + 60
                    os.utime(weights, (later, later))
                with rerun(page, draw_all=False) as ended:
                    box = page.locator(".st-key-insp_text textarea")
                    box.fill(sentence)
                    box.press("Control+Enter")
                page.wait_for_timeout(1000)
                runs_now = ended()
                if newer:
                    assert "FINISHED_SUCCESSFULLY" in runs_now, f"newer weights: the whole page reruns ({runs_now})"
                else:
                    assert set(runs_now) == {"FINISHED_FRAGMENT_RUN_SUCCESSFULLY"}, runs_now
            no_exception(page, "inspector, newer weights")

            # A second run: "Show run" must switch to it at once, with its Stop button, although an older,
            # finished run was selected before (it used to stay on the old run until the learner switched).
            nav(page, "직접 학습하기")
            steps = page.locator("[data-testid='stNumberInput'] input").first
            steps.fill("3000")
            with rerun(page, draw_all=False):
                steps.press("Enter")
            page.get_by_role("button", name=KO["train.start"]).click()
            for _ in range(60):
                newest = sorted(_run_folders(runs), key=lambda d: d.stat().st_mtime)
                if len(newest) == 2:
                    break
                page.wait_for_timeout(500)
            second = [d.name for d in _run_folders(runs) if d.name != run_dirs[0].name]
            assert len(second) == 1, second
            for wait in range(3):  # through a few of the fragment's own refreshes
                page.wait_for_timeout(2500)
                shown = selectbox_text(page, KO["train.show_run"])
                assert second[0] in shown, (wait, shown)
                assert page.get_by_role("button", name=KO["train.action.stop"]).count() == 1
            no_exception(page, "second run started")
            page.screenshot(path=str(SHOTS / "browser-train-second-ko.png"), full_page=True)
            with rerun(page, draw_all=False):
                page.get_by_role("button", name=KO["train.action.stop"]).click()
        finally:
            browser.close()


def stop_button(page):
    """The run's Stop button (not Streamlit's own Stop in the toolbar, shown while a script runs)."""
    return page.locator("[data-testid='stMain']").get_by_role("button", name=catalogue("en")["train.action.stop"],
                                                               exact=True)


def test_a_reload_keeps_the_learners_runs_and_a_copied_link_does_not(tmp_path):
    """Start a run, reload the page (a new Streamlit session): its Stop button is still there (the browser's
    cookie keeps the owner token). The same address in another browser shows the run read-only. Stop works
    after the reload."""
    SHOTS.mkdir(exist_ok=True)
    en = catalogue("en")
    runs = tmp_path / "runs"
    with streamlit_server({"ATLAS_RUNS_DIR": str(runs)}) as url, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        mine, theirs = (browser.new_context(viewport={"width": 1000, "height": 2400}) for _ in range(2))
        page = new_page(mine)
        try:
            page.goto(f"{url}/train")
            settle(page)
            body_has(page, en["train.owner_note"].split(":")[0])  # says what a private window does
            steps = page.locator("[data-testid='stNumberInput'] input").first
            steps.fill("3000")
            with rerun(page, draw_all=False):
                steps.press("Enter")
            page.locator("[data-testid='stMain']").get_by_role("button", name=en["train.start"]).click()
            stop_button(page).wait_for(timeout=60_000)
            cookies = {c["name"]: c for c in mine.cookies()}
            assert "atlas_owner" in cookies and cookies["atlas_owner"]["sameSite"] == "Strict"
            assert cookies["atlas_owner"]["value"] not in page.url

            page.reload()
            settle(page)
            stop_button(page).wait_for(timeout=60_000)
            assert en["train.not_yours"] not in page.inner_text("body")
            assert cut_texts(page) == [], "train page at 1000 px: texts cut short"
            page.screenshot(path=str(SHOTS / "browser-train-reloaded-en.png"), full_page=True)

            other = new_page(theirs)  # a copied link, opened in another browser
            other.goto(page.url)
            settle(other)
            body_has(other, en["train.not_yours"].split(":")[0])
            assert stop_button(other).count() == 0
            other.screenshot(path=str(SHOTS / "browser-train-not-yours-en.png"), full_page=True)

            with rerun(page, draw_all=False):
                stop_button(page).click()
            body_has(page, en["jobs.state.stopped"] + " · ", timeout=60_000)
            no_exception(page, "train page, stopped after a reload")
        finally:
            browser.close()
