"""The frame's toolbars: Streamlit's developer menu (its "Deploy" button) is not shown to learners, and Plotly's
mode bar, which appears over a figure's top right corner, covers no title of a tiled attention figure."""
import tomllib

import numpy as np

from app.charts.heatmaps import head_multiples, head_tiles
from app.charts.style import MODEBAR_ROOM, ready_figure
from tests.streamlit_server import ROOT


def test_the_toolbar_shows_no_developer_options():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config.get("client", {}).get("toolbarMode") in ("viewer", "minimal"), "Streamlit's Deploy button shows"


def test_head_titles_sit_below_the_mode_bar():
    """The heads' titles are annotations just above the top row of tiles: the figure's top margin keeps the mode
    bar's strip free above them (a head title in the top right tile sat under the mode bar)."""
    w = np.full((4, 3, 3), 1 / 3)
    for fig in (head_tiles(w, list("abc"), list("abc")), head_multiples(w, list("abc"), list("abc"))):
        layout = ready_figure(fig)["layout"]
        title_px = max(a.get("yshift", 0) for a in layout["annotations"]) + 16  # a head title's line above the plot
        assert layout["margin"]["t"] >= MODEBAR_ROOM + title_px, layout["margin"]


def test_a_lifted_title_is_wrapped_to_a_narrow_column():
    """A map's title above its key axis fits one of two columns on a laptop's window, broken into lines (Plotly
    never wraps a title: the masks page's "softmax → attention weights (exact 0 = “0”)" was cut at the edge)."""
    from app.charts.heatmaps import attention_heatmap
    from app.charts.style import TITLE_PX, lift_title
    from app.charts.text_width import text_px
    long = "softmax → attention weights (exact 0 = “0”) over every key of the sentence"
    fig = lift_title(attention_heatmap(np.eye(3), list("abc"), list("abc"), title=long))
    lines = fig["layout"]["title"]["text"].split("<br>")
    assert len(lines) > 1 and all(text_px(line, 14) <= TITLE_PX for line in lines)
    assert " ".join(lines) == long
