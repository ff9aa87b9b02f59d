"""The speed layer: what makes the app's pages faster than plain Streamlit would draw them, in one place, on
public APIs (docs/architecture.md, "The speed layer"; docs/benchmarks.md has each piece's before and after).

- `plot(fig, key=...)` (chart.py): every chart of the app, drawn by the app's chart element (a
  st.components.v2 component that keeps a chart from one run to the next and updates it in place, drawing it
  when it comes near the screen) — or, with ATLAS_CHARTS=streamlit in the server's environment, by
  st.plotly_chart: the one switch back to Streamlit's own chart. A chart drawn with clickable=True sends the
  point a learner clicks back to the script (the element only).
- attention_view.py: a sentence's whole attention sent to the browser once (uint16 steps in one binary payload) and
  drawn there: layer, head, a tile, a cell or a token pointed at, a query picked, answered with no server run
  (the inspector's grid and head view, the masks page's three kinds, the family page's GPT and BERT maps).
- choice.py: a slider that only changes the drawing, answered in the browser; the charts and texts that follow it
  get every variant once (the positional page's anchor, highlight, layer and head; the masks head; the ViT patch).
- browser_warm.py: while a learner reads the first page, their browser loads the chart element with Plotly
  and draws one element of each kind the next pages use, hidden.
- warmup.py: the server's warm-up (imports and first builds in a background thread).
- heap.py: `settle_heap`, gc.freeze after startup and model loads, so full collections stay short.

Importing the package loads no plotly: the chart code loads with the first chart."""
from __future__ import annotations

from app.fast.chart import plot, uses_element
from app.fast.heap import settle_heap, settle_heap_at_start


__all__ = ["plot", "settle_heap", "settle_heap_at_start", "uses_element"]
