"""The inspector on the worst damaged checkpoints (tests/model/test_hub_damaged.py builds and breaks them): a
config that claims a hidden size of 1e9, a Marian that asks for 20 million sinusoid positions, integer weights,
an `n_inner` of 1e12 and all-NaN weights are each listed, and opening one shows a clear st.error sentence that
names the reason, never an exception box, in both languages."""
import shutil

import pytest
import torch

from app.i18n import LANGS
from tests.apptest_util import assert_clean, run_page

pytest.importorskip("transformers")
pytest.importorskip("regex")

pytestmark = pytest.mark.slow

WORST = {  # folder name: (family, damage, words in the error)
    "bert-wide": ("bert", ("sized", 1, 1_000_000_000), "hidden_size 1000000000 but the weights are 32 wide"),
    "marian-positions": ("marian", ("sized", 4, 20_000_000), "max_position_embeddings 20,000,000"),
    "gpt2-int64": ("gpt2", ("embedding", lambda t: (t * 100).long()), "int64"),
    "gpt2-ffn": ("gpt2", ("sized", 2, 1e12), "n_inner"),
    "bert-nan": ("bert", ("embedding", lambda t: torch.full_like(t, float("nan"))), "not finite"),
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    from tests.model import test_hub_damaged as d
    bases = d.build_bases(tmp_path_factory.mktemp("bases"))
    root = tmp_path_factory.mktemp("damaged-pretrained")
    for name, (family, (how, *args), _) in WORST.items():
        work = root / "work" / name
        work.mkdir(parents=True)
        damage = d.sized(*args) if how == "sized" else d.set_embedding(*args)
        shutil.move(d.damaged(bases, work, family, damage), root / name)
    shutil.rmtree(root / "work")
    return root


@pytest.mark.parametrize("lang", list(LANGS))
def test_the_worst_damaged_checkpoints_show_one_clear_error(folder, monkeypatch, tmp_path, lang):
    monkeypatch.setenv("ATLAS_PRETRAINED_DIR", str(folder))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    for name, (_, _, words) in WORST.items():
        def setup(at, name=name):
            at.session_state["insp_model"] = f"pretrained: {name}"
            at.session_state["insp_for"] = f"pretrained: {name}"
            at.session_state["insp_text"] = "hello world"
        at = run_page("inspector.py", lang, setup=setup, timeout=120)
        assert_clean(at)
        assert f"pretrained: {name}" in at.selectbox(key="insp_model").options
        errors = [e.value for e in at.error]
        assert len(errors) == 1 and words in errors[0], (name, errors)
