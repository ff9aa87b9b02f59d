"""In Korean, every page says everything in Korean.

Each page (and each family member) runs in Korean with AppTest, every box and tab opened in turn; what a learner
reads is collected: prose, captions, messages, headings, widget labels, metric labels, tab and box labels, the
headers and cells of tables, the column names of data grids, and each chart's title, axis titles, legend names and
notes. A run of Latin letters there is an untranslated English word unless it is

- in the short allow list below (model and paper names, units, library and file names, paper terms kept in
  English on purpose),
- maths or code: inside `code` or $maths$, a single or two-letter symbol (Q, K, dₖ's d, QK), an identifier
  (d_model, P_drop, en-ko, x86_64, CamelCase), a function in a formula (softmax(…), min(…)), a path or file name,
- a gloss: English in parentheses right after the Korean word it explains, `쿼리(query)`,
- quoted (“…”: a title or a model's own name) or the paper's title,
- data: a word the page also shows as data (what the learner typed, a widget's options such as the example
  sentences, the tokens on a chart's axes, a data grid's cells): English sentences are what the models translate.

The page and the string are named when this fails."""
from __future__ import annotations

import re

import pytest

from app.pages_list import PAGES
from tests.apptest_read import charts
from tests.apptest_util import assert_clean, each_view, open_link, run_page

ALLOWED = {
    # models, papers, people, data sets
    "Transformer", "BERT", "GPT", "ViT", "DETR", "RoBERTa", "DistilBERT", "Marian", "MarianMT", "LLaMA", "BART",
    "ByteNet", "GNMT", "ConvS2S", "MoE", "Deep-Att", "PosUnk", "Ensemble", "RL", "Vaswani", "Bahdanau", "Luong",
    "Abnar", "Zuidema", "Dosovitskiy", "Clark", "ViT-Base", "WMT", "newstest", "NIPS", "arXiv", "UCI", "Hugging", "Face",
    "base", "big", "opus-mt", "tensor2tensor", "Attention", "Is", "All", "You", "Need",
    # tools, formats, hardware, units
    "PyTorch", "torch", "sentencepiece", "WordPiece", "Adam", "AdamW", "CPU", "GPU", "GPUs", "CUDA", "MPS", "NVIDIA",
    "BLEU", "PPL", "FLOP", "FLOPs", "TFLOP", "TFLOPS", "GFLOP", "UTF", "TSV", "CSV", "PNG", "JPEG", "WebP", "GIF", "BMP",
    "JSON", "MB", "GB", "KB", "GiB", "MiB", "ms", "UTC", "min", "rad", "nats", "NaN", "ETA", "cores", "ReLU", "GELU", "LayerNorm",
    "IoU", "NMS", "RNN", "CNN", "LSTM", "GRU", "post-LN", "pre-LN", "English", "ATLAS", "RUNS", "DIR",
    # special tokens
    "CLS", "SEP", "MASK", "pad", "unk", "bos", "eos", "lm", "mlm", "en-ko", "ko-en",
    # a checkpoint's model type (config.json's model_type), as the Hub names it
    "bert", "gpt2", "marian", "distilbert", "roberta", "vit",
    # the paper's symbols and functions in formulas: lrate = d^-0.5 · min(step^-0.5, step · warmup^-1.5), PE(pos)
    "lrate", "step", "warmup", "pos", "FFN", "softmax", "tanh", "sin", "cos", "exp", "log", "max", "diag", "Var",
}
# The paper's own row names (Table 2), quoted as printed
PAPER_NAMES = re.compile(r"Transformer \((?:base model|big)\)")
CODE = re.compile(r"(`+).+?\1", re.S)
MATHS = re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$", re.S)
LINK_TARGET = re.compile(r"\]\([^)]*\)|https?://\S+|:material/[\w_]+:|:(?:red|green|blue|gray|grey|orange|violet|rainbow)\[")
PATH = re.compile(r"(?:[\w.-]*/)+[\w.-]+|\b[\w-]+\.(?:md|py|json|toml|txt|safetensors|bin|model|tsv|csv|png)\b")
GLOSS = re.compile(r"(?<=[가-힣*_])\s?\((?=[^()]*[A-Za-z])[^()가-힣]*\)")
ASSIGNMENT = re.compile(r"\b[A-Za-z_]\w*=\S+")  # a setting as code writes it: positions=learned, d_model=512
QUOTED = re.compile(r"“[^”]*”|\*Attention Is All You Need\*")
ENTITY = re.compile(r"&(?:lt|gt|amp|quot);")
# a paired particle ("은(는)", written when the word before it is not known) right after a number, which is known
PAIRED_AFTER_NUMBER = re.compile(r"\d\s*(?:은\(는\)|는\(은\)|이\(가\)|가\(이\)|을\(를\)|를\(을\)|와\(과\)|과\(와\)|\(으\)로)")
WORD = re.compile(r"(?<![A-Za-z0-9_.+\\/-])[A-Za-z][A-Za-z0-9_'’.-]*(?:\([^)]*\))?")


def english_words(text: str, data: set[str]) -> list[str]:
    """The untranslated English words of a text a Korean page shows."""
    plain = ENTITY.sub(" ", QUOTED.sub(" ", GLOSS.sub(" ", PATH.sub(" ", LINK_TARGET.sub(
        " ", MATHS.sub(" ", CODE.sub(" ", text)))))))
    plain = ASSIGNMENT.sub(" ", PAPER_NAMES.sub(" ", plain))
    out = []
    for m in WORD.finditer(plain):
        word = m.group(0).rstrip(".-’'")
        if "(" in word:  # a function in a formula: softmax(…), Dropout(y)
            continue
        if (len(word) <= 2 or word in ALLOWED or word in data or re.search(r"[\d_=]", word)
                or re.search(r"[a-z][A-Z]", word)):
            continue
        out.append(word)
    return out


def _words(text: str) -> set[str]:
    """The Latin words of a data text, as english_words reads them."""
    return {w.rstrip(".-’'") for w in WORD.findall(text)}


def _plotly_words(fig: dict) -> tuple[list[str], set[str]]:
    """(texts the learner reads, data words) of a chart: titles, axis titles, legend names and notes; the
    categories and tick labels its axes show are data (tokens)."""
    texts, data = [], set()

    def walk(obj, key=""):
        if isinstance(obj, dict):
            for k, v in obj.items():
                if k in ("x", "y", "ticktext", "text", "customdata", "hovertext") and isinstance(v, list):
                    data.update(w for s in _flat(v) if isinstance(s, str) for w in _words(s))
                    if k == "text" and key == "annotations":
                        texts.extend(s for s in _flat(v) if isinstance(s, str))
                elif k in ("text", "name") and isinstance(v, str):
                    texts.append(v)
                else:
                    walk(v, k)
        elif isinstance(obj, list):
            for v in obj:
                walk(v, key)

    walk(fig)
    return texts, data


def _flat(v):
    for x in v:
        if isinstance(x, list):
            yield from _flat(x)
        else:
            yield x


WIDGETS = ("button", "toggle", "checkbox", "slider", "select_slider", "selectbox", "multiselect", "radio",
           "text_input", "text_area", "number_input", "segmented_control", "pills", "download_button")


def shown(at) -> tuple[list[tuple[str, str]], set[str]]:
    """((kind, text) the learner reads, data words) of one run."""
    texts: list[tuple[str, str]] = []
    data: set[str] = set()
    for kind in ("markdown", "caption", "title", "header", "subheader", "info", "warning", "error", "success",
                 "text", "toast"):
        for el in getattr(at, kind, []):
            value = getattr(el, "value", None)
            if isinstance(value, str):
                texts.append((kind, value))
    texts += [("metric", m.label) for m in at.metric]
    texts += [("tab", tab.label) for tab in at.tabs] + [("expander", e.label) for e in at.expander]
    for kind in WIDGETS:
        try:
            widgets = at.get(kind)
        except Exception:  # noqa: BLE001  (a kind this Streamlit does not have)
            continue
        for w in widgets:
            proto = getattr(w, "proto", None)
            label = getattr(w, "label", None) or getattr(proto, "label", None)
            if isinstance(label, str):
                texts.append((kind, label))
            for value in list(getattr(proto, "options", None) or []) + [getattr(w, "value", None)]:
                if isinstance(value, str):
                    data |= _words(value)
    for df in at.dataframe:
        frame = df.value
        texts += [("table header", str(c)) for c in frame.columns]
        data.update(w for cell in frame.to_numpy().ravel() for w in _words(str(cell)))
    for chart in charts(at):
        words, tokens = _plotly_words(chart.figure)
        texts += [("chart", w) for w in words]
        data |= tokens
    return texts, data


def _targets():
    for page in PAGES:
        yield page.file, {}
    for member in ("gpt", "vit", "detr"):
        yield "family.py", {"member": member}


def test_the_checker_sees_english_and_lets_the_rest_be():
    assert english_words("모델의 architecture를 봅니다 and more", set()) == ["architecture", "and", "more"]
    for fine in ("쿼리(query)와 키(key)", "`d_model` = 512, P_drop, en-ko, x86_64", "softmax(S) · Dropout(y)",
                 "Transformer (base)와 BERT", "“lm” 모델", "CARD.md 파일, docs/benchmarks.md", "$QK^T$ 와 Q, K, V",
                 ":material/link: 링크", ":green[:material/check_circle:] 좋다", "0 = &lt;pad&gt;"):
        assert english_words(fine, set()) == [], fine
    assert english_words("예: the cat", {"the", "cat"}) == []


@pytest.mark.slow
@pytest.mark.parametrize("page,params", list(_targets()), ids=lambda x: x if isinstance(x, str) else
                         "-".join(x.values()) or "default")
def test_a_korean_page_shows_no_untranslated_english(page, params):
    at = open_link(page, params, lang="ko", timeout=240) if params else run_page(page, "ko", timeout=240)
    assert_clean(at)
    found: dict[str, list[str]] = {}
    for view in each_view(at):
        assert_clean(view)
        texts, data = shown(view)
        for kind, text in texts:
            if words := english_words(text, data):
                found.setdefault(f"{kind}: {text[:90]}", sorted(set(words)))
            if pair := PAIRED_AFTER_NUMBER.search(text):  # "문장 2은(는)": a number takes a particle of its own
                found.setdefault(f"{kind}: {text[:90]}", [pair.group(0)])
    assert found == {}
