"""The overview page in both languages, driven through AppTest."""
import base64

import pytest
from app.i18n import LANGS

from app.charts.architecture import wrap
from app.i18n import catalogue
from app.pages_list import PAGES
from model.lessons.paper_numbers import PAPER_TABLE2
from model.lessons.table3 import PAPER_TABLE3
from tests.apptest_read import broken_emphasis, tables
from tests.apptest_util import assert_clean, run_page


@pytest.mark.parametrize("lang", list(LANGS))
def test_overview_page(lang):
    at = run_page(None, lang)  # the overview is the default page
    assert_clean(at)
    words = catalogue(lang)
    assert at.title[0].value == words["common.app_title"]
    links = at.get("page_link")
    assert [link.proto.label for link in links] == [words[f"pages.{p.url}.title"] for p in PAGES[1:]]
    captions = [c.value for c in at.caption]
    assert all(words[f"pages.{p.url}.blurb"] in captions for p in PAGES[1:])
    svg = architecture_drawn(at)
    assert "encoder–decoder" in words["overview.graph.cross"] or lang != "en"
    assert all(line in svg for line in wrap(words["overview.graph.cross"])) and "K, V" in svg
    assert not at.get("graphviz_chart")  # laid out again in the browser on every language switch (1.3 s)


def architecture_drawn(at) -> str:
    """The overview's architecture drawing: the SVG markup of its image."""
    url = at.get("image")[0].proto.imgs[0].url
    prefix = "data:image/svg+xml;base64,"
    assert url.startswith(prefix)
    return base64.b64decode(url[len(prefix):]).decode()


@pytest.fixture(scope="module", params=list(LANGS))
def overview(request):
    at = run_page(None, request.param)
    assert_clean(at)
    return at, request.param, catalogue(request.param)


def test_every_row_of_table3_is_counted_beside_the_papers(overview):
    """One row per row of Table 3 (not only base and big), at the paper's sizes."""
    at, lang, words = overview
    table = tables(at)[0]
    rows = table.iloc[:len(PAPER_TABLE3)]  # models added in the inspector follow
    assert len(table) >= len(PAPER_TABLE3)
    names = list(rows[words["overview.table.model"]])
    assert names[0] == words["overview.table.base_model"] and names[-1] == words["overview.table.big_model"]
    # a row's change in the page's language, not as code writes a setting ("positions=learned")
    assert names[len(PAPER_TABLE3) - 2] == f"(E) {words['overview.table.learned_row']}"
    assert not any("positions=" in n for n in names)
    assert list(rows["h"]) == [8, 1, 4, 16, 32, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 16]
    assert list(rows["d_k"])[5:7] == [16, 32] and list(rows["d_v"])[5:7] == [64, 64]  # (B): d_k alone
    assert list(rows["d_model"])[10:12] == [256, 1024] and list(rows["N"])[7:10] == [2, 4, 8]
    computed, paper, diff = (list(rows[words[f"overview.table.{k}"]]) for k in ("computed", "paper", "difference"))
    assert computed[0] == "63.1M" and paper[0] == "65M" and diff[0] == "-3.0%"
    assert computed[-1] == "214.2M" and paper[-1] == "213M" and diff[-1] == "+0.6%"
    assert paper[7] == "36M" and diff[7] == "-6.5%"  # N = 2
    none = words["overview.table.none_printed"]
    assert [r.group for r, p in zip(PAPER_TABLE3, paper) if p == none] == ["A"] * 4 + ["D"] * 4 + ["E"]
    assert [computed[i] for i, r in enumerate(PAPER_TABLE3) if r.group == "E"] == ["63.6M"]  # ours, shown anyway
    assert list(rows[words["overview.table.bleu"]]) == [f"{r.bleu:.1f}" for r in PAPER_TABLE3]
    assert list(rows[words["overview.table.ppl"]])[2] == "5.00"  # as printed
    assert list(table.columns)[:4] == [words[f"overview.table.{k}"] for k in ("model", "computed", "paper", "difference")]


EXPLAINS = {
    "en": ["What is known.", "What is not known.", "does not say how it counted", "40,745", "39,769 to 41,721",
           "218.1M", "35,296 to 36,272", "No single vocabulary size explains both", "differ by 45M, ours by 50.4M",
           "40,932 to 41,160"],
    "ko": ["알고 있는 것.", "모르는 것.", "어떻게 셌는지 밝히지 않습니다", "40,745", "39,769–41,721", "218.1M",
           "35,296–36,272", "어떤 어휘 크기 하나로도 둘을 함께 설명할 수 없습니다", "45M인데, 우리가 센 차이는 50.4M",
           "40,932–41,160"],
}
OLD_EXPLANATION = {"en": "whether the output layer has a bias", "ko": "출력 레이어의 편향 유무"}


def test_the_difference_is_explained_by_what_is_known_and_what_is_not(overview):
    at, lang, words = overview
    shown = "\n".join(m.value for m in at.markdown)
    for phrase in EXPLAINS[lang]:
        assert phrase in shown, phrase
    assert OLD_EXPLANATION[lang] not in shown
    assert "~" not in shown  # two tildes in a paragraph strike the text between them through
    vocab = tables(at)[1]  # the vocabulary each printed count implies, one row per printed count
    assert len(vocab) == sum(r.params_m is not None for r in PAPER_TABLE3)
    assert list(vocab[words["overview.counts.vocab_range"]])[-1] == "35,296 – 36,272"


HEADLINE = {"en": ["**28.4**", "**41.8**", "27.3 and 38.1", "100,000 steps (about 12 hours)",
                   "300,000 steps (3.5 days)", "8 NVIDIA P100"],
            "ko": ["**28.4**", "**41.8**", "각각 27.3, 38.1입니다", "100,000 스텝(약 12시간)", "300,000 스텝(3.5일)",
                   "P100 GPU 8개"]}


def test_headline_results_and_table2(overview):
    at, lang, words = overview
    shown = "\n".join(m.value for m in at.markdown)
    for phrase in HEADLINE[lang]:
        assert phrase in shown, phrase
    table = tables(at)[2]
    col = {k: words[f"overview.results.{k}"] for k in ("model", "bleu_de", "bleu_fr", "cost_de", "cost_fr")}
    assert list(table[col["model"]]) == [words[f"overview.table.{r.key}_model"] if r.key else r.model for r in PAPER_TABLE2]
    assert [r.key for r in PAPER_TABLE2][-2:] == ["base", "big"]  # the paper's two models, named as Table 3 names them
    byte_net = table.iloc[0]
    assert (byte_net[col["bleu_de"]], byte_net[col["bleu_fr"]], byte_net[col["cost_de"]]) == ("23.75", "", "")
    assert table.iloc[6][col["bleu_de"]] == "26.30" and table.iloc[5][col["cost_fr"]] == "8.0·10²⁰"
    assert list(table.iloc[-2:][col["cost_de"]]) == ["3.3·10¹⁸", "2.3·10¹⁹"]
    note = next(c.value for c in at.caption if "P100" in c.value)
    assert "3.3·10¹⁸" in note and "2.3·10¹⁹" in note and "41.0" in note


def test_korean_emphasis_closes_before_particles():
    at = run_page("overview.py", "ko")
    assert_clean(at)
    assert broken_emphasis(at) == []
