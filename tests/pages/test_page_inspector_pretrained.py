"""Pretrained models in the inspector: tiny random Marian, GPT-2 and BERT folders in the Hugging
Face layout, put where a learner puts them (./pretrained, here $ATLAS_PRETRAINED_DIR), are listed beside
the shipped models and run by our own model code: translation with all three kinds of attention, next-token
prediction, and [MASK] filling with bidirectional attention; the card says where the model came from and
how it differs from the paper."""
import json

import pytest
from app.i18n import LANGS

from tests.apptest_read import figures, tables, title
from tests.apptest_util import assert_clean, pretrained_runner, run_page

transformers = pytest.importorskip("transformers")
pytest.importorskip("regex")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    from tests.hub_fixtures_marian import build_marian_folder
    from tests.model.test_hub_bert import _make as make_bert
    from tests.model.test_hub_gpt2 import make_gpt2
    base = tmp_path_factory.mktemp("pretrained")
    build_marian_folder(base / "opus-mt-tiny", eos_bias=2.0)
    (base / "opus-mt-tiny" / "README.md").write_text("---\nlicense: apache-2.0\n---\n# tiny\n", encoding="utf-8")
    (base / "gpt2-tiny").mkdir()
    make_gpt2(base / "gpt2-tiny")
    make_bert(base / "bert-tiny")
    (base / "gpt2-half").mkdir()  # the same GPT-2 stored in float16, as many checkpoints on the Hub are
    make_gpt2(base / "gpt2-half")
    from safetensors.torch import load_file, save_file
    weights = base / "gpt2-half" / "model.safetensors"
    save_file({k: v.half().contiguous() for k, v in load_file(weights).items()}, weights, metadata={"format": "pt"})
    (base / "not-a-model").mkdir()
    (base / "not-a-model" / "config.json").write_text(json.dumps({"model_type": "t5"}))
    return base


@pytest.fixture
def use(pretrained, monkeypatch, tmp_path):
    return pretrained_runner(pretrained, monkeypatch, tmp_path / "empty-cache")


def card(at) -> dict:
    table = next(d for d in tables(at) if d.shape[1] == 2)  # the card's facts: a Markdown table
    return dict(zip(table.iloc[:, 0], table.iloc[:, 1]))


def test_pretrained_models_are_listed_beside_the_shipped_ones(use):
    at = use("opus-mt-tiny", "hello world")
    options = at.selectbox(key="insp_model").options
    assert {"en-ko", "lm", "pretrained: opus-mt-tiny", "pretrained: gpt2-tiny", "pretrained: bert-tiny"} <= set(options)
    assert "pretrained: not-a-model" not in options  # an architecture we cannot run is not offered


@pytest.mark.parametrize("lang", list(LANGS))
def test_a_marian_model_translates_and_shows_all_attention(use, lang):
    at = use("opus-mt-tiny", "the cat sat on the mat", lang)
    assert_clean(at)
    assert at.radio(key="insp_kind").options and len(at.radio(key="insp_kind").options) == 3
    for kind in ("encoder_self", "decoder_self", "cross"):
        at.radio(key="insp_kind").set_value(kind).run()
        assert_clean(at)
    facts = card(at)
    origin = next(v for k, v in facts.items() if "opus-mt-tiny" in str(v))
    assert "marian" in origin
    differences = " ".join(e.value for e in at.markdown)  # listed under the card's table
    from app.i18n import catalogue
    said = catalogue(lang)  # the differences from the paper in words (model.nn.differences), not option=value
    assert "Swish (SiLU)" in differences and said["differences.pe_halves"] in differences
    assert "activation=" not in differences and "pe_layout=" not in differences
    assert "apache-2.0" in facts.values()


@pytest.mark.parametrize("lang", list(LANGS))
def test_a_float16_checkpoint_says_it_was_converted(use, pretrained, lang):
    """The import reads float16 weights as float32; the page says so in the learner's language, under the card's
    summary, and says nothing of it for a checkpoint stored in float32."""
    from safetensors import safe_open

    from app.i18n import catalogue, fill
    with safe_open(str(pretrained / "gpt2-half" / "model.safetensors"), "pt") as f:
        n = len(list(f.keys()))
    said = fill(catalogue(lang)["inspector.converted"], {"n": n, "dtype": "`float16`"})
    half = use("gpt2-half", "The cat", lang)
    assert_clean(half)
    assert said in [c.value for c in half.caption], [c.value for c in half.caption]
    plain = use("gpt2-tiny", "The cat", lang)
    assert not [c.value for c in plain.caption if "float32" in c.value]


def test_gpt2_predicts_the_next_token(use):
    at = use("gpt2-tiny", "The cat")
    assert_clean(at)
    assert at.radio(key="insp_kind").options == ["decoder_self"] or len(at.radio(key="insp_kind").options) == 1
    assert any(f["data"][0].get("orientation") == "h" for f in figures(at))  # the next-token bars
    from app.i18n import catalogue
    assert any(catalogue("en")["differences.norm_first"] in e.value for e in at.markdown)


def test_bert_fills_the_mask_with_bidirectional_attention(use):
    at = use("bert-tiny", "the cat [MASK] on the mat .")
    assert_clean(at)
    masks = [f for f in figures(at) if "[MASK]" in title(f)]
    assert len(masks) == 1
    bars = masks[0]["data"][0]
    assert len(bars["y"]) == 5  # the five most probable pieces
    assert len(at.radio(key="insp_kind").options) == 1
    alone = masks[0]["data"][0]["x"]
    at.text_input(key="insp_mlm_pair").set_value("a dog ran").run()  # a pair: sentence B in segment 1
    assert_clean(at)
    paired = next(f for f in figures(at) if "[MASK]" in title(f))["data"][0]["x"]
    assert paired != alone, "sentence B must change the prediction's probabilities"
    assert at.query_params.get("pair") in ("a dog ran", ["a dog ran"])
    at = use("bert-tiny", "no mask here")
    assert_clean(at)
    assert any("[MASK]" in i.value for i in at.info)


@pytest.mark.parametrize("lang", list(LANGS))
def test_overview_table_counts_imported_models_beside_the_paper(pretrained, monkeypatch, tmp_path, lang):
    """The overview's parameter table gains every imported model, counted from its weights (the
    count equals what our own loaded model holds)."""
    from model.hub import load_pretrained
    monkeypatch.setenv("ATLAS_PRETRAINED_DIR", str(pretrained))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    at = run_page(None, lang)
    assert_clean(at)
    table = tables(at)[0]
    names = list(table.iloc[:, 0])
    assert len(names) == 20 + 4, names  # Table 3's 20 rows, and the four runnable folders (not-a-model is left out)
    marian_row = table[table.iloc[:, 0].str.contains("opus-mt-tiny")].iloc[0]
    ours = load_pretrained(pretrained / "opus-mt-tiny").model.num_parameters()
    assert marian_row.iloc[1] == f"{ours:,}" and ours > 1000  # the computed count, right after the name
