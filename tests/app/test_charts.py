"""The figure package: pure builders (no Streamlit), one escaping of token labels, one CSV writer."""
import csv
import io
import json

import numpy as np
import pytest

from app.charts import curves, export, headview, heatmaps, style, training
from app.charts.style import colour

TOKENS = ["<s>", "a&b", "<b>x</b>", "a", "a"]
RECORDS = [{"kind": "train", "step": s, "loss": 3.0 / s, "lr": 1e-3 * s, "tokens_per_second": 1000.0}
           for s in (10, 20)] + [{"kind": "eval", "step": 20, "val_loss": 0.5, "val_token_acc": 0.9,
                                  "val_exact": 0.4, "samples": []}]


def _figures_with_tokens():
    n = len(TOKENS)
    w = np.full((n, n), 1.0 / n)
    yield "matrix_heatmap", heatmaps.matrix_heatmap(w, TOKENS, TOKENS)
    yield "attention_heatmap", heatmaps.attention_heatmap(w, TOKENS, TOKENS)
    yield "head_tiles", heatmaps.head_tiles(np.stack([w, w]), TOKENS, TOKENS)
    for stage in ("raw", "weights", "output"):
        yield f"stage_figure-{stage}", heatmaps.stage_figure(stage, w, TOKENS, TOKENS, title="t")
    yield "bar_chart", curves.bar_chart(TOKENS, np.arange(n) / n)
    yield "bar_chart-h", curves.bar_chart(TOKENS, np.arange(n) / n, horizontal=True)
    yield "head_view", headview.head_view(np.stack([w]), TOKENS, TOKENS, [0])
    yield "compare_figure", training.compare_figure({"<run>": RECORDS}, "train", "loss", title="", x_title="",
                                                    y_title="")


def _strings(obj):
    """Every string inside a figure's JSON that a token could have reached."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


@pytest.mark.parametrize("name,fig", list(_figures_with_tokens()), ids=lambda x: x if isinstance(x, str) else "")
def test_every_builder_escapes_token_labels(name, fig):
    """A raw `<s>` is read by plotly as HTML: the label vanishes and the figure is squashed."""
    fig = checked(fig)
    texts = list(_strings(json.loads(fig.to_json())["data"])) + list(_strings(json.loads(fig.to_json())["layout"]))
    joined = "\n".join(texts)
    assert "<s>" not in joined and "<b>x" not in joined and "a&b" not in joined
    assert "&lt;s&gt;" in joined or "&lt;run&gt;" in joined


def test_labels_escape_and_stay_distinct():
    out = style.labels(TOKENS)
    assert out[0] == "&lt;s&gt;" and out[1] == "a&amp;b"
    assert len(set(out)) == len(out) and out[3] == "a" and "(2)" in out[4]


def test_bar_chart_keeps_repeated_tokens_apart():
    for horizontal in (True, False):
        fig = checked(curves.bar_chart(["a", "a", "b"], [0.2, 0.3, 0.5], horizontal=horizontal))
        cats = fig.data[0].y if horizontal else fig.data[0].x
        assert len(set(cats)) == 3


def test_log_axes_label_only_powers_of_ten():
    fig = checked(curves.line_chart([1, 10, 100], {"y": [1e-6, 1e-3, 1]}, log_x=True, log_y=True))
    assert fig.layout.xaxis.type == "log" and fig.layout.xaxis.dtick == 1
    assert fig.layout.yaxis.exponentformat == "power"


def test_value_scale_follows_the_signs():
    assert style.value_scale(np.array([[0.1, 0.9]]))["colorscale"] == style.SEQUENTIAL
    signed = style.value_scale(np.array([[-2.0, 1.0]]))
    assert signed["colorscale"] == style.DIVERGING and signed["zmin"] == -2.0 and signed["zmid"] == 0


def test_exact_zeros_are_written_as_zero():
    text = heatmaps.cell_text(np.array([[0.0, 0.25, -np.inf, 1e30]]))
    assert text == [["0", "0.25", "−∞", "1e+30"]]


def test_training_figures_are_pure():
    fig = training.loss_figure(RECORDS, title="Loss", train_name="training", val_name="validation",
                               x_title="step", y_title="loss")
    assert [t.name for t in fig.data] == ["training", "validation"]
    assert list(fig.data[0].x) == [10, 20] and list(fig.data[1].y) == [0.5]
    lr = training.lr_figure(RECORDS, title="lr", lr_name="learning rate", tps_name="tokens / s", x_title="step")
    assert lr.layout.yaxis2.title.text == "tokens / s" and lr.layout.yaxis.title.text == "learning rate"
    cmp = training.compare_figure({"a": RECORDS, "b": RECORDS[:1]}, "train", "loss", title="t", x_title="x",
                                  y_title="y")
    assert [t.name for t in cmp.data] == ["a", "b"]


def _parse(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_one_csv_writer_quotes_what_needs_quoting():
    rows = _parse(export.matrix_csv([[1.0, 0.5]], ['say "hi", then', "x"], ["a,b", "c\nd"]))
    assert rows == [["", "a,b", "c\nd"], ['say "hi", then', "1.0", "0.5"]]
    assert _parse(export.rows_csv([{"k": "a,b", "v": 1}])) == [["k", "v"], ["a,b", "1"]]
    assert _parse(export.series_csv("x", [1, 2], {"y,1": [3.0, 4.0]})) == [["x", "y,1"], ["1", "3.0"], ["2", "4.0"]]
    metrics = _parse(export.metrics_csv(RECORDS))
    assert metrics[0] == list(export.METRIC_FIELDS) and len(metrics) == 4
    assert export.compare_csv({"a": RECORDS, "b": RECORDS}).count("\n") == 7


def test_titles_get_room_above_them_for_the_toolbar():
    fig = checked(curves.line_chart([1, 2], {"y": [1, 2]}, title="A title", height=300))
    top, height = fig.layout.margin.t, fig.layout.height
    drawn = style.figure_dict(fig)["layout"]
    assert drawn["margin"]["t"] == top + style.MODEBAR_ROOM and drawn["height"] == height + style.MODEBAR_ROOM
    assert drawn["title"]["yref"] == "container" and drawn["title"]["pad"]["t"] >= style.MODEBAR_ROOM - 6
    assert fig.layout.margin.t == top and fig.layout.height == height  # the figure itself is left as it was
    style.toolbar_room(drawn)  # idempotent: drawing it again does not push the title down again
    assert drawn["margin"]["t"] == top + style.MODEBAR_ROOM
    untitled = checked(curves.line_chart([1, 2], {"y": [1, 2]}))
    assert style.figure_dict(untitled)["layout"]["margin"]["t"] == untitled.layout.margin.t


def _values(array) -> list:
    """A data array as the browser reads it: plotly sends numeric arrays as binary ({"dtype", "bdata"}); NaN,
    like null, is a gap in a line."""
    if isinstance(array, dict):
        import base64
        array = np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"]).tolist()
    return [None if v is None or v != v else v for v in array]


def test_head_view_draws_one_segment_per_visible_weight_in_its_level():
    """Every (query, key) pair above 2% is one line from the query's side (x = 0) to the key's (x = 1), in the
    trace of its head and weight level, whose width grows with the level; nothing else is drawn as a line."""
    rng = np.random.default_rng(3)
    w = rng.random((3, 4, 5)) ** 3
    w /= w.sum(-1, keepdims=True)
    fig = json.loads(checked(headview.head_view(w, list("abcd"), list("vwxyz"), [0, 2], levels=4)).to_json())
    yq, yk = np.linspace(0, 1, 4), np.linspace(0, 1, 5)
    drawn = {}
    for tr in fig["data"]:
        if tr.get("mode") != "lines" or tr["x"] == [None]:
            continue
        xs, ys = _values(tr["x"]), _values(tr["y"])
        assert xs == [0, 1, None] * (len(xs) // 3) and ys[2::3] == [None] * (len(xs) // 3)
        for y0, y1 in zip(ys[0::3], ys[1::3]):
            drawn[(tr["line"]["color"], int(np.argmin(abs(yq - y0))), int(np.argmin(abs(yk - y1))))] = tr["line"]["width"]
    expected = {}
    for h in (0, 2):
        for q in range(4):
            for k in range(5):
                if w[h, q, k] > 0.02:
                    level = min(3, int(np.ceil(w[h, q, k] * 4 - 1e-9)) - 1)
                    expected[(colour(h), q, k)] = 1 + 4 * (level + 1) / 4
    assert drawn.keys() == expected.keys()
    assert all(abs(drawn[k] - expected[k]) < 1e-9 for k in expected)
    legend = [tr["name"] for tr in fig["data"] if tr.get("name")]
    assert legend == ["head 1", "head 3"]


def _chart_modules():
    import importlib
    import pkgutil

    import app.charts
    return [importlib.import_module(f"app.charts.{m.name}") for m in pkgutil.iter_modules(app.charts.__path__)]


def _builders() -> dict:
    """Every public function of an app/charts module that returns a figure, a go.Figure or plotly's figure dict (read from its return
    annotation: every public function there has one, tested below), by "module.function"."""
    import inspect
    import typing

    import plotly.graph_objects as go
    found = {}
    for module in _chart_modules():
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if name.startswith("_") or fn.__module__ != module.__name__:
                continue
            if typing.get_type_hints(fn).get("return") in (go.Figure, style.Figure):
                found[f"{module.__name__.rsplit('.', 1)[1]}.{name}"] = fn
    return found


def _samples() -> dict:
    """Sample inputs by parameter name; "builder.parameter" or "module.parameter" where a name means different
    things to different builders (a builder's own first). A builder's parameter without a default must have one
    here; one with a default is given its sample when the table has one."""
    rng = np.random.default_rng(1)
    n, g = len(TOKENS), 2  # tokens per axis; patches per side of a picture
    w = rng.random((n, n))
    m = rng.normal(size=(n, n))
    m[0, 1], m[2, 2] = np.nan, np.inf
    digit = rng.integers(0, 17, size=(8, 8)).astype(float)
    scene = rng.integers(0, 255, size=(32, 32, 3)).astype(np.uint8)
    boxes = np.array([[0.3, 0.3, 0.2, 0.2], [0.7, 0.6, 0.3, 0.2]])
    return {
        # words
        "title": "A title", "x_title": "x", "y_title": "y", "query_title": "query", "key_title": "key",
        "head_title": "head", "layer_title": "layer", "value_title": "weight", "pos_label": "position",
        "train_name": "training", "val_name": "validation", "token_name": "tokens", "exact_name": "exact",
        "lr_name": "rate", "tps_name": "tokens/s", "paper_title": "paper", "ours_title": "ours",
        "seeds_label": "seeds", "seed_title": "seed", "gt_name": "truth", "pred_name": "prediction",
        "cls_label": "[CLS]",
        # token maps
        "labels": TOKENS, "query_labels": TOKENS, "key_labels": TOKENS, "q_labels": TOKENS, "k_labels": TOKENS,
        "x_labels": TOKENS, "y_labels": TOKENS,
        "values": w, "weights": np.stack([w, w.T]), "z": m, "stage": "weights", "heads": [0, 1],
        "bar_chart.values": np.arange(n) / n,
        "head_grid.weights": rng.random((2, 3, n, n)), "head_grid.kv_labels": ["<s> share"], "attention_heatmap.weights": w,
        "query_self_attention.weights": w, "query_self_attention.labels": [f"q{i + 1}" for i in range(n)],
        "numeric_heatmap.z": m,
        # curves
        "x": [1, 2, 3], "series": {"a": [1.0, None, 3.0], "b": [3, 2, 1]},
        "histogram_overlay.series": {"a": rng.normal(size=50), "b": rng.normal(size=50) / 8},
        "sin_vals": np.sin(np.arange(16)), "cos_vals": np.cos(np.arange(16)), "p": 3, "k": 5,
        "measured": [3.0, 2.0, 1.0], "formula": [3.0, 2.0, 1.0], "q": [0, 1, 2], "anchor": 1,
        "anchor_figure.names": ("<measured>", "formula"),
        "cost_figure.over_n": {"n": [10, 100, 1000]}, "cost_figure.cost": {"<attention>": [1e2, 1e4, 1e6], "b": [1, 2, 3]},
        "cost_figure.n": 100, "cost_figure.d": 512,
        # training runs
        "records": RECORDS, "runs": {"<run>": RECORDS}, "kind": "train", "key": "loss",
        # the Table 3 study
        "names": ["base", "A-h1"], "paper": [4.92, 5.29], "ours_mean": [2.0, None], "ours_low": [1.9, None],
        "ours_high": [2.1, None], "seeds": [3, 0], "per_seed": [[1.9, 2.0, 2.1], []],
        # the limits page: measured cost over n, accuracy per test length with its spread, a fitted power law
        "sizes": [64, 128, 256], "xs": [8, 16, 32], "chance": 0.1, "chance_label": "chance",
        "rows": {"<sinusoidal>": ([0.9, 0.5, None], [0.8, 0.4, None], [1.0, 0.6, None]), "b": ([1, 1, 1], [1, 1, 1],
                                                                                                [1, 1, 1])},
        "points": [(1e5, 2.0, "<base>"), (2e5, 1.8, "b")], "curve": [(1e5, 2.0), (2e5, 1.8)],
        "points_label": "runs", "fit_label": "fit",
        # the family page: BERT, ViT, DETR
        "panels": [(f"at {i}", ["<s>", "b"], [0.7, 0.3], "b" if i else None) for i in range(4)],
        "family_vit.image": digit, "grid": g, "cell": 8 / g, "probs": np.full(10, 0.1), "predicted": 3,
        "true_label": 5, "maps": rng.random((2, 3, g, g)), "cls_self": rng.random((2, 3)),
        "rollout_grid": rng.random((g, g)), "similarity": rng.normal(size=(g * g, g * g)),
        "row": rng.normal(size=g * g), "patch": 1,
        "family_vit_image.image": scene,
        "family_detr.image": scene, "gt_boxes": boxes, "gt_labels": ["square", "<circle>"], "pred_boxes": boxes,
        "pred_labels": ["q1 square 0.9", "q2 circle 0.8"], "pred_classes": [0, 1],
        "attention_overlay.weights": rng.random((4, 4)), "query_grid.maps": rng.random((n, 4, 4)),
        "titles": [f"q{i + 1}" for i in range(n)],
        # the style layer's own: a figure's parts, a figure
        "data": [dict(type="bar", x=["a", "b"], y=[1, 2])], "layout": {"title": {"text": "t"}},
        "fig": lambda: heatmaps.matrix_heatmap(w, TOKENS, TOKENS, title="t"),  # (a function: a fresh one each call)
    }


class NoSample(LookupError):
    """A builder's parameter without a default has no sample in _samples()."""


def _call(name: str, fn, samples: dict):
    """fn with a sample for each of its parameters (a sample that is a function: what it returns, fresh)."""
    import inspect
    import types
    module, function = name.split(".")
    args, kwargs = [], {}
    for p in inspect.signature(fn).parameters.values():
        key = next((k for k in (f"{function}.{p.name}", f"{module}.{p.name}", p.name) if k in samples), None)
        if key is None:
            if p.default is inspect.Parameter.empty:
                raise NoSample(f"{name}: no sample for {p.name!r} in _samples()")
            continue
        value = samples[key]
        if isinstance(value, types.FunctionType):
            value = value()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is inspect.Parameter.empty:
            args.append(value)
        else:
            kwargs[p.name] = value
    return fn(*args, **kwargs)


# Forms a builder draws differently with other options than the samples give (each builder is drawn with its
# samples too): what the margins and the plain-figure checks must also see.
def _variants():
    rng = np.random.default_rng(1)
    w = rng.random((2, 3, 4, 5))
    m = rng.normal(size=(4, 4))
    m[0, 1], m[2, 2] = np.nan, np.inf
    yield "matrix_heatmap-highlight", heatmaps.matrix_heatmap(m, title="scores", highlight=m > 0.5, zmid=0)
    yield "attention_heatmap-title", heatmaps.attention_heatmap(w[0, 0], list("abcd"), list("vwxyz"), title="t · 1")
    yield "numeric_heatmap-lines", heatmaps.numeric_heatmap(m, title="big", vlines=(1, 2), colorbar_title="v")
    yield "stage_figure-masked", heatmaps.stage_figure("masked", m, list("abcd"), list("abcd"), title="",
                                                       highlight=m > 0)
    yield "bar_chart-titled", curves.bar_chart(["a", "b"], [0.5, 0.25], title="top", x_title="x", y_title="y",
                                               y_range="fit", colors=["red", "blue"], text_outside=True)
    yield "line_chart-marked", curves.line_chart([1, 2, 3], {"a": [1.0, None, 3.0], "b": [3, 2, 1]}, title="lines",
                                                 x_title="x", y_title="y", vline=2, vline_label="peak", log_x=True,
                                                 markers={"top": ([2], [3], ["3"])})
    yield "head_view-many", headview.head_view(w[1], list("abcd"), list("vwxyz"), [0, 2], query_title="q",
                                               key_title="k", head_title="h")
    yield "lift_title-matrix", style.lift_title(heatmaps.matrix_heatmap(m, list("abcd"), list("wxyz"), title="s"))
    yield "lift_title-attention", style.lift_title(heatmaps.attention_heatmap(w[0, 0], list("abcd"), list("vwxyz"),
                                                                              title="t", query_title="q", key_title="k"), 40)
    yield "lift_title-numeric", style.lift_title(heatmaps.numeric_heatmap(m, title="n", x_title="x", y_title="y"))
    yield "circle_figure-no-arrows", curves.circle_figure(np.sin(np.arange(16)), np.cos(np.arange(16)), 14, 5)
    from app.charts.family_vit import class_probabilities
    yield "class_probabilities-untitled", class_probabilities(np.full(10, 0.1), predicted=3)


def checked(fig):
    """A builder's figure as plotly's go.Figure, with plotly's property checks on: a figure dict
    (style.figure) skips them when the app draws it, so they run here, on every builder's figure."""
    import plotly.graph_objects as go
    return go.Figure(fig) if isinstance(fig, dict) else fig


def _every_builder():
    """Each figure builder of app/charts (found by _builders, drawn with _samples), then the forms other options
    give (_variants) and the figures with tokens that need escaping."""
    samples, builders = _samples(), _builders()
    for name in sorted(builders):
        try:
            yield name, checked(_call(name, builders[name], samples))
        except NoSample:  # test_every_builder_has_samples_for_its_inputs fails for it
            continue
    yield from ((name, checked(fig)) for name, fig in _variants())
    yield from ((name, checked(fig)) for name, fig in _figures_with_tokens())


def test_builders_are_found_by_their_return_annotation():
    """Every public function of app/charts says what it returns, so none that builds a figure escapes
    _builders; and the known builders of every kind are among those found."""
    import inspect
    missing = [f"{m.__name__}.{name}" for m in _chart_modules() for name, fn in inspect.getmembers(m, inspect.isfunction)
               if not name.startswith("_") and fn.__module__ == m.__name__
               and inspect.signature(fn).return_annotation is inspect.Signature.empty]
    assert missing == []
    found = set(_builders())
    assert {"heatmaps.head_grid", "curves.line_chart", "family_vit.patch_tokens", "family_detr.query_grid",
            "study.factor_figure", "training.lr_figure", "headview.head_view"} <= found
    assert not any(name.startswith("export.") for name in found)  # CSV writers return text


@pytest.mark.parametrize("name", sorted(_builders()))
def test_every_builder_has_samples_for_its_inputs(name):
    """A new builder is drawn by the checks below only once _samples() knows its inputs: without them, this fails."""
    import plotly.graph_objects as go
    assert isinstance(_call(name, _builders()[name], _samples()), (go.Figure, dict))


def _plain(value):
    """JSON as plotly writes it, with its base64 typed arrays read back as lists of numbers."""
    if isinstance(value, dict) and set(value) >= {"dtype", "bdata"}:
        import base64
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        if value.get("shape"):
            arr = arr.reshape([int(x) for x in str(value["shape"]).split(",")])
        return _plain(arr.tolist())
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not np.isfinite(value):
            return None  # JSON has no NaN or ±inf: a list writes null where a typed array keeps them; both are gaps
        return float(f"{value:.6g}")  # a float32 array's numbers, read back through float64 or written as text
    return value


@pytest.mark.parametrize("name", sorted(_builders()))
def test_every_builder_draws_what_plotly_checks(name):
    """Two ways a builder's figure comes: a figure dict (style.figure), drawn without plotly's checks, or a
    go.Figure. The dict must pass plotly's checks (go.Figure raises on a misspelt or ill-typed property) and
    draw exactly what the checked figure draws; a go.Figure is drawn as plotly writes it."""
    import plotly.graph_objects as go
    import plotly.io as pio
    try:
        fig = _call(name, _builders()[name], _samples())
    except NoSample:
        pytest.skip("no samples: test_every_builder_has_samples_for_its_inputs fails")
    assert isinstance(fig, (go.Figure, dict)) and not isinstance(fig, style.ReadyFigure), name
    drawn = style.ready_figure(fig)
    if isinstance(fig, dict):
        plotly_drawn = style.ready_figure(go.Figure(fig))
        assert _plain(drawn["data"]) == _plain(plotly_drawn["data"]), name
        assert _plain(drawn["layout"]) == _plain(plotly_drawn["layout"]), name
    else:
        assert drawn["data"] == json.loads(pio.to_json(fig, validate=False))["data"], name


def _typed_paths(value, path=()):
    """Where in a figure's JSON plotly writes a base64 typed array."""
    if isinstance(value, dict) and set(value) >= {"dtype", "bdata"}:
        return {path}
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    return set().union(*(_typed_paths(v, path + (k,)) for k, v in items))


@pytest.mark.parametrize("name", sorted(_builders()))
def test_every_builder_sends_its_numbers_as_typed_arrays_where_plotly_does(name):
    """A figure dict's numeric arrays go to the browser as base64 typed arrays, as a checked go.Figure sends them,
    not as numbers written out as text (about twice the bytes, and many times the server's time to write)."""
    import plotly.graph_objects as go
    try:
        fig = _call(name, _builders()[name], _samples())
    except NoSample:
        pytest.skip("no samples: test_every_builder_has_samples_for_its_inputs fails")
    if isinstance(fig, dict):
        assert _typed_paths(style.ready_figure(fig)["data"]) == _typed_paths(style.ready_figure(go.Figure(fig))["data"]), name


def test_a_head_grid_is_sent_as_binary():
    """The inspector's 6 x 8 head grid of 27 tokens: its 35k weights travel as base64 float64, not as text."""
    w = np.random.default_rng(0).dirichlet(np.ones(27), size=(6, 8, 27))
    sent = style.ready_figure(heatmaps.head_grid(w, layer_title="layer", head_title="head"))
    assert len(json.dumps(sent)) < 27 * 27 * 48 * 8 * 1.5  # base64 of float64: 4/3 of 8 bytes a weight


def test_lifting_a_title_puts_it_above_the_key_axis():
    """style.lift_title (the masks, positional and recipe pages' heatmaps): the title above the axis title on top,
    with the room it takes added to the margin and the height."""
    built = heatmaps.matrix_heatmap(np.eye(3), list("abc"), list("abc"), title="t")
    top, height = checked(built).layout.margin.t, checked(built).layout.height
    fig = checked(style.lift_title(built, extra=36))
    assert checked(built).layout.margin.t == top  # the builder's figure is left as it was (it may be shared)
    assert fig.layout.margin.t == top + 36 and fig.layout.height == height + 36
    assert fig.layout.title.yref == "container" and fig.layout.title.y == 1.0


def test_a_changed_figure_draws_its_change():
    fig = style.amend(heatmaps.attention_heatmap(np.eye(3), list("abc"), list("abc"), title="t"), dict(height=777))
    assert style.ready_figure(fig).to_dict()["layout"]["height"] == 777 + style.MODEBAR_ROOM


def _mask_predictions_by_make_subplots(panels, x_title, per_row=3, height_per_row=230):
    """The figure as plotly's make_subplots built it (the builder's former code): the reference."""
    import math
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    from app.charts.family_mlm import HIDDEN_COLOUR
    n = max(1, len(panels))
    cols = max(1, min(per_row, n))
    rows = math.ceil(n / cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[style.esc(p[0]) for p in panels] or None,
                        horizontal_spacing=0.18 / cols + 0.06, vertical_spacing=min(0.25, 0.5 / rows))
    for k, (_, pieces, probs, hidden) in enumerate(panels):
        r, c = k // cols + 1, k % cols + 1
        colours = [HIDDEN_COLOUR if hidden is not None and p == hidden else style.colour(0) for p in pieces]
        fig.add_trace(go.Bar(x=list(probs), y=style.labels(pieces), orientation="h", marker_color=colours,
                             text=[f"{v:.3f}" for v in probs], textposition="auto", showlegend=False,
                             hovertemplate="%{y}: %{x:.4f}<extra></extra>"), row=r, col=c)
        fig.update_yaxes(autorange="reversed", type="category", row=r, col=c)
        fig.update_xaxes(range=[0, 1], title=x_title if r == rows else None, row=r, col=c)
    fig.update_layout(height=max(240, rows * height_per_row + 40), margin=style.margins("x"))
    return fig


def _close(a, b):
    """Equal JSON, floats to 1e-12 (a domain computed in another order)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) < 1e-12
    return a == b


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7])
def test_mask_panels_are_laid_out_as_make_subplots_did(n):
    """The MLM member's prediction panels, built as one figure: the same axes, domains, panel titles and
    bars as plotly's make_subplots (17–30 ms a build; every rerun of the member built it)."""
    from app.charts.family_mlm import mask_predictions
    panels = [(f"<mask> {i}", ["<s>", f"w{i}", "a&b"], [0.6, 0.3, 0.1], f"w{i}" if i % 2 else None) for i in range(n)]
    fig = mask_predictions(panels, x_title="probability")
    drawn = style.figure_dict(fig)
    reference = style.figure_dict(_mask_predictions_by_make_subplots(panels, "probability"))
    for d in (drawn, reference):  # make_subplots writes an empty title on axes without one
        for key, axis in d["layout"].items():
            if key.startswith("xaxis") and axis.get("title") == {}:
                del axis["title"]
    assert _close(drawn, reference)


def test_amending_a_figure_draws_what_plotly_updates_draw():
    """style.amend: a page's change to a builder's figure (a vertical marker, a line's width, an axis range) in
    one call, as update_layout / update_traces make it."""
    layout = dict(shapes=[dict(type="line", x0=2, x1=2, xref="x", y0=0, y1=1, yref="y domain")],
                  xaxis=dict(range=[0, 3], tickmode="array", tickvals=[1, 2], ticktext=["a", "b"]))
    traces = {0: dict(line=dict(width=5)), 1: dict(line=dict(color="black", dash="dash"))}

    def build():
        return curves.line_chart([1, 2, 3], {"a": [1, 2, 3], "b": [3, 2, 1]}, title="t", x_title="x", y_title="y")
    amended = style.amend(build(), layout, traces)
    by_plotly = checked(build())
    by_plotly.update_layout(**layout)
    for i, change in traces.items():
        by_plotly.update_traces(change, selector=i)
    assert _plain(style.figure_dict(amended)) == _plain(style.figure_dict(by_plotly))
    every = style.amend(build(), every_trace=dict(showlegend=False))
    assert [tr["showlegend"] for tr in style.figure_dict(every)["data"]] == [False, False]


def test_equal_peaks_close_together_get_labels_at_different_heights():
    """Two schedules with the same d_model · warmup peak at the same rate: their labels are raised apart (not
    written over each other), with a line down to each point, and the y range leaves room for the highest."""
    line_chart = curves.line_chart
    steps = np.arange(1, 100_001, 1000, dtype=float)
    lr = {"a": np.minimum(steps / 4000, 1.0) * 4.94e-4, "b": np.minimum(steps / 8000, 1.0) * 4.94e-4}
    fig = checked(line_chart(steps, lr, markers={"peaks": ([4000, 8000], [4.94e-4, 4.94e-4],
                                                                 ["4,000: 4.94e-04", "8,000: 4.94e-04"])}, height=430))
    notes = fig.to_dict()["layout"]["annotations"]
    assert sorted(n["text"] for n in notes) == ["4,000: 4.94e-04", "8,000: 4.94e-04"]
    assert len({n["ay"] for n in notes}) == 2 and all(n["ay"] < 0 for n in notes)
    assert fig.to_dict()["layout"]["yaxis"]["range"][1] > 4.94e-4
    far = checked(line_chart(steps, lr, markers={"peaks": ([4000, 90_000], [4.94e-4, 4.94e-4], ["x", "y"])}, height=430))
    assert len({n["ay"] for n in far.to_dict()["layout"]["annotations"]}) == 1  # apart already: one height


def test_a_click_on_the_head_grid_names_the_tile_it_fell_in():
    """grid_cell inverts head_grid's tiling: the centre of every tile gives its layer and head, a gap cell and
    anything outside or malformed (the browser's values are not trusted) give None."""
    import math

    from app.charts.heatmaps import grid_cell, head_grid
    shape = (3, 4, 5, 6)  # layers, heads, queries, keys
    w = np.random.default_rng(0).random(shape)
    z = np.asarray(head_grid(w)["data"][0]["z"])
    for layer in range(3):
        for head in range(4):
            for r, c in ((0, 0), (4, 5), (2, 3)):
                y, x = layer * 6 + r, head * 7 + c
                assert z[y][x] == w[layer, head, r, c]
                assert grid_cell({"x": x, "y": y}, shape) == (layer, head)
                assert grid_cell({"x": float(x), "y": float(y)}, shape) == (layer, head)
    gaps = [{"x": 6, "y": 0}, {"x": 0, "y": 5}]
    outside = [{"x": -1, "y": 0}, {"x": 0, "y": 3 * 6}, {"x": 4 * 7, "y": 0}]
    malformed = [None, {}, {"x": 1}, {"x": "1", "y": 1}, {"x": 1.5, "y": 1}, {"x": math.nan, "y": 1},
                 {"x": True, "y": 1}, {"x": math.inf, "y": 0}, [1, 2]]
    for point in gaps + outside + malformed:
        assert grid_cell(point, shape) is None, point


def test_a_map_with_its_numbers_in_the_cells_draws_no_colour_bar():
    """The numbers are the key; a map too large to write them in (or asked not to) keeps its colour bar."""
    small, large = np.linspace(0, 1, 9).reshape(3, 3), np.linspace(0, 1, 40 * 40).reshape(40, 40)
    written, bare = (heatmaps.attention_heatmap(m, None, None)["data"][0] for m in (small, large))
    assert written["text"] is not None and written["showscale"] is False
    assert bare.get("text") is None and bare["showscale"] is True
    written, bare = (heatmaps.matrix_heatmap(small, show_text=s)["data"][0] for s in (True, False))
    assert written["text"] is not None and written["showscale"] is False
    assert bare.get("text") is None and bare["showscale"] is True
