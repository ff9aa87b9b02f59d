"""The family page's interactions (each under 300 ms of server time on this CPU).

    python bench/family.py [--repeats 8]

Each interaction is one rerun of pages/family.py in Streamlit's AppTest (the page's whole script: inputs,
cached model outputs, every figure built), timed after a warm-up run with the same input, so the
numbers are a rerun with warm caches for the model and cold caches for the new input. AppTest adds its
own overhead (a few tens of ms), so these are upper bounds on the server time. Results go to
bench/results/family.json."""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# (member, widget kind, key, values to cycle through): every value is new to the caches
INTERACTIONS = {
    "mlm: new sentence": ("mlm", "text_input", "fam_mlm_text",
                          [f"I see the [MASK] {w}." for w in ("today", "every day", "at school", "now", "again",
                                                               "here", "there", "always", "often", "later")]),
    "gpt: new text": ("gpt", "text_input", "fam_gpt_text",
                      [f"I {w} the" for w in ("see", "like", "eat", "read", "drink", "buy", "want", "know", "love", "have")]),
    "vit: new test digit": ("vit", "number_input", "fam_vit_index", list(range(11, 31, 2))),
    "detr: new picture": ("detr", "number_input", "fam_detr_seed", list(range(101, 121, 2))),
}


def main(repeats: int) -> dict:
    from tests.apptest_util import open_link
    results = {}
    for name, (member, kind, key, values) in INTERACTIONS.items():
        at = open_link("family.py", {"member": member}, lang="en", timeout=300)
        assert not at.exception, [e.value for e in at.exception]
        times = []
        for value in values[:repeats]:
            widget = getattr(at, kind)(key=key)
            widget.set_value(value)
            t0 = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - t0)
            assert not at.exception, [e.value for e in at.exception]
        results[name] = {"p50_s": statistics.median(times), "max_s": max(times), "n": len(times)}
        print(f"{name:24s} p50 {results[name]['p50_s'] * 1000:6.0f} ms   max {results[name]['max_s'] * 1000:6.0f} ms")
    out = ROOT / "bench" / "results" / "family.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d"), "results": results}, indent=2) + "\n")
    return results


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=8)
    main(ap.parse_args().repeats)
