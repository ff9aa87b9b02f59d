"""When each run of a Table 3 study left the loss plateau, read from its training log.

    python bench/table3_plateau.py [--out runs/study-table3] [--excess 0.75]

The training loss is label-smoothed, so it cannot fall below the entropy of the smoothed target (about 1.09
nats at eps_ls = 0.1 over 2,000 pieces, 2.02 at 0.2, 0 without smoothing); what is left above that floor is
what the model still gets wrong. A run on the plateau keeps 1.5-2 nats above its floor for hundreds of steps:
it knows which Korean pieces are likely, not where they go. This prints, per row, the first logged step at
which each seed's loss came within --excess nats of its floor, the final dev perplexity of each seed, and the
latest such step over the whole study. Results go to bench/results/table3_plateau.json."""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def smoothing_floor(eps: float, vocab: int) -> float:
    """The cross-entropy of a label-smoothed target with itself: 1 - eps on the right piece, eps spread over
    the other vocab - 1."""
    if eps <= 0:
        return 0.0
    return -((1 - eps) * math.log(1 - eps) + eps * math.log(eps / (vocab - 1)))


def first_step_below(metrics: Path, loss: float) -> int | None:
    for line in metrics.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if rec.get("kind") == "train" and isinstance(rec.get("loss"), (int, float)) and rec["loss"] < loss:
            return int(rec["step"])
    return None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=str(ROOT / "runs" / "study-table3"))
    p.add_argument("--excess", type=float, default=0.75)
    args = p.parse_args(argv)
    rows: dict[str, list[dict]] = {}
    for run in sorted(Path(args.out).glob("*-s*")):
        result = run / "result.json"
        if not result.is_file() or not (run / "metrics.jsonl").is_file():
            continue
        r = json.loads(result.read_text(encoding="utf-8"))
        cfg = json.loads((run / "config.json").read_text(encoding="utf-8"))
        floor = smoothing_floor(float(cfg.get("label_smoothing") or 0.0), int(cfg["vocab_size"]))
        rows.setdefault(r["row"], []).append({"seed": r["seed"],
                                              "left_at": first_step_below(run / "metrics.jsonl", floor + args.excess),
                                              "dev_perplexity": r["dev_perplexity"]})
    latest = None
    for row, seeds in rows.items():
        steps = [s["left_at"] for s in seeds]
        print(f"{row:10s} left the plateau at steps {steps}; dev perplexity "
              f"{[round(s['dev_perplexity'], 3) for s in seeds]}")
        if None in steps:
            latest = float("inf")
        elif steps:
            latest = max(latest or 0, max(steps))
    print(f"latest step at which a run's training loss came within {args.excess} nats of its floor: {latest}")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "table3_plateau.json").write_text(json.dumps({"excess": args.excess, "rows": rows, "latest": latest}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
