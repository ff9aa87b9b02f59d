"""Reading what an AppTest run shows: metrics by label, error texts, rendered text, plotly figures
and their data."""
from __future__ import annotations

import base64
import json
import re

import numpy as np


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def metric(at, startswith: str) -> float:
    """The value of the first metric whose label starts with `startswith`, as a number."""
    hits = [v for k, v in metrics(at).items() if k.startswith(startswith)]
    assert hits, (startswith, list(metrics(at)))
    return float(hits[0].replace(",", ""))


def errors(at) -> list[str]:
    return [e.value for e in at.error]


class Chart:
    """One chart of the page: its element id (which holds its key) and the figure it draws, whether the app's
    chart element drew it (app/fast/chart.py: its payload's figure) or st.plotly_chart (its spec)."""

    def __init__(self, id: str, figure: dict, kind: str, follow: dict | None = None):
        self.id, self.figure, self.kind, self.follow = id, figure, kind, follow

    def variant(self, i: int) -> dict:
        """The figure as the browser draws it for variant i of the browser choices it follows (app/static/atlas_chart.js,
        variantFigure): each trace attribute and layout path of the variant set."""
        return followed(self.figure, self.follow, i)


def charts(at) -> list[Chart]:
    """Every chart of the page, in the page's order."""
    out = []

    def walk(node):
        kind = getattr(node, "type", None)
        if kind == "plotly_chart":
            out.append(Chart(node.proto.id, json.loads(node.proto.spec), kind))
        elif kind == "bidi_component" and node.proto.component_name == "atlas_chart":
            spec = json.loads(node.proto.bytes)
            out.append(Chart(node.proto.id, spec["figure"], kind, spec.get("follow")))
        for child in (getattr(node, "children", None) or {}).values():
            walk(child)

    walk(at._tree)
    return out


def _set_path(obj: dict, path: str, value) -> None:
    keys = re.sub(r"\[(\d+)\]", r".\1", path).split(".")
    for k in keys[:-1]:
        obj = obj[int(k)] if isinstance(obj, list) else obj.setdefault(k, {})
    if isinstance(obj, list):
        obj[int(keys[-1])] = value
    else:
        obj[keys[-1]] = value


def followed(figure: dict, follow: dict, i: int) -> dict:
    """`figure` with variant i of `follow` (app.fast.choice.Follow.spec()) applied, read as the browser reads it:
    packed float32 numbers to 7 significant digits."""
    fig = json.loads(json.dumps(figure))
    for t in follow["traces"]:
        if "list" in t:
            value = t["list"][i]
        else:
            shape = t["packed"]["shape"]
            every = np.frombuffer(base64.b64decode(t["packed"]["f4"]), dtype="<f4").reshape(shape)
            value = [float(f"{x:.7g}") for x in every[i].ravel()]
            if len(shape) == 3:
                value = [value[r * shape[2]:(r + 1) * shape[2]] for r in range(shape[1])]
        _set_path(fig["data"][t["trace"]], t["attr"], value)
    for path, value in ((follow.get("layouts") or [{}] * (i + 1))[i] or {}).items():
        _set_path(fig["layout"], path, value)
    return fig


def choice_specs(at) -> list[dict]:
    """What every browser choice (a slider answered in the page) and every text that follows one gets
    (app/fast/choice.py), in the page's order, each with its element's key under "element"."""
    from app.fast.choice import COMPONENT
    out = []

    def walk(node):
        if getattr(node, "type", None) == "bidi_component" and node.proto.component_name == COMPONENT:
            out.append({**json.loads(node.proto.bytes), "element": node.proto.id})
        for child in (getattr(node, "children", None) or {}).values():
            walk(child)

    walk(at._tree)
    return out


def figures(at) -> list[dict]:
    return [c.figure for c in charts(at)]


def attention_views(at) -> list[bytes]:
    """The payload of every attention view of the page (app/fast/attention_view.py), in the page's order."""
    from app.fast.attention_view import COMPONENT
    out = []

    def walk(node):
        if getattr(node, "type", None) == "bidi_component" and node.proto.component_name == COMPONENT:
            out.append(node.proto.bytes)
        for child in (getattr(node, "children", None) or {}).values():
            walk(child)

    walk(at._tree)
    return out


def title(fig: dict) -> str:
    """The figure's title as read: a title wrapped to a narrow column (app.charts.style.wrapped) reads as one line."""
    t = fig["layout"].get("title") or {}
    return (t.get("text", "") if isinstance(t, dict) else str(t)).replace("<br>", " ")


def array_of(value) -> np.ndarray:
    """A figure's data array, whether plotly sent it as a list or as a typed binary array (dtype, bdata, shape)."""
    if isinstance(value, dict):
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        if isinstance(shape, str):
            shape = [int(x) for x in shape.split(",")]
        return arr.reshape(shape) if shape else arr
    return np.array(value, dtype=object if value and isinstance(value[0], str) else float)


def z_of(fig: dict) -> np.ndarray:
    """The first trace's z, whether plotly sent it as a list or as typed binary (plotly >= 6)."""
    return array_of(fig["data"][0]["z"])


# CommonMark: a closing `*`/`**` preceded by punctuation and followed by a letter is not a closing
# delimiter, so Korean particles glued to emphasis (`*정렬(alignment)*이`, `**`x`**을`) show raw stars.
_BROKEN_EMPHASIS = re.compile(r"(?<=[^\s\w*])\*{1,3}(?=[가-힣])")


def rendered_text(at) -> list[str]:
    """Every Markdown-rendered text of the run: markdown, captions and alert boxes."""
    return [e.value for kind in ("markdown", "caption", "info", "warning", "error", "success")
            for e in getattr(at, kind)]


def broken_emphasis(at) -> list[str]:
    """Snippets around emphasis that CommonMark would leave as raw stars (empty when all is well)."""
    return [m.string[max(0, m.start() - 30):m.end() + 10] for text in rendered_text(at)
            for m in _BROKEN_EMPHASIS.finditer(text)]


_UNESCAPE = re.compile(r"\\([\\`*\[\]<>|~$:&_#+\-=.!()])")


def tables(at):
    """Every Markdown table a run shows (app.ui.table), in order, as pandas DataFrames of the texts shown:
    escapes read back, empty cells as "", and a column whose cells are all whole numbers as numbers (its
    empty cells as None)."""
    import pandas as pd
    out = []
    for el in at.markdown:
        lines = [ln.strip() for ln in el.value.strip().splitlines()]
        if len(lines) < 2 or not all(ln.startswith("|") and ln.endswith("|") for ln in lines) \
                or not re.fullmatch(r"\|(:?-+:?\|)+", lines[1]):
            continue
        rows = [[_UNESCAPE.sub(r"\1", c.strip()) for c in re.split(r"(?<!\\)\|", ln)[1:-1]]
                for ln in lines[:1] + lines[2:]]
        columns = {}
        for j, name in enumerate(rows[0]):
            cells = [r[j] if j < len(r) else "" for r in rows[1:]]
            if any(cells) and all(re.fullmatch(r"-?\d+", v) for v in cells if v):
                cells = [int(v) if v else None for v in cells]
            columns[name] = cells
        out.append(pd.DataFrame(columns))
    return out


def outlined(fig: dict) -> set[tuple[int, int]]:
    """(row, col) of the cells a heatmap outlines in red (app.charts.heatmaps.highlight_shapes: one path of squares,
    each "M x0,y0 H x1 V y1 H x0 Z" in cell coordinates)."""
    cells = set()
    for shape in fig["layout"].get("shapes") or []:
        if shape.get("type") == "path":
            for x0, y0 in re.findall(r"M(-?[\d.]+),(-?[\d.]+)", shape["path"]):
                cells.add((round(float(y0) + 0.5), round(float(x0) + 0.5)))
    return cells
