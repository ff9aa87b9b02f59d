"""The inspector with byte-level BPE models that are not plain GPT-2 language models: a GPT2Model without a head
(attention only, and one sentence saying there is no next-token list), a RoBERTa masked LM (filled like BERT's,
with <mask>) and a RobertaModel without a head; tiny random folders put where a learner puts them."""
import pytest
from app.i18n import LANGS, catalogue

from tests.apptest_read import figures, title
from tests.apptest_util import assert_clean, pretrained_runner

transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    from tests.model.test_hub_gpt2 import make_gpt2_model
    from tests.model.test_hub_roberta import make_roberta
    base = tmp_path_factory.mktemp("pretrained")
    (base / "gpt2-model-tiny").mkdir()
    make_gpt2_model(base / "gpt2-model-tiny")
    make_roberta(base / "roberta-tiny")
    make_roberta(base / "roberta-model-tiny", transformers.RobertaModel, seed=3)
    return base


@pytest.fixture
def use(pretrained, monkeypatch, tmp_path):
    return pretrained_runner(pretrained, monkeypatch, tmp_path / "empty-cache")


@pytest.mark.parametrize("lang", list(LANGS))
def test_gpt2model_shows_attention_and_says_there_is_no_next_token_list(use, lang):
    at = use("gpt2-model-tiny", "The cat sat on the mat", lang)
    assert_clean(at)
    words = catalogue(lang)
    assert words["train.task.features"] in " ".join(c.value for c in at.caption)  # the summary names the task
    infos = [i.value for i in at.info]
    assert any(words["inspector.no_head_lm"] in v for v in infos), infos
    assert not any(f["data"][0].get("orientation") == "h" for f in figures(at))  # no next-token bars
    assert at.radio(key="insp_kind").value == "decoder_self" and len(at.radio(key="insp_kind").options) == 1
    assert at.tabs and not any(tab.label == words["inspector.tab.positions"] for tab in at.tabs)


def test_roberta_fills_the_mask_like_bert(use):
    at = use("roberta-tiny", None)  # the model's first example: the mlm examples with RoBERTa's <mask>
    assert_clean(at)
    assert "<mask>" in at.session_state["insp_text"] and "[MASK]" not in at.session_state["insp_text"]
    masks = [f for f in figures(at) if "<mask>" in title(f) or "&lt;mask&gt;" in title(f)]
    assert len(masks) == 1 and len(masks[0]["data"][0]["y"]) == 5
    assert any("<mask>" in h.value for h in at.subheader)  # "What the model puts in each <mask>"
    assert len(at.radio(key="insp_kind").options) == 1
    alone = masks[0]["data"][0]["x"]
    at.text_input(key="insp_mlm_pair").set_value("It was tired.").run()  # a pair: <s> A </s></s> B </s>
    assert_clean(at)
    paired = next(f for f in figures(at) if "mask" in title(f))["data"][0]["x"]
    assert paired != alone
    at = use("roberta-tiny", "no mask here [MASK]")
    assert_clean(at)
    assert any("<mask>" in i.value for i in at.info)  # says how this model writes the mask
    at = use("roberta-tiny", "a <pad> b <mask>")
    assert at.error and not at.exception  # one sentence, no traceback


@pytest.mark.parametrize("lang", list(LANGS))
def test_robertamodel_without_a_head_shows_attention(use, lang):
    at = use("roberta-model-tiny", "The cat sat on the mat", lang)
    assert_clean(at)
    assert any(catalogue(lang)["inspector.no_head_mlm"] in i.value for i in at.info)
    assert at.radio(key="insp_kind").value == "encoder_self" and len(at.radio(key="insp_kind").options) == 1
