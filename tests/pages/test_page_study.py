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
from tests.apptest_read import errors, figures, title
from tests.apptest_util import assert_clean, run_page


def fake_doc(values: dict, std: float = 0.0, seeds: int = 3) -> dict:
    """A study document with perplexity `values[row]` (rows left out are untrained)."""
    rows = []
    for key in STUDY_ROWS:
        v = values.get(key)
        stats = ({"mean": v, "std": std, "min": v - std, "max": v + std, "n": seeds} if v is not None else
                 {"mean": None, "std": None, "min": None, "max": None, "n": 0})
        rows.append({"row": key, "group": paper_row(key).group, "label": paper_row(key).label, "mini_changes": {},
                     "parameters": 1000 if v is not None else None, "seeds_done": seeds if v is not None else 0,
                     "seeds": seeds, "perplexity": stats, "exact_match": {**stats, "mean": 0.5 if v else None},
                     "bleu": {**stats, "mean": 50.0 if v else None}, "seconds": {"mean": 60.0 if v else None},
                     "paper": {}})
    return {"study": "table3", "rows": rows, "options": {"seeds": seeds, "steps": 200, "batch_size": 64,
                                                          "decode_limit": 400},
            "command": "python -m model.training.study table3 --out x", "seconds": 600.0, "machine": "test"}


def outcomes(doc) -> dict:
    return {v.claim.key: v.outcome for v in table3.verdicts(doc)}


def test_the_reading_follows_the_numbers_and_the_spread():
    doc = fake_doc({"base": 2.0, "A-h1": 3.0, "A-h16": 2.0, "A-h32": 2.05, "B-dk16": 1.8, "E-learned": 2.05},
                   std=0.1)
    got = outcomes(doc)
    assert got["one_head"] == "reproduced"          # 3.0 vs 2.0: more than 5 % worse
    assert got["many_heads"] == "unclear"           # 2.05 vs 2.0: within 5 %
    assert got["small_keys"] == "not_reproduced"    # smaller keys did better here
    assert got["learned_positions"] == "reproduced"  # within 5 %
    assert got["deeper"] == "missing"
    far = outcomes(fake_doc({"base": 2.0, "E-learned": 2.5}))
    assert far["learned_positions"] == "not_reproduced"
    # the median, not the mean: one seed stuck on the plateau does not decide a row
    skewed = fake_doc({"base": 2.0, "A-h1": 2.0})
    skewed["rows"][0]["perplexity"].update(median=2.0, mean=4.0)
    assert outcomes(skewed)["one_head"] == "unclear"
    v = next(v for v in table3.verdicts(doc) if v.claim.key == "one_head")
    assert v.paper == (paper_row("A-h1").perplexity, paper_row("base").perplexity) and v.ours == (3.0, 2.0)


def test_the_shipped_table_is_complete_and_every_row_was_trained():
    doc = study.load_table(study.SHIPPED)
    assert doc is not None, "assets/study/table3.json is missing or damaged"
    assert [r["row"] for r in doc["rows"]] == list(STUDY_ROWS)
    for r in doc["rows"]:
        assert r["seeds_done"] >= 1, r["row"]
        assert r["perplexity"]["mean"] > 1.0
    assert "model.training.study table3" in doc["command"] and doc["seconds"] > 0


@pytest.mark.parametrize("lang", list(LANGS))
def test_page_shows_both_tables_the_factors_and_the_reading(lang):
    at = run_page("study.py", lang)
    assert_clean(at)
    df = at.dataframe[0].value
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
    ids = [list(df.value.iloc[:, 0]) for df in at.dataframe]
    assert ["base-s0", "A-h1-s0"] in ids
