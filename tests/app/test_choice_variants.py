"""app.fast.choice.figure_variants: what a chart that follows a browser choice gets from the figures built for each
value — only what differs between them, per value, in the form the browser applies (app/static/atlas_chart.js)."""
import numpy as np

from app.fast.choice import figure_variants
from app.format import html_table, markdown_table


def _figures():
    return [{"data": [{"type": "scatter", "x": np.arange(4), "y": np.arange(4) * k, "name": "same"},
                      {"type": "scatter", "x": np.arange(4), "y": np.ones(4), "marker": {"color": np.array([k, 0])}}],
             "layout": {"title": {"text": f"k = {k}", "x": 0.5}, "yaxis": {"dtick": 1 + (k > 1)},
                        "xaxis": {"title": {"text": "n"}}}} for k in range(3)]


def test_only_what_differs_is_sent_per_value():
    traces, layouts = figure_variants(_figures())
    assert [(trace, attr) for trace, attr, _ in traces] == [(0, "y"), (1, "marker")]
    y = traces[0][2]
    assert isinstance(y, np.ndarray) and y.shape == (3, 4) and (y[2] == np.arange(4) * 2).all()
    assert traces[1][2] == [{"color": [0, 0]}, {"color": [1, 0]}, {"color": [2, 0]}]  # an array inside: as JSON
    # a title whose text alone changes is sent as its text (the browser writes it in bold); another key whole
    assert layouts == [{"title.text": "k = 0", "yaxis": {"dtick": 1}}, {"title.text": "k = 1", "yaxis": {"dtick": 1}},
                       {"title.text": "k = 2", "yaxis": {"dtick": 2}}]


def test_equal_figures_send_nothing_per_value():
    same = [_figures()[1]] * 3
    assert figure_variants(same) == ([], None)


def test_a_followed_table_has_the_markdown_tables_cells_and_alignment():
    rows = [{"layer": "a|b*", "ops": 1.0, "note": "<b>x</b>"}, {"layer": "c", "ops": 2.5, "note": None}]
    md = markdown_table(rows)
    assert md.splitlines()[1] == "|:---|---:|:---|"
    html = html_table(rows)
    assert html.count("<tr>") == 3 and html.count('text-align: right;">') == 3  # the numbers' column, head included
    assert "<td style=\"text-align: left;\">a|b*</td>" in html and "&lt;b&gt;x&lt;/b&gt;" in html and "<b>" not in html
