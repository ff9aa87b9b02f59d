"""What every family section shares (pages/views/family.py, model/family): which models a section lists, and that a
wrong or damaged model folder becomes a clear message, never a traceback."""
import shutil

import pytest

from app.i18n import LANGS, catalogue
from tests.apptest_util import assert_clean, run_page
from model.training.checkpoint import CheckpointError
from model.data.corpus import ASSETS
from model.family import family_of, load_family_dir


def test_shipped_models_are_of_their_family():
    for task in ("mlm", "vit-digits", "detr-shapes"):
        assert family_of(ASSETS / "models" / task) == task
    assert family_of(ASSETS / "models" / "en-ko") is None


def test_a_folder_of_another_family_is_refused_by_name(tmp_path):
    with pytest.raises(CheckpointError, match="holds a vit-digits model, not detr-shapes"):
        load_family_dir(ASSETS / "models" / "vit-digits", expect="detr-shapes")
    with pytest.raises(CheckpointError, match="not a model of the Transformer family"):
        load_family_dir(ASSETS / "models" / "en-ko")
    bad = tmp_path / "vit"
    shutil.copytree(ASSETS / "models" / "vit-digits", bad)
    (bad / "model.safetensors").write_bytes(b"\0" * 100)
    with pytest.raises(CheckpointError, match="damaged or not a safetensors file"):
        load_family_dir(bad)


@pytest.mark.parametrize("member, task", [("vit", "vit-digits"), ("detr", "detr-shapes"), ("mlm", "mlm")])
def test_a_damaged_training_run_is_listed_and_explained(member, task, tmp_path, monkeypatch):
    """A run of this task whose weights are damaged: picked, it gives an error box, not an exception; runs of
    other families and translation runs are not listed in this section at all."""
    runs = tmp_path / "runs"
    shutil.copytree(ASSETS / "models" / task, runs / "mine" / "model")
    (runs / "mine" / "model" / "model.safetensors").write_bytes(b"garbage")
    other = "detr-shapes" if task != "detr-shapes" else "vit-digits"
    shutil.copytree(ASSETS / "models" / other, runs / "other" / "model")
    shutil.copytree(ASSETS / "models" / "en-ko", runs / "translation" / "model")
    monkeypatch.setenv("ATLAS_RUNS_DIR", str(runs))

    def setup(at):
        at.session_state["fam_member"] = member
        at.session_state[f"fam_{member}_model"] = "run: mine"
    at = run_page("family.py", "en", setup=setup)
    assert_clean(at)
    picker = at.selectbox(key=f"fam_{member}_model")
    assert set(picker.options) == {"shipped (trained here)", "run: mine"}
    assert any("run: mine" in e.value.replace("\\", "") for e in at.error)  # as read: the name is escaped


def test_the_inspector_lists_translation_runs_but_not_family_runs(tmp_path, monkeypatch):
    from app.resources import available_models
    runs = tmp_path / "runs"
    shutil.copytree(ASSETS / "models" / "vit-digits", runs / "vit-run" / "model")
    shutil.copytree(ASSETS / "models" / "en-ko", runs / "translation" / "model")
    monkeypatch.setenv("ATLAS_RUNS_DIR", str(runs))
    names = set(available_models())
    assert "run: translation" in names and "run: vit-run" not in names


@pytest.mark.parametrize("member, task", [("vit", "vit-digits"), ("detr", "detr-shapes"), ("mlm", "mlm")])
def test_a_run_opened_from_the_training_page_opens_its_member_with_it_picked(member, task, tmp_path, monkeypatch):
    """The training page's "Open on the family page" is a link with ?run=<id>: the page shows that run's member
    with the run picked, whatever member was open before."""
    runs = tmp_path / "runs"
    shutil.copytree(ASSETS / "models" / task, runs / "mine" / "model")
    monkeypatch.setenv("ATLAS_RUNS_DIR", str(runs))

    def setup(at):
        at.session_state["fam_member"] = "gpt"
        at.query_params["run"] = "mine"
    at = run_page("family.py", "en", setup=setup, timeout=180)
    assert_clean(at)
    assert at.session_state["fam_member"] == member
    assert at.selectbox(key=f"fam_{member}_model").value == "run: mine"


@pytest.mark.parametrize("lang", list(LANGS))
@pytest.mark.parametrize("page, key", [("family.py", "family.run_missing"), ("inspector.py", "inspector.run_missing")])
def test_a_link_to_a_run_that_is_gone_says_so(page, key, lang, tmp_path, monkeypatch):
    """A link to a deleted run (or one with no weights): a notice naming the run, as text, and the page as usual."""
    monkeypatch.setenv("ATLAS_RUNS_DIR", str(tmp_path / "runs"))
    at = run_page(page, lang, setup=lambda a: a.query_params.__setitem__("run", "gone-**x**"), timeout=180)
    assert_clean(at)
    head = catalogue(lang)[key].split("{id}")[0]
    shown = [w.value for w in at.warning if w.value.startswith(head)]
    assert len(shown) == 1 and "`gone-**x**`" in shown[0], [w.value for w in at.warning]
