"""Figures of the limits page: measured cost against n, accuracy against the test length with the seeds'
spread, and dev loss against parameters with a fitted power law (both axes logarithmic)."""
from __future__ import annotations

from app.charts.curves import line_chart
from app.charts.style import Figure, amend, colour, esc, figure, legend_below, margins


def measured_chart(sizes: list[int], series: dict[str, list], *, title: str, y_title: str) -> Figure:
    """One curve per attention over n (log-log); a refused size is a gap (None)."""
    fig = line_chart(sizes, series, mode="lines+markers", log_x=True, log_y=True, x_title="n", y_title=y_title,
                     title=title, height=360)
    return amend(fig, dict(xaxis=dict(tickvals=sizes, ticktext=[f"{n:,}" for n in sizes])))  # every measured n named


def spread_chart(xs: list, rows: dict[str, tuple[list, list, list]], *, chance: float, chance_label: str,
                 title: str, x_title: str, y_title: str) -> Figure:
    """{name: (medians, lows, highs)} over xs: the median with a bar to the lowest and the highest seed; the
    chance level dashed. A missing cell (None) is left out."""
    traces = []
    for i, (name, (med, lo, hi)) in enumerate(rows.items()):
        keep = [j for j, m in enumerate(med) if m is not None]
        traces.append(dict(type="scatter", mode="lines+markers", name=esc(name), x=[xs[j] for j in keep],
                           y=[med[j] for j in keep], line=dict(color=colour(i), width=2),
                           error_y=dict(type="data", symmetric=False, array=[hi[j] - med[j] for j in keep],
                                        arrayminus=[med[j] - lo[j] for j in keep])))
    traces.append(dict(type="scatter", mode="lines", name=esc(chance_label), x=[xs[0], xs[-1]], y=[chance, chance],
                       line=dict(color="#555", dash="dash", width=1.5)))
    return figure(traces, dict(title=dict(text=esc(title)), height=380, margin=margins(title, 50),
                               xaxis=dict(title=dict(text=esc(x_title)), type="log", tickvals=xs,
                                          ticktext=[str(x) for x in xs]),
                               yaxis=dict(title=dict(text=esc(y_title)), range=[0, 1.05]), legend=legend_below()))


def scale_chart(points: list[tuple[float, float, str]], curve: list[tuple[float, float]], *, title: str,
                x_title: str, y_title: str, points_label: str, fit_label: str) -> Figure:
    """Seeds as points (parameters, loss, row name on hover) and the fitted law as a line, log-log."""
    ys = [p[1] for p in points] + [c[1] for c in curve]
    traces = [dict(type="scatter", mode="markers", name=esc(points_label), x=[p[0] for p in points],
                   y=[p[1] for p in points], text=[esc(p[2]) for p in points],
                   hovertemplate="%{text}: %{x:,} → %{y:.4f}<extra></extra>", marker=dict(color=colour(0), size=7)),
              dict(type="scatter", mode="lines", name=esc(fit_label), x=[c[0] for c in curve], y=[c[1] for c in curve],
                   line=dict(color=colour(1), width=2))]
    return figure(traces, dict(title=dict(text=esc(title)), height=380, margin=margins(title, 50),
                               xaxis=dict(title=dict(text=esc(x_title)), type="log"),
                               yaxis=dict(title=dict(text=esc(y_title)), type="log", **_named_ticks(ys)),
                               legend=legend_below()))


def _named_ticks(values: list[float], n: int = 4) -> dict:
    """Ticks at n values spread evenly in log space over the data, each written with two decimals: the figure
    holds its tick texts, so its margins are measured from them (plotly's own log ticks were estimated short)."""
    import math
    vals = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not vals:
        return {}
    lo, hi = math.log10(min(vals)), math.log10(max(vals))
    ticks = sorted({round(10 ** (lo + (hi - lo) * i / (n - 1)), 2) for i in range(n)}) if hi > lo else [round(vals[0], 2)]
    return dict(tickvals=ticks, ticktext=[f"{v:.2f}" for v in ticks])
