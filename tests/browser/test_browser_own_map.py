"""The maps drawn by app/static/atlas_map.js instead of Plotly (app/fast/chart.py, own_map), labelled and numeric,
in headless Chromium: the same figure drawn both ways side by side must look the same (every cell in
Plotly's colour, every line of text and every cell's number within 2 px of where Plotly writes it), a choice's move redraws the canvas
with the next variant's numbers, hover shows what Plotly's hover shows, and the toolbar gives a PNG at twice the
size and a full-screen view."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest

from tests.streamlit_server import CHROMIUM, CHROMIUM_ARGS, ROOT, new_page, served, wait_idle

pytestmark = pytest.mark.browser
SHOTS = ROOT / "test-artifacts" / "screenshots"
CHANNEL = "test-own-map"
WIDTH = 520  # one of two columns on a laptop
WIDE = 720   # a dense map's least width, margins included, fits

# Mount the chart element's script twice in the page, in two boxes of the same width: one spec drawn by our map,
# one by Plotly; draw both and wait until both show the variant asked for.
MOUNT = """async ([stub, specs, width]) => {
  const url = URL.createObjectURL(new Blob([stub], {type: "text/javascript"}));
  const script = (await import(url)).default;
  const main = document.querySelector('[data-testid="stMain"]');
  // Streamlit's header stays over the page's top: out of the pictures
  document.head.append(Object.assign(document.createElement("style"),
                                     {textContent: '[data-testid="stHeader"] {display: none !important}'}));
  specs.forEach((spec, n) => {
    const parent = main.insertBefore(document.createElement("div"), main.firstChild);
    parent.id = "map-" + n;
    parent.style.width = width + "px";
    parent.style.marginTop = "40px";
    parent.style.flexShrink = "0";  // a box of the page's column, whose height is its chart's
    script({parentElement: parent, data: spec});
  });
  await window.__atlasChartModule;
  await new Promise((r) => setTimeout(r, 0));
  await window.atlasCharts.drawAll();
}"""
DRAWN = """(variant) => [0, 1].every((n) => { const d = document.querySelector('#map-' + n + ' .atlas-chart');
  return d && d.dataset.variant === String(variant); })"""
MOVE = """([channel, value]) => { window.atlasChoiceBus.values[channel] = value;
  window.dispatchEvent(new CustomEvent('atlas-choice', {detail: {channel}})); }"""


def _specs(dense: bool = False):
    """The payload of a signed map with its numbers and outlined cells (a repeated token, a token that is markup),
    which follows a choice of two values: as our map draws it, and the same without `map` (Plotly draws it).
    dense: attention over 24 tokens instead, too many for numbers in the cells: upright key labels, a colour bar."""
    from app.charts.heatmaps import attention_heatmap, heatmap_variants, highlight_shapes, matrix_heatmap
    from app.charts.style import lift_title, ready_figure
    from app.fast import chart
    from app.fast.choice import Choice, follow
    rng = np.random.default_rng(0)
    if dense:
        n = 24
        maps = [rng.dirichlet(np.full(n, 0.3), n), rng.dirichlet(np.full(n, 0.3), n)]
        tokens = [f"tok{i}" if i % 5 else "▁a-long-piece" for i in range(n)]
        fig = ready_figure(lift_title(attention_heatmap(maps[0], tokens, tokens, title="attention over 24 tokens")))
        moves = follow(Choice(1, (1, 2), CHANNEL), traces=heatmap_variants(maps))
    else:
        maps = [rng.normal(0, 0.4, (5, 7)), rng.normal(0, 0.8, (5, 7))]
        marks = [np.abs(m) < 0.15 for m in maps]
        rows, cols = ["the", "<b>", "cat", "the", "😀"], [str(j + 1) for j in range(7)]
        fig = ready_figure(lift_title(matrix_heatmap(maps[0], cols, rows, title="a map that follows a choice",
                                                     x_title="dimension", y_title="token", zmid=0,
                                                     highlight=marks[0])))
        moves = follow(Choice(1, (1, 2), CHANNEL), traces=heatmap_variants(maps, show_text=True),
                       layouts=[{"shapes": highlight_shapes(m)} for m in marks])
    ours = json.loads(chart.payload(fig, chart.PLOT_CONFIG, "failed", follow=moves.spec()))
    assert "map" in ours
    theirs = {k: v for k, v in ours.items() if k not in ("map", "download")}
    theirs["version"] = ours["version"] + "-plotly"
    return [json.dumps(ours), json.dumps(theirs)], ours, maps


def _plot(spec: dict, width: int) -> tuple[dict, float, float]:
    """The figure's margins, and its plot's width and height in a box `width` px wide."""
    m = spec["figure"]["layout"]["margin"]
    return m, width - m["l"] - m["r"], spec["height"] - m["t"] - m["b"]


def _png(page, n: int) -> np.ndarray:
    from PIL import Image
    shot = page.locator(f"#map-{n} .atlas-chart").screenshot()
    return np.asarray(Image.open(io.BytesIO(shot)).convert("RGB"), dtype=int)


def _cell_colours(picture: np.ndarray, spec: dict, rows: int, cols: int) -> np.ndarray:
    """The colour 5 px inside each cell's top-left corner (clear of its number and of the gap between cells)."""
    m, w, h = _plot(spec, picture.shape[1])
    return np.array([[picture[int(m["t"] + i * h / rows) + 5, int(m["l"] + j * w / cols) + 5] for j in range(cols)]
                     for i in range(rows)])


def _runs(on: np.ndarray) -> list[tuple[int, int]]:
    """The (first, last) index of each run of True in a 1-D mask."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], on.astype(int), [0]])))
    return [(int(a), int(b) - 1) for a, b in zip(edges[::2], edges[1::2])]


def _ink(picture: np.ndarray, spec: dict, rows: int, cols: int) -> tuple[list, list, list, list]:
    """Where the text is: the rows of ink above the plot (the title's lines, the axis title, the key labels), the
    columns of ink left of it (the axis title, the query labels) and right of it (a colour bar and its labels), and
    each cell's number's box (ink: far from the cell's own colour)."""
    m, w, h = _plot(spec, picture.shape[1])
    dark = picture.sum(axis=2) < 600
    above = _runs(dark[:m["t"] - 2].any(axis=1))
    left = _runs(dark[m["t"]:m["t"] + h, :m["l"] - 2].any(axis=0))
    right = _runs(dark[m["t"]:m["t"] + h, m["l"] + w + 2:].any(axis=0))
    numbers = []
    for i in range(rows):
        for j in range(cols):
            y0, x0 = int(m["t"] + i * h / rows) + 4, int(m["l"] + j * w / cols) + 4
            cell = picture[y0:int(m["t"] + (i + 1) * h / rows) - 4, x0:int(m["l"] + (j + 1) * w / cols) - 4]
            far = np.abs(cell - cell[0, 0]).sum(axis=2) > 150
            ys, xs = np.nonzero(far)
            numbers.append((x0 + xs.min(), x0 + xs.max(), y0 + ys.min(), y0 + ys.max()) if len(xs) else ())
    return above, left, right, numbers


@pytest.mark.parametrize("dense", [False, True], ids=["numbers", "dense"])
def test_a_map_that_follows_a_choice_looks_as_plotly_draws_it(dense):
    from playwright.sync_api import sync_playwright

    from app.fast.chart import stub_js
    SHOTS.mkdir(parents=True, exist_ok=True)
    specs, spec, maps = _specs(dense)
    name = "dense" if dense else "numbers"
    with served() as (url, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = new_page(browser, viewport={"width": 1400, "height": 3000})
        page.goto(f"{url}/?lang=en")
        wait_idle(page, draw_all=False)
        page.evaluate(MOUNT, [stub_js(), specs, WIDE if dense else WIDTH])
        page.wait_for_function(DRAWN, arg=0, timeout=60_000)
        assert page.locator("#map-0 canvas").count() == 1 and page.locator("#map-0 .js-plotly-plot").count() == 0
        assert page.locator("#map-1 .js-plotly-plot").count() == 1
        for variant, z in ((0, maps[0]), (1, maps[1])):
            if variant:
                page.evaluate(MOVE, [CHANNEL, 2])
                page.wait_for_function(DRAWN, arg=1, timeout=10_000)
                page.wait_for_timeout(300)
            drawn = page.evaluate("() => document.querySelector('#map-0 .atlas-chart').atlasDrawn")
            assert np.allclose(np.array(drawn["z"], dtype=float), z, atol=1e-6)  # the variant's own numbers
            ours, theirs = _png(page, 0), _png(page, 1)
            page.locator("#map-0").screenshot(path=str(SHOTS / f"own-map-{name}-{variant}.png"))
            page.locator("#map-1").screenshot(path=str(SHOTS / f"own-map-{name}-plotly-{variant}.png"))
            assert ours.shape == theirs.shape
            a, b = _cell_colours(ours, spec, *z.shape), _cell_colours(theirs, spec, *z.shape)
            assert np.abs(a - b).max() <= 2, np.abs(a - b).max(axis=2)
            for where, mine, plotly in zip(("title and key labels", "query labels and axis title", "colour bar",
                                            "cell numbers"),
                                           _ink(ours, spec, *z.shape), _ink(theirs, spec, *z.shape)):
                assert len(mine) == len(plotly), (where, mine, plotly)
                assert all(abs(p - q) <= 2 for m, t in zip(mine, plotly) for p, q in zip(m, t)), (where, mine, plotly)
        browser.close()


def test_hover_png_and_fullscreen_of_an_own_map():
    from playwright.sync_api import sync_playwright

    from app.fast.chart import stub_js
    specs, spec, maps = _specs()
    with served() as (url, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = new_page(browser, viewport={"width": 1400, "height": 1000}, accept_downloads=True)
        page.goto(f"{url}/?lang=en")
        wait_idle(page, draw_all=False)
        page.evaluate(MOUNT, [stub_js(), specs[:1], WIDTH])
        page.wait_for_function("() => document.querySelector('#map-0 .atlas-chart[data-variant]')", timeout=60_000)
        m, w, h = _plot(spec, WIDTH)
        canvas = page.locator("#map-0 canvas")
        # hover over row 2 ("<b>", written as text), column 4
        canvas.hover(position={"x": m["l"] + 3.5 * w / 7, "y": m["t"] + 1.5 * h / 5})
        tip = page.locator("#map-0 .atlas-map-tip")
        tip.wait_for(state="visible", timeout=5_000)
        assert tip.inner_text() == f"token <b> · dimension 4\n{maps[0][1, 3]:#.4g}".replace("-", "−")  # d3's .4g keeps its zeros
        canvas.hover(position={"x": 2, "y": 2})
        tip.wait_for(state="hidden", timeout=5_000)

        canvas.hover()
        with page.expect_download() as got:
            page.locator("#map-0 .atlas-map-bar button").first.click()
        from PIL import Image
        picture = Image.open(got.value.path())
        assert picture.size == (2 * WIDTH, 2 * spec["height"])

        page.locator("#map-0 .atlas-map-bar button").nth(1).click()
        page.wait_for_function("() => document.querySelector('#map-0 canvas').clientHeight === window.innerHeight",
                               timeout=5_000)
        page.keyboard.press("Escape")
        page.wait_for_function(f"() => document.querySelector('#map-0 canvas').clientHeight === {spec['height']}",
                               timeout=5_000)
        browser.close()


def test_a_masked_cells_text_stays_readable_on_a_dark_page():
    """A score the mask removed has no colour (its −∞ is NaN to the map): its text is written against the plot's
    background, white on the dark theme's (it was the light theme's grey, hard to read there)."""
    from playwright.sync_api import sync_playwright

    from app.charts.heatmaps import matrix_heatmap
    from app.charts.style import lift_title, ready_figure
    from app.fast import chart
    from app.fast.chart import stub_js
    scores = np.array([[1.5, -np.inf], [0.5, -1.0]])
    fig = ready_figure(lift_title(matrix_heatmap(scores, ["a", "b"], ["a", "b"], title="masked", zmid=0)))
    spec = json.loads(chart.payload(fig, chart.PLOT_CONFIG, "failed"))
    assert "map" in spec
    with served() as (url, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = new_page(browser, viewport={"width": 1400, "height": 1000}, color_scheme="dark")
        page.goto(f"{url}/?lang=en")
        wait_idle(page, draw_all=False)
        page.evaluate(MOUNT, [stub_js(), [json.dumps(spec)], WIDTH])
        page.wait_for_function("() => (document.querySelector('#map-0 .atlas-chart') || {}).atlasDrawn", timeout=60_000)
        picture = _png(page, 0)
        page.locator("#map-0").screenshot(path=str(SHOTS / "own-map-masked-dark.png"))
        browser.close()
    m, w, h = _plot(spec, WIDTH)
    cell = picture[m["t"] + 4:m["t"] + h // 2 - 4, m["l"] + w // 2 + 4:m["l"] + w - 4]  # row 1, column 2: masked
    background = np.median(cell.reshape(-1, 3), axis=0)
    assert background.sum() < 3 * 80, background  # the dark plot shows through
    assert cell.sum(axis=2).max() > 3 * 200  # its −∞ in white


def _numeric_specs(kind: str):
    """A numeric map (app.charts.heatmaps.numeric_heatmap) drawn both ways: the positional page's encoding table
    (40 positions × 24 dimensions), or its extrapolation map (a range past the numbers, a dashed line, a wrapped
    title)."""
    from app.charts.heatmaps import numeric_heatmap
    from app.charts.style import amend, ready_figure
    from app.fast import chart
    from model.nn.layers import positional_encoding
    if kind == "table":
        z = positional_encoding(40, 24).numpy()
        fig = numeric_heatmap(z, title="Positional encoding, 40 positions × d_model 24", x_title="dimension",
                              y_title="position", zmin=-1, zmax=1, height=460)
    else:
        z = np.random.default_rng(1).normal(0, 0.5, (16, 30))
        fig = amend(numeric_heatmap(z, x_title="position", y_title="dimension", vlines=[29.5], zmid=0, height=340,
                                    title="Learned table: positions 0 … 29, nothing after", narrow=True),
                    dict(xaxis=dict(range=[-0.5, 59.5])))
    ours = json.loads(chart.payload(ready_figure(fig), chart.PLOT_CONFIG, "failed"))
    assert "map" in ours
    theirs = {k: v for k, v in ours.items() if k not in ("map", "download")}
    theirs["version"] = ours["version"] + "-plotly"
    return [json.dumps(ours), json.dumps(theirs)], ours, z


def _numeric_ink(picture: np.ndarray, spec: dict) -> dict:
    """Where a numeric map's text and lines are: the rows of ink above the plot (the title), the rows and the
    columns of ink below it (tick labels, axis title), the rows and columns left of it (tick labels, axis title),
    and the columns right of it (the colour bar and its labels)."""
    m, w, h = _plot(spec, picture.shape[1])
    dark = picture.sum(axis=2) < 600
    below = dark[m["t"] + h + 2:, m["l"]:m["l"] + w]
    left = dark[m["t"]:m["t"] + h, :m["l"] - 2]
    return {"above": _runs(dark[:m["t"] - 2].any(axis=1)),
            "below rows": _runs(below.any(axis=1)), "below columns": _runs(below[:20].any(axis=0)),
            "left rows": _runs(left.any(axis=1)), "left columns": _runs(left.any(axis=0)),
            "right": _runs(dark[m["t"]:m["t"] + h, m["l"] + w + 2:].any(axis=0))}


@pytest.mark.parametrize("kind", ["table", "extrapolation"])
def test_a_numeric_map_looks_as_plotly_draws_it(kind):
    from playwright.sync_api import sync_playwright

    from app.fast.chart import stub_js
    SHOTS.mkdir(parents=True, exist_ok=True)
    specs, spec, z = _numeric_specs(kind)
    with served() as (url, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = new_page(browser, viewport={"width": 1400, "height": 3000})
        page.goto(f"{url}/?lang=en")
        wait_idle(page, draw_all=False)
        page.evaluate(MOUNT, [stub_js(), specs, WIDTH])
        page.wait_for_function("() => [0, 1].every((n) => document.querySelector('#map-' + n + ' .atlas-chart "
                               "canvas, #map-' + n + ' .js-plotly-plot .heatmaplayer image'))", timeout=60_000)
        page.wait_for_timeout(500)
        assert page.locator("#map-0 canvas").count() == 1 and page.locator("#map-1 .js-plotly-plot").count() == 1
        ours, theirs = _png(page, 0), _png(page, 1)
        page.locator("#map-0").screenshot(path=str(SHOTS / f"own-map-numeric-{kind}.png"))
        page.locator("#map-1").screenshot(path=str(SHOTS / f"own-map-numeric-{kind}-plotly.png"))
        if kind == "table":  # hover names the cell by its numbers: row 5 (a position), column 3 (a dimension)
            m, w, h = _plot(spec, WIDTH)
            page.locator("#map-0 canvas").hover(position={"x": m["l"] + 3.5 * w / z.shape[1],
                                                          "y": m["t"] + 5.5 * h / z.shape[0]})
            tip = page.locator("#map-0 .atlas-map-tip")
            tip.wait_for(state="visible", timeout=5_000)
            assert tip.inner_text() == f"position 5 · dimension 3\n{z[5, 3]:.4f}".replace("-", "−")
        browser.close()
    assert ours.shape == theirs.shape
    m, w, h = _plot(spec, WIDTH)
    r0, r1 = spec["figure"]["layout"].get("xaxis", {}).get("range", [-0.5, z.shape[1] - 0.5])
    rows, cols = z.shape
    # each cell's middle, in both pictures (cells past the numbers show the plot's background in both)
    for i in range(rows):
        for j in range(cols):
            x = int(m["l"] + (j + 0.5 - (r0 + 0.5)) / (r1 - r0) * w)
            y = int(m["t"] + (i + 0.5) * h / rows)
            assert np.abs(ours[y, x] - theirs[y, x]).max() <= 2, (i, j, ours[y, x], theirs[y, x])
    mine, plotly = _numeric_ink(ours, spec), _numeric_ink(theirs, spec)
    for where in mine:
        assert len(mine[where]) == len(plotly[where]), (where, mine[where], plotly[where])
        assert all(abs(p - q) <= 2 for a, b in zip(mine[where], plotly[where]) for p, q in zip(a, b)), \
            (where, mine[where], plotly[where])


def _line_specs(kind: str):
    """A figure of curves (app.charts.curves.line_chart) drawn both ways: the recipe's schedules (three curves, the
    peaks as stars with their labels, a legend), curves with markers and a dashed line, the positional page's dot
    products with the anchor's dotted line (in the middle, or at the first position), or positions on a
    whole-number axis with a fixed y range."""
    from app.charts.curves import line_chart
    from app.charts.style import amend, ready_figure
    from app.fast import chart
    from model.training.schedule import compare_schedules
    if kind in ("schedule", "one schedule"):  # one schedule: its peak below 0.001, labelled 200μ … 800μ
        pairs = [(512, 4000), (512, 8000), (256, 4000)] if kind == "schedule" else [(512, 4000)]
        sched = compare_schedules(pairs, 1, 100_000, log=False)
        series = {f"d_model={c['d_model']}, warmup={c['warmup']}": c["lr"] for c in sched["curves"]}
        peaks = {"peaks": ([c["peak_step"] for c in sched["curves"]], [c["peak_lr"] for c in sched["curves"]],
                           [f"{c['peak_step']:,}: {c['peak_lr']:.2e}" for c in sched["curves"]])}
        fig = line_chart(sched["steps"], series, markers=peaks, x_title="training step", y_title="learning rate",
                         height=430, title="Warm-up, then decay as 1/√step")
    elif kind == "markers":
        n = np.array([16, 32, 64, 128, 256, 512])
        fig = line_chart(n, {"self-attention": n ** 2 / 1e3, "recurrent": n * 8.0, "a dashed": n * 4.0},
                         mode="lines+markers", x_title="n", y_title="operations (thousands)", title="Cost per layer",
                         vline=300, vline_label="n = d")
    elif kind.startswith("anchor"):  # the positional page's dot products, its anchor as add_vline's dotted line
        from app.charts.curves import anchor_figure
        from model.lessons.positions import dot_profiles
        every, p = dot_profiles(100, 128), 50 if kind == "anchor" else 0
        fig = anchor_figure(every["measured"][p], every["formula"][p], every["q"], ("measured", "formula"), p,
                            title=f"Dot product with position p = {p}", x_title="position q", y_title="PE(p)·PE(q)")
    elif kind == "log schedule":  # the recipe's schedules on a log step axis: powers of ten, the peaks' labels
        sched = compare_schedules([(512, 4000), (256, 4000)], 1, 100_000, log=True)
        series = {f"d_model={c['d_model']}": c["lr"] for c in sched["curves"]}
        peaks = {"peaks": ([c["peak_step"] for c in sched["curves"]], [c["peak_lr"] for c in sched["curves"]],
                           [f"{c['peak_step']:,}" for c in sched["curves"]])}
        fig = line_chart(sched["steps"], series, markers=peaks, log_x=True, x_title="training step",
                         y_title="learning rate", height=430, title="Warm-up, then decay")
    elif kind == "log-log":  # why's cost against n: 10^k on both axes, every second decade on y; add_vline's lines
        n = np.logspace(1, 5, 40)
        fig = amend(line_chart(n, {"self-attention": n ** 2 * 512, "recurrent": n * 512 ** 2, "convolution": n * 3e5},
                               log_x=True, log_y=True, x_title="n", y_title="operations", title="Cost per layer"),
                    dict(shapes=[dict(type="line", xref="x", x0=512, x1=512, y0=0, y1=1, yref="y domain",
                                      line=dict(color="gray", dash="dot"))]))
    elif kind.startswith("why cost"):  # lines at n = d and at n, named at the plot's top and bottom
        from app.charts.curves import cost_figure
        from model.lessons import complexity
        n = 100 if kind == "why cost" else 10_000_000  # at the end: its name reaches past the curves
        over_n = complexity.curves_over_n(n, 512, 3, 16)
        fig = cost_figure(over_n, over_n["cost"], n, 512, ("operations", "Cost per layer against n"))
    elif kind == "log named":  # measured times: every n named, y's powers with 2 and 5 between (less than 2 decades)
        n = [16, 32, 64, 128, 256]
        fig = amend(line_chart(n, {"self-attention": [0.02 * (k / 16) ** 2 for k in n], "recurrent": [0.05 * k / 16 for k in n]},
                               mode="lines+markers", log_x=True, log_y=True, x_title="n", y_title="ms", title="Measured"),
                    dict(xaxis=dict(tickvals=n, ticktext=[str(k) for k in n]), yaxis=dict(dtick="D2")))
    elif kind == "log y words":  # words along x, a log y (the positional page's un-shuffling)
        fig = amend(line_chart([0, 1, 2, 3], {"shuffled": [3e-1, 2e-3, 4e-6, 1e-7], "kept": [1e-7, 2e-7, 1e-7, 3e-7]},
                               mode="lines+markers", log_y=True, x_title="word", y_title="difference", title="Un-shuffled"),
                    dict(xaxis=dict(tickmode="array", tickvals=[0, 1, 2, 3], ticktext=["I", "love", "you", "&lt;b&gt;"])))
    else:
        q = np.arange(12)
        fig = amend(line_chart(q, {"measured": np.cos(q / 2.0), "formula": np.cos(q / 2.0) * 0.9}, x_title="position",
                               y_title="dot product", title="Dot product with position 3"),
                    dict(yaxis=dict(range=[-1.2, 1.2])))
    ours = json.loads(chart.payload(ready_figure(fig), chart.PLOT_CONFIG, "failed"))
    assert "map" in ours
    theirs = {k: v for k, v in ours.items() if k not in ("map", "download")}
    theirs["version"] = ours["version"] + "-plotly"
    return [json.dumps(ours), json.dumps(theirs)], ours


def _coloured(picture: np.ndarray) -> np.ndarray:
    """Where a picture has a curve, a marker or text: a colour far from grey, or dark."""
    return (picture.max(axis=2) - picture.min(axis=2) > 60) | (picture.sum(axis=2) < 450)


def _grown(mask: np.ndarray, px: int) -> np.ndarray:
    """The mask with every True grown by `px` in each direction (a square)."""
    out = mask.copy()
    for dy in range(-px, px + 1):
        for dx in range(-px, px + 1):
            out |= np.roll(np.roll(mask, dy, axis=0), dx, axis=1)
    return out


def _joined(runs: list[tuple[int, int]], gap: int = 2) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in runs:
        if out and a - out[-1][1] <= gap:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


@pytest.mark.parametrize("kind", ["schedule", "one schedule", "markers", "positions", "anchor", "anchor at 0",
                                  "log schedule", "log-log", "log named", "log y words", "why cost", "why cost at the end"])
def test_curves_look_as_plotly_draws_them(kind):
    from playwright.sync_api import sync_playwright

    from app.fast.chart import stub_js
    SHOTS.mkdir(parents=True, exist_ok=True)
    specs, spec = _line_specs(kind)
    with served() as (url, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = new_page(browser, viewport={"width": 1400, "height": 3000})
        page.goto(f"{url}/?lang=en")
        wait_idle(page, draw_all=False)
        page.evaluate(MOUNT, [stub_js(), specs, WIDTH])
        page.wait_for_function("() => [0, 1].every((n) => document.querySelector('#map-' + n + ' .atlas-chart "
                               "canvas, #map-' + n + ' .js-plotly-plot .scatterlayer'))", timeout=60_000)
        page.wait_for_timeout(500)
        assert page.locator("#map-0 canvas").count() == 1 and page.locator("#map-1 .js-plotly-plot").count() == 1
        ours, theirs = _png(page, 0), _png(page, 1)
        page.locator("#map-0").screenshot(path=str(SHOTS / f"own-lines-{kind}.png"))
        page.locator("#map-1").screenshot(path=str(SHOTS / f"own-lines-{kind}-plotly.png"))
        if kind == "positions":  # hover names the nearest point's curve and its numbers
            drawn = page.evaluate("() => document.querySelector('#map-0 .atlas-chart').atlasDrawn")
            m, w, h = _plot(spec, WIDTH)
            (x0, x1), (y0, y1) = drawn["xrange"], drawn["yrange"]
            y5 = drawn["curves"][0]["y"][5]
            page.locator("#map-0 canvas").hover(position={"x": m["l"] + (5 - x0) / (x1 - x0) * w,
                                                          "y": m["t"] + (y1 - y5) / (y1 - y0) * h})
            tip = page.locator("#map-0 .atlas-map-tip")
            tip.wait_for(state="visible", timeout=5_000)
            assert tip.inner_text() == f"measured\n(5, {float(f'{y5:.7g}')})".replace("-", "−")
        browser.close()
    assert ours.shape == theirs.shape
    # along the rotated axis title, runs of ink up to 3 px apart are one (letters touch in one drawing, not the other)
    mine, plotly = _numeric_ink(ours, spec), _numeric_ink(theirs, spec)
    mine["left rows"], plotly["left rows"] = _joined(mine["left rows"], 3), _joined(plotly["left rows"], 3)
    # along the labels below the plot, letters touch in one drawing and not the other ("ve" against "v", "e") and
    # no gap joins them all: every column of ink in one lies within 2 px of one in the other
    for a, b in ((mine, plotly), (plotly, mine)):
        near = {c + d for x0, x1 in b["below columns"] for c in range(x0, x1 + 1) for d in range(-2, 3)}
        assert all(c in near for x0, x1 in a["below columns"] for c in range(x0, x1 + 1)), \
            (mine["below columns"], plotly["below columns"])
    del mine["below columns"], plotly["below columns"]
    if spec["figure"]["layout"].get("showlegend") is not False and len(spec["figure"]["data"]) > 1:
        for ink, picture in ((mine, ours), (plotly, theirs)):  # the legend: the last row of ink below the plot
            top, bottom = ink["below rows"][-1]
            m, w, h = _plot(spec, WIDTH)
            band = picture[m["t"] + h + 2 + top:m["t"] + h + 3 + bottom]
            ink["legend columns"] = _joined(_runs(_coloured(band).any(axis=0)), 3)
    for where in mine:
        assert len(mine[where]) == len(plotly[where]), (where, mine[where], plotly[where])
        assert all(abs(p - q) <= 2 for a, b in zip(mine[where], plotly[where]) for p, q in zip(a, b)), \
            (where, mine[where], plotly[where])
    # the curves: every coloured pixel of one picture's plot has one within 2 px in the other's
    m, w, h = _plot(spec, WIDTH)
    inside = (slice(m["t"], m["t"] + h), slice(m["l"], m["l"] + w))
    for a, b in ((ours, theirs), (theirs, ours)):
        near = _grown(_coloured(b[inside]), 2)
        assert (_coloured(a[inside]) & ~near).sum() <= 0.01 * _coloured(a[inside]).sum()


def test_a_chart_that_changes_hands_is_drawn_by_one_of_them():
    """One chart element given a figure our canvas draws, then one Plotly draws, then ours again (as a figure that
    gains something our canvas does not draw would): each is drawn in the same box, by one of the two. Plotly's
    purged plot left its class behind (an emptied plot that tests and the page's own readers took for a chart)
    when the canvas came back."""
    from playwright.sync_api import sync_playwright

    from app.fast.chart import stub_js
    (ours, theirs), _ = _line_specs("positions")
    swap = """async ([stub, specs]) => {
      const url = URL.createObjectURL(new Blob([stub], {type: "text/javascript"}));
      const script = (await import(url)).default;
      const main = document.querySelector('[data-testid="stMain"]');
      const parent = main.insertBefore(document.createElement("div"), main.firstChild);
      parent.style.width = "520px";
      const seen = [];
      for (const spec of specs) {
        script({parentElement: parent, data: spec});
        await window.__atlasChartModule;
        await new Promise((r) => setTimeout(r, 0));
        await window.atlasCharts.drawAll();
        const b = parent.querySelector('.atlas-chart');
        seen.push([b.querySelectorAll('canvas').length, b.classList.contains('js-plotly-plot'),
                   b.querySelectorAll('.main-svg').length > 0, !!b.atlasDrawn]);
      }
      return seen;
    }"""
    with served() as (url, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = new_page(browser, viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/?lang=en")
        wait_idle(page, draw_all=False)
        seen = page.evaluate(swap, [stub_js(), [ours, theirs, ours, theirs]])
        assert seen == [[1, False, False, True], [0, True, True, False]] * 2, seen
        browser.close()
