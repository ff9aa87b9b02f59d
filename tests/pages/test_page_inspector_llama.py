"""The inspector with today's decoders (model/hub/llama.py): a tiny random Llama (grouped-query attention,
SentencePiece tokenizer.model), Mistral (a window shorter than the sentence) and Qwen2 (q/k/v biases, byte-level
BPE tokenizer.json) put where a learner puts them, opened in every language: attention maps, next-token bars,
no error."""
import pytest

from app.fast import attention_view as av
from tests.apptest_read import attention_views
from app.i18n import LANGS

from tests.apptest_read import figures
from tests.apptest_util import assert_clean, pretrained_runner

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

pytestmark = pytest.mark.slow
KINDS = ("llama-spm", "mistral-spm", "qwen2-bpe")


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    from tests.model.test_hub_llama import make_checkpoint
    base = tmp_path_factory.mktemp("pretrained")
    for name in KINDS:
        (base / name).mkdir()
        make_checkpoint(base / name, name)
    return base


@pytest.fixture
def use(pretrained, monkeypatch, tmp_path):
    return pretrained_runner(pretrained, monkeypatch, tmp_path / "empty-cache")


@pytest.mark.parametrize("name", KINDS)
@pytest.mark.parametrize("lang", list(LANGS))
def test_a_llama_family_decoder_shows_attention_and_the_next_token(use, name, lang):
    at = use(name, "The cat sat on the mat. 나는 고양이를 사랑한다.", lang)
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    drawn = figures(at)
    assert any(f["data"][0].get("orientation") == "h" for f in drawn)  # the next-token bars
    (view,) = attention_views(at)  # the attention maps, in the browser's view
    header, weights = av.read_payload(view)
    kind = header["kinds"][0]
    assert kind["causal"] and weights.size == kind["layers"] * kind["heads"] * kind["nq"] * kind["nk"]


@pytest.mark.parametrize("lang", list(LANGS))
def test_a_grouped_query_llama_says_its_differences_in_words_and_which_heads_share(use, pretrained, lang, monkeypatch):
    """The card's differences from the paper are sentences of the page's language (model.nn.differences), not
    `option=value`; the layer × head grid brackets the query heads that share a key/value head."""
    import re

    from app import i18n
    from model.hub import load_pretrained
    from model.nn.differences import differences_in_words
    from tests.apptest_read import _UNESCAPE, tables

    cfg = load_pretrained(pretrained / "llama-spm").config
    assert cfg.kv_heads < cfg.n_heads
    at = use("llama-spm", "The cat sat on the mat.", lang)
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    monkeypatch.setattr(i18n, "lang", lambda: lang)
    said = [i18n.say(m) for m in differences_in_words(cfg)]
    lists = [e.value for e in at.markdown if "RMSNorm" in e.value]
    assert len(lists) == 1, lists
    shown = [_UNESCAPE.sub(r"\1", line) for line in lists[0].splitlines()]
    assert shown == [f"- {s}" for s in said] and any("500,000" in s for s in said)
    assert not re.search(r"\b[a-z_]+=\S", lists[0]), lists[0]  # no option=value left
    row = [c for df in tables(at) for row in df.itertuples(index=False) for c in row
           if c == i18n.t("inspector.card.differences_below", n=len(said))]
    assert len(row) == 1  # the card's row counts them and points below
    group = cfg.n_heads // cfg.kv_heads
    expected = [i18n.t("inspector.kv_group", first=g * group + 1, last=(g + 1) * group, kv=g + 1)
                for g in range(cfg.kv_heads)]
    (view,) = attention_views(at)
    assert av.read_payload(view)[0]["kinds"][0]["groups"] == expected  # the view's labels over the heads
    monkeypatch.setenv("ATLAS_ATTENTION_VIEW", "server")  # and the grid as the server draws it
    at.run()
    grid = [f for f in figures(at) if f["layout"].get("annotations") and f["layout"].get("shapes")]
    assert grid, "no grid with brackets"
    shown = [a["text"].replace("<br>", " ") for a in grid[0]["layout"]["annotations"]]
    assert shown == expected
    assert ("share" if lang == "en" else "함께") in shown[0]
