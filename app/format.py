"""Numbers as text, one way for the whole app (language-free: units that differ by language come
from the catalogue, `common.unit_*`)."""
from __future__ import annotations

import math

import numpy as np


def _finite(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and math.isfinite(v)


def compact(x: float, sig: int = 4) -> str:
    """A compact number for cells and formulas: 0.2, 0.1155, 1.51, 1e+30, −∞."""
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "−∞" if x < 0 else "∞"
    if x == 0:
        return "0"
    if abs(x) >= 1e5 or abs(x) < 1e-4:
        return f"{x:.3g}"
    return f"{x:.{sig}g}"


def vector(v, max_items: int = 6) -> str:
    """[0.3, 0.7, 0.5, …] with at most max_items entries."""
    v = list(np.asarray(v, float))
    body = ", ".join(compact(x) for x in v[:max_items])
    return f"[{body}{', …' if len(v) > max_items else ''}]"


def large(x: float) -> str:
    """Readable large numbers: 1.2e+12 style beyond a million, commas below, ∞ for infinity."""
    if x == math.inf:
        return "∞"
    if abs(x) >= 1e6:
        return f"{x:.3g}"
    if float(x).is_integer():
        return f"{int(x):,}"
    return f"{x:.3g}"


def fixed(v, digits: int = 3) -> str:
    """A metric with fixed decimals, or – when there is none yet."""
    return f"{v:.{digits}f}" if _finite(v) else "–"


def percent(v) -> str:
    return f"{100 * v:.1f}%" if _finite(v) else "–"


def count(n) -> str:
    """1.03M, 12.5k, 640."""
    if n is None:
        return "–"
    n = float(n)
    if n >= 1e6:
        return f"{n / 1e6:.2f}M"
    if n >= 1e3:
        return f"{n / 1e3:.1f}k"
    return f"{n:.0f}"


def size_bytes(n) -> str:
    n = float(n or 0)
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def duration_parts(seconds) -> tuple[int, int, int] | None:
    """(hours, minutes, seconds) of a duration, or None when it is unknown. The page joins them with
    the units of its language (app.ui.fmt_duration)."""
    if not _finite(seconds):
        return None
    s = int(round(max(float(seconds), 0)))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return h, m, s
