"""The Table 3 page: the shipped table, the reading of the paper's conclusions, a rerun in the background."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from app.i18n import LANGS

from pages.views import study
from app.i18n import catalogue
from model.lessons import table3
from model.lessons.table3 import STUDY_ROWS, paper_row
from tests.apptest_read import errors, figures, tables, title
from tests.apptest_util import assert_clean, run_page


def fake_doc(values: dict) -> dict:
    """A study document with per-seed dev perplexities `values[row]` (rows left out are untrained)."""
    import statistics
    rows = []
    for key in STUDY_ROWS:
        v = list(values.get(key) or [])
        stats = ({"median": statistics.median(v), "mean": statistics.fmean(v), "std": 0.0, "min": min(v),
                  "max": max(v), "n": len(v), "values": v} if v else
                 {"median": None, "mean": None, "std": None, "min": None, "max": None, "n": 0, "values": []})
        rows.append({"row": key, "group": paper_row(key).group, "label": paper_row(key).label, "mini_changes": {},
                     "parameters": 1000 if v else None, "seeds_done": len(v), "seeds": 5,
                     "perplexity": stats, "exact_match": {**stats, "median": 0.5 if v else None},
                     "bleu": {**stats, "median": 50.0 if v else None}, "seconds": {"median": 60.0 if v else None},
                     "paper": {}})
    return {"study": "table3", "rows": rows, "options": {"seeds": 5, "steps": 500, "batch_size": 64, "warmup": 100,
                                                          "lr_factor": 0.5, "split_seed": 0, "decode_limit": 400},
            "command": "python -m model.training.study table3 --out x", "seconds": 600.0, "machine": "test"}


def outcomes(doc) -> dict:
    return {v.claim.key: v.outcome for v in table3.verdicts(doc)}


FIVE = [1.20, 1.21, 1.22, 1.23, 1.24]


def test_a_verdict_needs_every_seed_on_one_side():
    """Reproduced or contradicted only when the two rows' seeds separate completely, and so many seeds that
    chance would part them at most 5 % of the time; unclear whenever they overlap (however far apart the medians)."""
    doc = fake_doc({"base": FIVE, "A-h1": [1.25, 1.26, 1.30, 1.31, 1.40],     # every seed worse: the paper's way
                    "A-h16": FIVE, "A-h32": [1.19, 1.30, 1.31, 1.32, 1.33],  # medians 8 % apart, one seed overlaps
                    "B-dk16": [1.10, 1.11, 1.12, 1.13, 1.19],                # every seed better: against the paper
                    "C-N2": [1.5, 1.6], "C-N8": [1.1, 1.2],                   # apart, but two seeds each
                    "E-learned": [1.20, 1.22, 1.25, 1.26, 1.27]})            # alike: no difference found
    got = outcomes(doc)
    assert got == {"one_head": "reproduced", "many_heads": "unclear", "small_keys": "contradicted",
                   "deeper": "unclear", "wider": "missing", "bigger_ffn": "missing", "dropout": "missing",
                   "smoothing_perplexity": "missing", "learned_positions": "unclear"}
    # "alike" is contradicted when the seeds separate, never reproduced
    assert outcomes(fake_doc({"base": FIVE, "E-learned": [1.3, 1.31, 1.32, 1.33, 1.34]}))["learned_positions"] == \
        "contradicted"
    v = next(v for v in table3.verdicts(doc) if v.claim.key == "one_head")
    assert v.paper == (paper_row("A-h1").perplexity, paper_row("base").perplexity)
    assert v.ours == (1.30, 1.22) and v.ranges == ((1.25, 1.40), (1.20, 1.24)) and v.seeds == (5, 5)
    assert v.p_value == pytest.approx(2 / 252)
    assert next(v for v in table3.verdicts(doc) if v.claim.key == "many_heads").p_value is None
    # 3 seeds against 3 part by chance 10 % of the time: no verdict; 4 against 4, 2.9 %: a verdict
    three = outcomes(fake_doc({"base": FIVE[:3], "A-h1": [1.3, 1.4, 1.5]}))["one_head"]
    four = outcomes(fake_doc({"base": FIVE[:4], "A-h1": [1.3, 1.4, 1.5, 1.6]}))["one_head"]
    assert (three, four) == ("unclear", "reproduced")


def test_the_chance_of_a_complete_separation():
    assert table3.separation_p_value(5, 5) == pytest.approx(2 / 252)
    assert table3.separation_p_value(3, 3) == pytest.approx(0.1)
    assert table3.separation_p_value(1, 1) == 1.0


def test_the_shipped_study_supports_every_verdict_it_prints():
    """The shipped table: every row trained with at least 5 seeds on one split, no run on the plateau, and each
    verdict the page prints follows from the seeds themselves (checked here from the raw values)."""
    doc = study.load_table(study.SHIPPED)
    assert doc is not None, "assets/study/table3.json is missing or damaged"
    assert [r["row"] for r in doc["rows"]] == list(STUDY_ROWS)
    assert doc["options"]["split_seed"] == 0 and "model.training.study table3" in doc["command"]
    assert doc["seconds"] > 0 and doc["step_seconds"] > 0
    for r in doc["rows"]:
        assert r["seeds_done"] >= 5 and len(r["perplexity"]["values"]) == r["seeds_done"], r["row"]
        assert max(r["perplexity"]["values"]) <= table3.PLATEAU, r["row"]
    assert table3.plateau_runs(doc)["stuck"] == 0
    rows = {r["row"]: r["perplexity"]["values"] for r in doc["rows"]}
    for v in table3.verdicts(doc):
        worse, better = rows[v.claim.worse], rows[v.claim.better]
        overlap = not (min(worse) > max(better) or max(worse) < min(better))
        if overlap or table3.separation_p_value(len(worse), len(better)) > table3.ALPHA:
            assert v.outcome == "unclear", v.claim.key
        else:
            assert v.outcome in ("reproduced", "contradicted"), v.claim.key
            assert (v.outcome == "reproduced") == (v.claim.kind == "worse" and min(worse) > max(better))


def test_start_says_running_before_the_study_writes_anything(tmp_path, monkeypatch):
    """The page's watcher reads study.json: the launcher writes "running" and the new process's id itself, so
    the previous study's outcome is never shown while the new one imports torch."""
    class FakePopen:
        pid = 424242

        def __init__(self, argv, **kw):
            pass

    monkeypatch.setattr(study.subprocess, "Popen", FakePopen)
    folder = tmp_path / "study"
    folder.mkdir()
    (folder / "study.json").write_text(json.dumps({"state": "done", "done": 5, "total": 5, "rows": ["base"]}))
    study.start(["base", "A-h1"], 2, fresh=False, folder=folder)
    written = json.loads((folder / "study.json").read_text())
    assert written["state"] == "running" and written["pid"] == 424242
    assert written["total"] == 4 and written["done"] == 0 and written["current"] == []


def test_the_rerun_estimate_uses_this_machines_runs_first(tmp_path):
    for row, seed, seconds in (("base", 0, 40.0), ("base", 1, 60.0), ("A-h1", 0, 30.0)):
        d = tmp_path / f"{row}-s{seed}"
        d.mkdir()
        (d / "result.json").write_text(json.dumps({"row": row, "seed": seed, "train_seconds": seconds}))
    (tmp_path / "C-N2-s0").mkdir()  # a run without a result counts for nothing
    assert study.seconds_here(tmp_path) == {"base": 50.0, "A-h1": 30.0}


@pytest.mark.parametrize("lang", list(LANGS))
def test_page_shows_both_tables_the_factors_and_the_reading(lang):
    at = run_page("study.py", lang)
    assert_clean(at)
    df = tables(at)[0]
    assert len(df) == len(STUDY_ROWS)
    cat = catalogue(lang)
    assert cat["study.table.paper_ppl"] in df.columns and cat["study.table.ppl"] in df.columns
    assert list(df[cat["study.table.paper_ppl"]]) == [f"{paper_row(k).perplexity:.2f}" for k in STUDY_ROWS]
    text = " ".join(m.value for m in at.markdown)
    for key in ("one_head", "dropout", "learned_positions"):
        assert cat[f"study.claims.{key}"] in text
    for group in ("B", "C", "D", "E"):
        at.segmented_control(key="study_group").set_value(group).run()
        assert_clean(at)
        fig = figures(at)[0]
        assert cat[f"study.group.{group}"] in title(fig)
        paper_points = fig["data"][0]["y"]
        assert len(paper_points) == 1 + sum(paper_row(k).group == group for k in STUDY_ROWS)
    at.radio(key="study_metric").set_value("exact_match").run()
    assert_clean(at)


def test_a_damaged_table_says_so(monkeypatch, tmp_path):
    bad = tmp_path / "table3.json"
    bad.write_text("{ not json")
    monkeypatch.setattr(study, "SHIPPED", bad)
    at = run_page("study.py")
    assert_clean(at)
    assert catalogue("en")["study.no_table"] in [i.value for i in at.info]


def test_a_rerun_with_no_rows_is_refused_clearly():
    at = run_page("study.py")
    at.multiselect(key="study_rows").set_value([]).run()
    at.button(key="study_start").click().run()
    assert_clean(at)
    assert any(catalogue("en")["study.errors.no_rows"] in e for e in errors(at))


def test_start_launches_the_study_once_and_stop_stops_it(tmp_path, monkeypatch):
    launched = []
    real_popen = subprocess.Popen

    class FakePopen:
        def __init__(self, argv, **kw):
            launched.append(argv)
            assert kw.get("start_new_session") is True

    monkeypatch.setattr(study.subprocess, "Popen", FakePopen)
    folder = tmp_path / "study"
    argv = study.start(["A-h1", "Z-9", "base"], 2, fresh=True, folder=folder)
    assert launched == [argv]
    assert argv[argv.index("--rows") + 1] == "A-h1,base" and argv[argv.index("--seeds") + 1] == "2"
    assert "--fresh" in argv and argv[argv.index("--out") + 1] == str(folder)
    for rows, seeds, code in (([], 1, "study.errors.no_rows"), (["base"], 0, "study.errors.seeds"),
                              (["base"], study.MAX_SEEDS + 1, "study.errors.seeds")):
        with pytest.raises(study.UserError) as e:
            study.start(rows, seeds, fresh=False, folder=folder)
        assert e.value.message.code == code
    # a study that is running (a live process whose command line names model.training.study) refuses a second one
    proc = real_popen([sys.executable, "-c", "import time; time.sleep(60)", "model.training.study"],
                            start_new_session=True)
    try:
        for _ in range(200):  # until the child has exec'd: before that its command line is pytest's
            if b"model.training.study" in Path(f"/proc/{proc.pid}/cmdline").read_bytes():
                break
            time.sleep(0.02)
        (folder / "study.json").write_text(json.dumps({"state": "running", "pid": proc.pid, "total": 4, "done": 1,
                                                       "current": ["base-s0"], "options": {"steps": 200}}))
        (folder / "base-s0").mkdir()
        (folder / "base-s0" / "status.json").write_text(json.dumps({"step": 50}))
        assert study.progress(folder)["current"] == [{"run": "base-s0", "step": 50, "total": 200}]
        with pytest.raises(study.UserError) as e:
            study.start(["base"], 1, fresh=False, folder=folder)
        assert e.value.message.code == "study.errors.running"
        assert len(launched) == 1  # nothing was started
        assert study.stop(folder) is True
        proc.wait(timeout=10)
        assert study.state(folder)["state"] == "interrupted"  # "running" in its file, but the process is gone
        assert study.stop(folder) is False
    finally:
        proc.kill()


def test_the_studys_runs_are_listed_read_only_on_the_training_page(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    monkeypatch.setenv("ATLAS_RUNS_DIR", str(root))
    for name, state in (("base-s0", "done"), ("A-h1-s0", "running")):
        d = root / "study-table3" / name
        d.mkdir(parents=True)
        (d / "status.json").write_text(json.dumps({"state": state, "step": 200 if state == "done" else 50,
                                                   "total_steps": 200, "task": "en-ko", "pid": 0}))
    summaries = study.run_summaries()
    assert [r["id"] for r in summaries] == ["base-s0", "A-h1-s0"]  # the study's order
    assert all(not r["mine"] for r in summaries)
    at = run_page("train.py")
    assert_clean(at)
    label = catalogue("en")["train.study_runs"].format(runs=2, done=1)
    assert label in [e.label for e in at.expander]
    ids = [list(df.iloc[:, 0]) for df in tables(at)]
    assert ["base-s0", "A-h1-s0"] in ids


@pytest.mark.parametrize("lang", list(LANGS))
def test_the_machine_is_described_in_the_pages_language(lang):
    """The study document records its machine in English ("x86_64, 2 cores, ..."): its cores are counted in the
    page's language, not left as "2 cores" on the Korean page."""
    at = run_page("study.py", lang)
    assert_clean(at)
    said = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    assert ("2 cores" in said) == (lang == "en")
    if lang == "ko":
        assert "코어 2개" in said
