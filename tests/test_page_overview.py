"""The overview page in both languages, driven through AppTest."""
import pytest

from app.i18n import catalogue
from app.pages_list import PAGES
from tests.apptest_read import broken_emphasis
from tests.apptest_util import assert_clean, run_page


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_overview_page(lang):
    at = run_page(None, lang)  # the overview is the default page
    assert_clean(at)
    words = catalogue(lang)
    assert at.title[0].value == words["common.app_title"]
    table = at.dataframe[0].value
    assert list(table["d_model"]) == [512, 1024] and list(table["h"]) == [8, 16]
    assert table[words["overview.table.computed"]][0] == "63.1M"  # paper_base, counted on the meta device
    assert table[words["overview.table.paper"]][1] == "213M"
    links = at.get("page_link")
    assert [link.proto.label for link in links] == [words[f"pages.{p.url}.title"] for p in PAGES[1:]]
    captions = [c.value for c in at.caption]
    assert all(words[f"pages.{p.url}.blurb"] in captions for p in PAGES[1:])
    dot = at.get("graphviz_chart")[0].proto.spec
    assert words["overview.graph.cross"] in dot and "K, V" in dot


def test_korean_emphasis_closes_before_particles():
    at = run_page("overview.py", "ko")
    assert_clean(at)
    assert broken_emphasis(at) == []
