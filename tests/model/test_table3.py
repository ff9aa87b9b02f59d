"""Table 3: per-head sizes d_k / d_v, learned positions, the paper's rows and the study runner."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from model.nn.attention import MultiHeadAttention
from model.nn.config import PRESETS, TransformerConfig
from model.lessons.table3 import (
    MINI_BASE, MINI_CHANGES, PAPER_TABLE3, STUDY_ROWS, mini_config, paper_config, paper_parameter_counts, paper_row,
)
from model.nn.transformer import Transformer, count_parameters

ROOT = Path(__file__).resolve().parents[2]


def mha_formula(d_model, h, d_k, d_v):
    """W^Q, W^K (d_model x h d_k), W^V (d_model x h d_v), W^O (h d_v x d_model), with biases."""
    return 2 * (d_model * h * d_k + h * d_k) + d_model * h * d_v + h * d_v + h * d_v * d_model + d_model


@pytest.mark.parametrize("h,d_k,d_v", [(8, 16, 64), (4, 32, 8), (1, 512, 512), (3, 5, 7)])
def test_heads_with_their_own_key_and_value_sizes(h, d_k, d_v):
    torch.manual_seed(0)
    D = 48
    mha = MultiHeadAttention(D, h, d_k=d_k, d_v=d_v)
    x = torch.randn(2, 5, D)
    out, w, d = mha(x, need_weights=True, need_details=True)
    assert out.shape == (2, 5, D)
    assert w.shape == (2, h, 5, 5)
    assert d.q.shape == (2, h, 5, d_k) and d.k.shape == (2, h, 5, d_k) and d.v.shape == (2, h, 5, d_v)
    assert sum(p.numel() for p in mha.parameters()) == mha_formula(D, h, d_k, d_v)
    fused, _, _ = mha(x)  # torch's fused kernel: the same numbers
    assert torch.allclose(fused, out, atol=1e-5)
    # the scale is 1/sqrt(d_k), not 1/sqrt(d_model / h)
    assert torch.allclose(d.scores, d.q @ d.k.transpose(-2, -1) / d_k ** 0.5, atol=1e-5)
    cross = MultiHeadAttention(D, h, self_attention=False, d_k=d_k, d_v=d_v)
    mem = torch.randn(2, 7, D)
    out, w, _ = cross(x, mem, need_weights=True)
    assert out.shape == (2, 5, D) and w.shape == (2, h, 5, 7)
    assert sum(p.numel() for p in cross.parameters()) == mha_formula(D, h, d_k, d_v)


def test_config_defaults_are_the_papers_and_odd_sizes_are_checked():
    cfg = TransformerConfig(d_model=512, n_heads=8)
    assert (cfg.head_k, cfg.head_v, cfg.d_head) == (64, 64, 64)
    assert "d_k" not in cfg.differences_from_paper()
    odd = cfg.replace(d_k=16)
    assert (odd.head_k, odd.head_v) == (16, 64)
    assert odd.differences_from_paper() == {"d_k": 16}
    assert TransformerConfig(d_model=10, n_heads=3, d_k=4, d_v=4).head_v == 4  # no divisibility needed
    with pytest.raises(ValueError, match="divisible"):
        TransformerConfig(d_model=10, n_heads=3, d_k=4)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="d_k"):
            TransformerConfig(d_k=bad)
    assert TransformerConfig.from_dict(odd.to_dict()) == odd
    # a config written before d_k / d_v existed still loads, as the paper's model
    old = {k: v for k, v in cfg.to_dict().items() if k not in ("d_k", "d_v")}
    assert TransformerConfig.from_dict(old) == cfg


def test_whole_model_with_small_keys_runs_and_counts():
    cfg = PRESETS["tiny"].replace(d_k=4, d_v=24, n_heads=2)
    model = Transformer(cfg)
    src, tgt = torch.randint(3, 64, (2, 6)), torch.randint(3, 64, (2, 5))
    out = model(src, tgt, return_details=True)
    assert out.logits.shape == (2, 5, 64)
    assert out.attention.details["cross"][0].k.shape[-1] == 4
    assert out.attention.details["decoder_self"][0].v.shape[-1] == 24
    assert model.num_parameters() == count_parameters(cfg)
    base = count_parameters(PRESETS["tiny"])
    per_layer = mha_formula(64, 2, 4, 24) - mha_formula(64, 4, 16, 16)
    assert count_parameters(cfg) - base == per_layer * (2 + 2 * 2)  # 2 encoder self, 2 x (self + cross)


def test_learned_positions_are_a_table_of_max_len_rows():
    cfg = PRESETS["tiny"].replace(positional="learned")
    model = Transformer(cfg)
    assert model.src_embed.position.weight.shape == (cfg.max_len, cfg.d_model)
    assert count_parameters(cfg) - count_parameters(PRESETS["tiny"]) == 2 * cfg.max_len * cfg.d_model


def test_every_paper_row_is_counted_beside_the_paper():
    rows = {r["key"]: r for r in paper_parameter_counts()}
    assert list(rows) == [r.key for r in PAPER_TABLE3]
    assert rows["base"]["counted"] == count_parameters(PRESETS["paper_base"])
    assert rows["big"]["counted"] == count_parameters(PRESETS["paper_big"])
    # rows A keep the cost: every head count gives the base model's size exactly
    for key in ("A-h1", "A-h4", "A-h16", "A-h32"):
        assert rows[key]["counted"] == rows["base"]["counted"]
    # rows B: smaller keys, fewer parameters; 2 x (512 x 8 x (64 - d_k) + 8 x (64 - d_k)) per attention
    saved = lambda d_k: 2 * (512 * 8 * (64 - d_k) + 8 * (64 - d_k)) * (6 + 2 * 6)
    assert rows["base"]["counted"] - rows["B-dk16"]["counted"] == saved(16)
    assert rows["base"]["counted"] - rows["B-dk32"]["counted"] == saved(32)
    # the differences this project measures against the paper's printed counts (see the overview page)
    assert -0.07 < rows["C-N2"]["difference"] < -0.06
    assert 0.0 < rows["big"]["difference"] < 0.01
    for r in rows.values():
        if r["paper_m"] is not None:
            assert abs(r["difference"]) < 0.08


def test_miniature_rows_change_what_the_paper_row_changes():
    assert list(STUDY_ROWS) == [r.key for r in PAPER_TABLE3 if r.group != "big"]
    for key in STUDY_ROWS:
        paper = paper_row(key)
        mini = mini_config(key)
        changed = {k for k, v in mini.to_dict().items() if v != MINI_BASE.to_dict()[k]}
        assert changed == set(paper.changes) or key == "base" and not changed, key
        Transformer(mini)  # builds
    # rows A keep the miniature's cost too
    assert len({count_parameters(mini_config(k)) for k in ("base", "A-h1", "A-h4", "A-h16", "A-h32")}) == 1
    assert paper_config(paper_row("C-d256")).d_ff == 2048  # the paper's width rows keep d_ff
    assert MINI_CHANGES["C-d256"].get("d_ff") is None


def _study(out: Path, *extra: str) -> subprocess.Popen:
    args = ["--rows", "base,B-dk16", "--seeds", "1", "--steps", "6", "--warmup", "3", "--decode-limit", "8"]
    for i, flag in enumerate(args[::2]):  # a flag given in `extra` replaces the default
        if flag in extra:
            args[2 * i: 2 * i + 2] = ["", ""]
    return subprocess.Popen([sys.executable, "-m", "model.training.study", "table3", "--out", str(out),
                             *[a for a in args if a], *extra], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def test_study_runs_resumes_after_a_kill_and_fills_the_table(tmp_path):
    out = tmp_path / "study"
    first = _study(out)
    done = out / "base-s0" / "result.json"
    deadline = time.time() + 300
    while not (out / "table3.json").exists() and first.poll() is None and time.time() < deadline:
        time.sleep(0.2)  # the table is rewritten right after each run's result
    assert done.exists(), first.communicate()[1][-2000:]
    os.killpg(first.pid, signal.SIGKILL)  # the study and its trainer, mid-run
    first.wait()
    stamp = done.stat().st_mtime_ns
    table = {r["row"]: r["seeds_done"] for r in json.loads((out / "table3.json").read_text())["rows"]}
    assert list(table) == list(STUDY_ROWS)  # every row is listed, the untrained ones empty
    assert (table["base"], table["B-dk16"], table["A-h1"]) == (1, 0, 0)

    ship = tmp_path / "assets" / "table3.json"
    second = _study(out, "--ship", str(ship))
    _, err = second.communicate(timeout=300)
    assert second.returncode == 0, err[-2000:]
    assert done.stat().st_mtime_ns == stamp  # the finished run was skipped, not redone
    doc = json.loads(ship.read_text())
    assert doc == json.loads((out / "table3.json").read_text())
    rows = {r["row"]: r for r in doc["rows"]}
    assert rows["base"]["seeds_done"] == rows["B-dk16"]["seeds_done"] == 1
    assert rows["B-dk16"]["parameters"] == count_parameters(mini_config("B-dk16", 2000))
    assert rows["B-dk16"]["parameters"] < rows["base"]["parameters"]
    for r in (rows["base"], rows["B-dk16"]):
        assert r["perplexity"]["mean"] > 1.0 and 0.0 <= r["exact_match"]["mean"] <= 1.0
        assert r["paper"]["perplexity"] == paper_row(r["row"]).perplexity
    assert "--rows base,B-dk16" in doc["command"]
    state = json.loads((out / "study.json").read_text())
    assert state["state"] == "done" and state["done"] == 2



def test_results_of_other_options_are_stale_and_fresh_rows_start_over(tmp_path, monkeypatch):
    """Without training: the trainer and the scoring are replaced by stand-ins that record what ran."""
    import model.training.study as study
    trained = []

    def fake_trainer(argv, env, stop):
        run_dir = Path(argv[argv.index("--out") + 1])
        run_dir.mkdir(parents=True, exist_ok=True)
        steps = int(argv[argv.index("--steps") + 1])
        (run_dir / "args.json").write_text(json.dumps({"steps": steps}))
        (run_dir / "status.json").write_text(json.dumps({"state": "done"}))
        trained.append(run_dir.name)
        return 0, ""

    monkeypatch.setattr(study, "_run_trainer", fake_trainer)
    monkeypatch.setattr(study, "score_run", lambda d, split, limit: {
        "parameters": 1, "dev_loss": 0.1, "dev_perplexity": 1.1, "dev_token_acc": 0.9, "exact_match": 0.5,
        "bleu": 50.0, "dev_sentences": 1, "decoded_sentences": 1})
    opts = {**study.DEFAULTS, "seeds": 2, "steps": 5}
    out = tmp_path / "s"
    assert study.run_study(out, ["base", "C-N2"], opts) == 0
    assert sorted(trained) == ["C-N2-s0", "C-N2-s1", "base-s0", "base-s1"]
    trained.clear()
    assert study.run_study(out, ["base", "C-N2"], opts) == 0 and trained == []  # all finished: skipped
    assert study.run_study(out, ["base"], {**opts, "steps": 7}) == 0  # other options: stale
    assert sorted(trained) == ["base-s0", "base-s1"]
    trained.clear()
    assert study.run_study(out, ["base"], {**opts, "steps": 7}, fresh=True) == 0
    assert sorted(trained) == ["base-s0", "base-s1"]
    table = {r["row"]: r for r in json.loads((out / "table3.json").read_text())["rows"]}
    assert table["base"]["seeds_done"] == 2 and table["C-N2"]["seeds_done"] == 0  # C-N2 was made with 5 steps
    assert json.loads((out / "study.json").read_text())["state"] == "done"


def test_every_run_of_a_study_trains_and_is_scored_on_one_split(tmp_path, monkeypatch):
    """Seeds change initialisation and batch order only: every trainer gets the study's --split-seed and the
    scoring reads that split, whatever the run's seed."""
    import model.training.study as study
    argvs, scored = [], []

    def fake_trainer(argv, env, stop):
        argvs.append(argv)
        run_dir = Path(argv[argv.index("--out") + 1])
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "status.json").write_text(json.dumps({"state": "done"}))
        return 0, ""

    def fake_score(run_dir, split, limit):
        scored.append(split)
        return {"parameters": 1, "dev_loss": 0.1, "dev_perplexity": 1.1, "dev_token_acc": 0.9, "exact_match": 0.5,
                "bleu": 50.0, "dev_sentences": 1, "decoded_sentences": 1}

    monkeypatch.setattr(study, "_run_trainer", fake_trainer)
    monkeypatch.setattr(study, "score_run", fake_score)
    assert study.run_study(tmp_path / "s", ["base"], {**study.DEFAULTS, "seeds": 3, "split_seed": 7}) == 0
    assert sorted(a[a.index("--seed") + 1] for a in argvs) == ["0", "1", "2"]
    assert [a[a.index("--split-seed") + 1] for a in argvs] == ["7"] * 3 and scored == [7] * 3


def test_the_trainer_splits_by_split_seed_and_else_by_seed(monkeypatch):
    import model.training.tasks as tasks
    from model.training.options import parse_args, split_seed
    seen = []
    monkeypatch.setattr(tasks, "load_task", lambda task, seed, tsv, max_len: seen.append(seed) or object())
    monkeypatch.setattr(tasks, "Seq2Seq", lambda args, data: data)
    for argv, expected in ((["--seed", "3", "--split-seed", "0"], 0), (["--seed", "3"], 3)):
        args = parse_args(["--task", "en-ko", "--out", "x", *argv])
        assert split_seed(args) == expected
        tasks.task_for(args)
    assert seen == [0, 3]
    with pytest.raises(SystemExit):
        parse_args(["--task", "en-ko", "--out", "x", "--split-seed", "-1"])


def test_a_second_study_on_the_same_folder_refuses(tmp_path):
    from model.training.study import study_lock
    out = tmp_path / "s"
    with study_lock(out):
        proc = _study(out)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 3 and "already running" in err


def test_unknown_rows_are_refused():
    proc = subprocess.run([sys.executable, "-m", "model.training.study", "table3", "--out", "/nonexistent/x", "--rows",
                           "base,Z-9"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2 and "Z-9" in proc.stderr


def test_the_parameter_formula_equals_counting_the_tensors():
    from model.nn.transformer import parameter_formula
    configs = [paper_config(r) for r in PAPER_TABLE3] + [mini_config(k) for k in STUDY_ROWS] + list(PRESETS.values())
    tiny = PRESETS["tiny"]
    for change in (dict(architecture="decoder-only"), dict(architecture="encoder-only"), dict(tie_embeddings=False),
                   dict(tie_embeddings=False, tie_output=True), dict(norm_first=True), dict(d_k=3, d_v=5),
                   dict(positional="learned", architecture="decoder-only"),
                   dict(positional="learned", segment_vocab=2, embed_norm=True),
                   dict(architecture="encoder-only", segment_vocab=2, embed_norm=True, mlm_transform=True,
                        output_bias=True)):
        configs.append(tiny.replace(**change))
    for cfg in configs:
        assert parameter_formula(cfg) == count_parameters(cfg), cfg
