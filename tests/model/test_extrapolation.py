"""Lengths never seen and scale: the verdict rule of Table 3 on the length study, the power law's fit."""
import json
import math
from pathlib import Path

import pytest

from model.lessons import extrapolation as ex

ROOT = Path(__file__).resolve().parents[2]


def _doc(values: dict, chance=0.1):
    rows = [{"scheme": s, "seeds": 5, "accuracy": {str(m): {"values": v} for m, v in by_m.items()}}
            for s, by_m in values.items()]
    return {"chance": chance, "rows": rows}


def test_the_paper_hypothesis_is_contradicted_only_when_every_seed_says_so():
    doc = _doc({"sinusoidal": {1: [0.97, 0.98, 0.99, 0.96, 0.97], 2: [0.3, 0.25, 0.28, 0.27, 0.29]},
                "rotary": {2: [0.2, 0.21, 0.22, 0.19, 0.2]}, "alibi": {2: [0.3, 0.5, 0.26, 0.24, 0.4]}})
    got = {v["claim"]: v["outcome"] for v in ex.length_verdicts(doc)}
    assert got == {"sinusoidal_keeps": "contradicted", "sinusoidal_beats_chance": "reproduced",
                   "rotary_beats_sinusoidal": "contradicted", "alibi_beats_sinusoidal": "unclear"}


def test_refused_cells_and_few_seeds():
    doc = _doc({"sinusoidal": {1: [0.9, 0.95, 0.96], 2: [0.2, 0.1, 0.3]}, "rotary": {2: []}})
    got = {v["claim"]: v["outcome"] for v in ex.length_verdicts(doc)}
    assert got["sinusoidal_keeps"] == "unclear"  # 3 against 3 separate by chance 10 % of the time
    assert got["rotary_beats_sinusoidal"] == got["alibi_beats_sinusoidal"] == "missing"


def test_power_law_recovers_a_known_exponent():
    pts = [{"parameters": n, "dev_loss": 5.0 * n ** -0.3 * (1 + e)}
           for n, e in [(1e3, 0.01), (1e4, -0.01), (1e5, 0.0), (1e6, 0.01), (1e7, -0.01)]]
    fit = ex.power_law(pts)
    assert fit["alpha"] == pytest.approx(0.3, abs=0.01) and fit["alpha_se"] < 0.01
    assert fit["decades"] == pytest.approx(4) and fit["r2"] > 0.99
    curve = ex.fitted_curve(fit, 5)
    assert curve[0][0] == pytest.approx(1e3) and curve[-1][1] == pytest.approx(fit["c"] * 1e7 ** -fit["alpha"])
    with pytest.raises(ValueError):
        ex.power_law(pts[:1] * 3)


def test_the_shipped_size_rows():
    doc = json.loads((ROOT / "assets" / "study" / "table3.json").read_text())
    pts = ex.size_points(doc)
    assert {p["row"] for p in pts} == set(ex.SIZE_ROWS) and len(pts) == 5 * len(ex.SIZE_ROWS)
    fit = ex.power_law(pts)
    assert fit["decades"] < 1 < fit["alpha"] / fit["alpha_se"]
    assert all(math.isfinite(p["dev_loss"]) for p in pts)
