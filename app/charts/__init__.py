"""Every figure and every export of the app: pure functions from numbers to plotly figures or CSV
text, no st.* calls. One palette and one attention colour scale (`style`), one escaping of token
labels (`style.labels`), one CSV writer (`export`).

- `heatmaps`: matrices, attention maps, all layers × heads, tiled heads, attention-stage figures
- `curves`: one bar, one line, one histogram builder, and the positional circle
- `headview`: the BertViz-style head view
- `training`: loss, accuracy, learning-rate and comparison curves of training runs
- `export`: CSV text for matrices, columns, tables and training metrics"""
