"""The layer × head grid of a model with grouped-query attention: a bracket over each group of query heads that
share one key/value head, labelled with the caller's words, escaped once (app.charts.heatmaps.head_grid)."""
import numpy as np
import pytest
import torch

from app.charts import heatmaps
from model.nn.attention import MultiHeadAttention


def test_groups_follow_the_model_query_head_i_reads_kv_head_i_over_the_group_size():
    assert heatmaps.kv_groups(8, 2) == [(0, 3, 0), (4, 7, 1)]
    assert heatmaps.kv_groups(4, 1) == [(0, 3, 0)]
    assert heatmaps.kv_groups(4, 4) == [(0, 0, 0), (1, 1, 1), (2, 2, 2), (3, 3, 3)]
    # the attention itself: query heads of one group see the same keys (their key/value head's), others do not
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, n_kv_heads=2).eval()
    x = torch.randn(1, 5, 16)
    _, k, _ = mha.project(x)
    keys = mha.repeat_kv(k)  # (B, H, L, d_k): the keys each query head reads
    for first, last, kv in heatmaps.kv_groups(4, 2):
        assert all(torch.equal(keys[:, h], k[:, kv]) for h in range(first, last + 1))
    assert not torch.equal(keys[:, 1], keys[:, 2])


def test_a_grouped_grid_brackets_each_group_with_its_label_escaped_once():
    w = np.random.default_rng(0).random((2, 8, 3, 3))
    fig = heatmaps.head_grid(w, layer_title="layer", head_title="head", kv_labels=["heads <1>–4 & co", "heads 5–8"])
    import plotly.graph_objects as go
    go.Figure(fig)  # plotly accepts the brackets (pixel-sized shapes over the plot)
    notes = fig["layout"]["annotations"]
    assert [n["text"].replace("<br>", " ") for n in notes] == ["heads &lt;1&gt;–4 &amp; co", "heads 5–8"]
    gap, width = 1, 3
    centres = [n["x"] for n in notes]
    assert centres == [((0 * (width + gap)) + (3 * (width + gap) + width - 1)) / 2,
                       ((4 * (width + gap)) + (7 * (width + gap) + width - 1)) / 2]
    lines = [s for s in fig["layout"]["shapes"] if s["type"] == "line"]
    spans = sorted({(s["x0"], s["x1"]) for s in lines if s["x0"] != s["x1"]})
    assert spans == [(-0.5, 3 * (width + gap) + width - 0.5), (4 * (width + gap) - 0.5, 7 * (width + gap) + width - 0.5)]
    plain = heatmaps.head_grid(w, layer_title="layer", head_title="head")
    assert not plain["layout"].get("annotations") and not plain["layout"].get("shapes")
    assert fig["layout"]["margin"]["t"] > plain["layout"]["margin"]["t"]  # room above the head numbers


def test_labels_that_do_not_divide_the_heads_are_refused():
    with pytest.raises(ValueError):
        heatmaps.head_grid(np.zeros((1, 6, 2, 2)), kv_labels=["a", "b", "c", "d"])
