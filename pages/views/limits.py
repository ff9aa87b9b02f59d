"""The limits page's reading of the shipped studies and its small formatting helpers. No Streamlit here."""
from __future__ import annotations

import json
from pathlib import Path

from app.format import number
from app.i18n import t
from model.lessons import extrapolation as ex
from model.lessons import limits as lim

ROOT = Path(__file__).resolve().parents[2]
LENGTHS = ROOT / "assets" / "study" / "lengths.json"
TABLE3 = ROOT / "assets" / "study" / "table3.json"
SWEEP_FROM, SWEEP_TO, SWEEP_POINTS = 128, 16384, 7
# the cost section's controls: n, d and heads choose from these; the sliders' (min, max, step)
N_CHOICES = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 1048576]
D_CHOICES, HEAD_CHOICES = [64, 128, 256, 512], [1, 2, 4, 8]
BLOCKS, WINDOWS, GLOBALS, KS = (16, 512, 16), (2, 256, 1), (0, 8, 1), (8, 256, 8)
MAX_FLOPS = 20_000_000_000  # one call past this is refused as too slow for a page (seconds on one core)
MAX_STEPS = 256  # one call whose loop takes more steps is refused (each step is a dozen profiled operations)
MAX_BYTES = 2**30  # nor one that needs more memory than this (nor a quarter of the free memory): a server has many learners


def mb(n_bytes: float) -> str:
    """Bytes as mebibytes, three significant digits ("0.250 MiB", "1.20e+04 MiB")."""
    value = n_bytes / 2**20
    return number(value, ".3g" if value >= 1000 else ".3f") + " MiB"


def sweep_sizes(n: int) -> tuple[int, ...]:
    """The measured sizes: powers of two from SWEEP_FROM below n (and at most SWEEP_TO), the last SWEEP_POINTS - 1
    of them, and n: a curve up to the chosen size without measuring every size on the way to a refused one."""
    sizes, size = [], SWEEP_FROM
    while size < n and size <= SWEEP_TO:
        sizes.append(size)
        size *= 2
    return tuple(sizes[-(SWEEP_POINTS - 1):] + [n])


def cost_calls(setting: lim.Setting) -> list[tuple]:
    """The cost section's measurements as app.resources.in_background takes them: every answer at every size of
    sweep_sizes, within the page's budgets, each only with the knobs it reads (lim.relevant), so one measured
    call serves every setting that runs it."""
    from dataclasses import replace
    return [(lim.sweep_point, (impl, lim.relevant(impl, replace(setting, n=n)), MAX_FLOPS, MAX_STEPS, MAX_BYTES))
            for n in sweep_sizes(setting.n) for impl in lim.IMPLS]


def setting_texts(now: lim.Setting, shown: lim.Setting) -> tuple[str, str]:
    """Two settings as the sliders name their values, only where they differ ("window w 37", "window w 32"), or
    whole where they do not."""
    parts = [("n", "n = {:,}"), ("d", "d = {}"), ("heads", t("limits.cost.heads") + " {}"),
             ("block", t("limits.cost.block") + " {}"), ("window", t("limits.cost.window") + " {}"),
             ("global_tokens", t("limits.cost.global") + " {}"), ("k", t("limits.cost.k") + " {}")]
    differ = [p for p in parts if getattr(now, p[0]) != getattr(shown, p[0])] or parts
    return tuple(" · ".join(form.format(getattr(s, name)) for name, form in differ) for s in (now, shown))


def refusal_note(refused: dict | None) -> str:
    """Why a size was not run, in the reader's language ("" when it was)."""
    if not refused:
        return ""
    if refused["kind"] == "memory":
        return t("limits.refused.memory", needed=mb(refused["needed"]), allowed=mb(refused["allowed"]))
    if refused["kind"] == "steps":
        return t("limits.refused.steps", needed=refused["needed"], allowed=refused["allowed"])
    return t("limits.refused.time", needed=f"{refused['needed']:.2g}", allowed=f"{refused['allowed']:.2g}")


def _read(path: Path):
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("rows"), list) else None


def lengths_study(path: Path = LENGTHS) -> dict | None:
    """The shipped length study (model.training.lengths), or None when missing or damaged."""
    doc = _read(path)
    needed = ("options", "multiples", "chance", "seconds", "command", "machine", "date")
    return doc if doc is not None and all(k in doc for k in needed) else None


def scale_study(path: Path = TABLE3) -> tuple[list[dict], dict | None]:
    """The Table 3 study's size rows as points, and the power law fitted to them (None when it cannot be)."""
    doc = _read(path)
    points = ex.size_points(doc) if doc is not None else []
    try:
        return points, ex.power_law(points)
    except ValueError:
        return points, None
