"""Every figure and every export of the app: pure functions from numbers to plotly figures or CSV
text, no st.* calls. One palette and one attention colour scale (`style`), one escaping of token
labels (`style.labels`), one CSV writer (`export`).

- `heatmaps`: matrices, attention maps, all layers × heads, tiled heads, attention-stage figures
- `curves`: one bar, one line, one histogram builder, and the positional circle
- `headview`: the BertViz-style head view
- `training`: loss, accuracy, learning-rate and comparison curves of training runs
- `export`: CSV text for matrices, columns, tables and training metrics"""


def warm_up() -> None:
    """Build a small figure of each trace type the app draws and make it ready to draw (style.ready_figure): the
    first figure a server builds pays Plotly's first-use costs (its property validators, the default template,
    our margin fitting), and the first of each trace type its own;
    app.fast.warmup.warm_up calls this while a learner reads the first page."""
    import plotly.graph_objects as go

    from app.charts.curves import bar_chart, histogram_overlay, line_chart
    from app.charts.heatmaps import attention_heatmap, numeric_heatmap
    from app.charts.style import lift_title, ready_figure
    labels = ["a", "b"]
    ready_figure(attention_heatmap([[1.0, 0.0], [0.5, 0.5]], labels, labels, query_title="q", key_title="k", title="t"))
    ready_figure(lift_title(numeric_heatmap([[1.0, 0.0], [0.0, 1.0]], title="t", x_title="x", y_title="y")))
    ready_figure(line_chart(range(2), {"a": [0.0, 1.0]}, x_title="x", y_title="y", title="t"))
    ready_figure(bar_chart(labels, [0.3, 0.7], horizontal=True, y_range=[0, 1], x_title="x", y_title="y"))
    ready_figure(histogram_overlay({"a": [0.0, 1.0, 1.0]}, title="t", x_title="x", y_title="y"))
    ready_figure(go.Figure(go.Image(z=[[[0, 0, 0], [255, 255, 255]]], hoverinfo="skip")))
