"""The inspector with today's decoders (model/hub/llama.py): a tiny random Llama (grouped-query attention,
SentencePiece tokenizer.model), Mistral (a window shorter than the sentence) and Qwen2 (q/k/v biases, byte-level
BPE tokenizer.json) put where a learner puts them, opened in every language: attention maps, next-token bars,
no error."""
import pytest
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
    assert any(f["data"][0].get("type") == "heatmap" for f in drawn)  # the attention maps
