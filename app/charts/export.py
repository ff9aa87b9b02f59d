"""The numbers behind every figure as CSV text: one writer (the csv module quotes what needs it)."""
from __future__ import annotations

import csv
import io

import numpy as np

METRIC_FIELDS = ("kind", "step", "loss", "lr", "tokens_per_second", "val_loss", "val_token_acc", "val_exact", "time")


def _cell(v):
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, float, np.integer, np.floating)):
        return repr(float(v)) if isinstance(v, (float, np.floating)) else str(int(v))
    return "" if v is None else str(v)


def csv_text(header, rows) -> str:
    """A header row and data rows as CSV text (labels quoted as needed, numbers at full precision)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([_cell(h) for h in header])
    for row in rows:
        w.writerow([_cell(v) for v in row])
    return buf.getvalue()


def matrix_csv(values, row_labels=None, col_labels=None) -> str:
    """A matrix with its labels in the first row and column."""
    from app.charts.style import to_np
    z = to_np(values)
    z = z.reshape(z.shape[0], -1) if z.ndim != 2 else z
    rows = row_labels if row_labels is not None else [str(i) for i in range(z.shape[0])]
    cols = col_labels if col_labels is not None else [str(j) for j in range(z.shape[1])]
    return csv_text(["", *cols], ([r, *(float(v) for v in row)] for r, row in zip(rows, z)))


def heads_csv(weights, labels: list[str]) -> str:
    """Every head's (L, L) map in one CSV table: a row per (head, query), a column per key."""
    w = np.asarray(weights, float)  # (H, L, L)
    return csv_text(["head", "", *labels], ([h + 1, labels[i], *w[h, i]] for h in range(w.shape[0])
                                            for i in range(w.shape[1])))


def columns_csv(columns: dict) -> str:
    """Equal-length columns, one per name."""
    names = list(columns)
    cols = [np.asarray(columns[n]).ravel().tolist() for n in names]
    return csv_text(names, zip(*cols))


def series_csv(x_name: str, x, series: dict) -> str:
    """Curves over a shared x: one column for x, one per curve."""
    return columns_csv({x_name: x, **series})


def rows_csv(rows: list[dict]) -> str:
    """A table given as a list of dicts (the first row's keys are the header)."""
    if not rows:
        return ""
    keys = list(rows[0])
    return csv_text(keys, ([r.get(k) for k in keys] for r in rows))


def metrics_csv(records: list[dict], run: str | None = None) -> str:
    """Training metrics records (metrics.jsonl) as CSV; with `run`, a first column names the run."""
    fields = (("run",) if run is not None else ()) + METRIC_FIELDS
    return csv_text(fields, ([run, *(r.get(f) for f in METRIC_FIELDS)] if run is not None
                             else [r.get(f) for f in METRIC_FIELDS] for r in records))


def compare_csv(runs: dict[str, list[dict]]) -> str:
    """Several runs' metrics in one table."""
    if not runs:
        return ""
    parts = [metrics_csv(recs, run=name).split("\n", 1) for name, recs in runs.items()]
    return parts[0][0] + "\n" + "".join(p[1] for p in parts)
