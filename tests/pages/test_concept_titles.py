"""On the concept pages (attention, masks, recipe, multi-head) every titled figure is
drawn through app.ui (show_figure / show_matrix), which keeps the title clear of the Plotly toolbar."""
import pytest

from app.charts.style import MODEBAR_ROOM
from tests.apptest_read import figures, title
from tests.apptest_util import assert_clean, run_page


@pytest.mark.slow
@pytest.mark.parametrize("page", ["attention.py", "masks.py", "recipe.py", "multihead.py"])
def test_every_titled_figure_has_room_for_the_toolbar(page):
    at = run_page(page, "en")
    assert_clean(at)
    titled = [f for f in figures(at) if title(f)]
    assert titled
    for f in titled:
        layout = f["layout"]
        assert layout.get("meta") == "toolbar-room", title(f)
        assert layout["title"]["yref"] == "container" and layout["title"]["pad"]["t"] >= MODEBAR_ROOM - 6, title(f)
        assert layout["margin"]["t"] >= MODEBAR_ROOM + 30, title(f)
