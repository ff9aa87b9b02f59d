"""Batches by tokens (`--batch-tokens`, model.data.train_data.TokenBatches): every batch within its budget,
the whole training split drawn, less padding than random batches of sentences, a pure function of
(seed, step, rank) so a resumed run trains on the same data; the cache of a task's encoded splits; the
en-ko recipe the training page starts (app.jobs.options.task_recipe) as trainer options."""
from __future__ import annotations

import json
from collections import Counter

import pytest
import torch

from app.jobs.options import (LIMITS, RECIPES, TrainOptions, UserError, task_recipe, train_arguments,
                              validate_options)
from model.training import options
from model.training import train as trainer
from model.training.tasks import Seq2Seq
from model.data import train_data
from model.data.train_data import EncodedExamples, TokenBatches, example_lengths, load_task, make_batch


@pytest.fixture(scope="module")
def enko():
    return load_task("en-ko", 0, None, 64)


def padded_tokens(examples, idx, decoder_only=False) -> tuple[int, int]:
    """(real, all) tokens of make_batch's padded source + target for these examples."""
    ls, lt = example_lengths([examples[i] for i in idx], decoder_only)
    return sum(ls) + sum(lt), len(idx) * (max(ls) + max(lt))


@pytest.mark.parametrize("budget", [256, 1024, 2048, 4096])
def test_token_batches_stay_within_their_budget(enko, budget):
    batches = TokenBatches(enko.train, budget)
    pad = enko.tokenizer.pad_id
    for step in range(300):
        idx = batches.indices(0, step)
        assert idx and len(set(idx)) == len(idx)  # no sentence twice in a batch
        real, total = padded_tokens(enko.train, idx)
        assert total <= budget
        if step < 30:  # what the trainer really builds: source + target tensors within the budget
            src, _, tout = make_batch(enko.train, idx, pad, enko.tokenizer.bos_id, enko.tokenizer.eos_id, False, "cpu")
            assert src.numel() + tout.numel() == total
            assert int((src != pad).sum() + (tout != pad).sum()) == real


def test_buckets_hold_every_training_example_once_and_sampling_reaches_them_all(enko):
    batches = TokenBatches(enko.train, 2048)
    flat = [i for b in batches.buckets for i in b]
    assert sorted(flat) == list(range(len(enko.train)))
    # A small corpus: a few hundred steps draw every sentence, each about equally often (as in an epoch).
    small = [enko.train[i] for i in range(600)]
    tb = TokenBatches(small, 256)
    seen = Counter(i for step in range(1500) for i in tb.indices(3, step))
    assert set(seen) == set(range(len(small)))
    counts = sorted(seen.values())
    assert counts[len(counts) // 2] > 0 and counts[-1] < 4 * counts[len(counts) // 2]


def test_token_batches_pad_less_than_random_batches_of_sentences(enko):
    """The en-ko corpus: random batches of 64 sentences are about half padding, batches by tokens a few %."""
    n = len(enko.train)
    g = torch.Generator().manual_seed(0)
    rand = [padded_tokens(enko.train, torch.randint(n, (64,), generator=g).tolist()) for _ in range(200)]
    tb = TokenBatches(enko.train, 2048)
    bucketed = [padded_tokens(enko.train, tb.indices(0, step)) for step in range(200)]
    share = lambda rows: 1 - sum(r for r, _ in rows) / sum(t for _, t in rows)
    assert share(bucketed) < 0.1 < 0.3 < share(rand)


def test_a_batch_is_a_pure_function_of_seed_step_and_rank(enko):
    a, b = TokenBatches(enko.train, 2048), TokenBatches(list(enko.train), 2048)  # built again, from a plain list
    for step in (0, 1, 17, 999):
        assert a.indices(5, step) == b.indices(5, step) == a.indices(5, step)
    assert a.indices(5, 1) != a.indices(5, 2)
    assert a.indices(5, 1) != a.indices(6, 1)
    assert a.indices(5, 1, rank=0) != a.indices(5, 1, rank=1)


def test_decoder_only_batches_count_the_sequence_only():
    examples = [([1, 2], list(range(n))) for n in range(3, 40)] * 20
    tb = TokenBatches(examples, 200, decoder_only=True)
    for step in range(100):
        idx = tb.indices(0, step)
        _, x, _ = make_batch(examples, idx, 0, 1, 2, True, "cpu")
        assert x.numel() <= 200


def args_for(*extra):
    return options.build_parser().parse_args(["--task", "copy", "--out", "/nonexistent", *extra])


def test_the_trainer_batches_by_tokens_and_a_new_process_sees_the_same_batches():
    """_Seq2Seq.batch with --batch-tokens: built twice (a run and its resume), the same tensors step by
    step; without it, --batch-size sentences as before."""
    data = load_task("copy", 0, None, 64)
    first = Seq2Seq(args_for("--batch-tokens", "512"), data)
    again = Seq2Seq(args_for("--batch-tokens", "512"), load_task("copy", 0, None, 64))
    for step in range(40, 60):
        x, y = first.batch(step, 0, 0, 64, "cpu"), again.batch(step, 0, 0, 64, "cpu")
        assert all(torch.equal(p, q) for p, q in zip(x, y))
        assert x[0].numel() + x[2].numel() <= 512
    plain = Seq2Seq(args_for(), data)
    assert plain.batch(3, 0, 0, 64, "cpu")[0].size(0) == 64


def test_resume_with_batches_by_tokens_ends_with_the_same_weights(tmp_path):
    """20 steps in one go, and 10 + a resume for 10 more: identical weights (the batches, the dropout
    masks and the optimiser all continue)."""
    common = ["--task", "copy", "--preset", "tiny", "--batch-tokens", "384", "--warmup", "10", "--threads", "1",
              "--device", "cpu", "--eval-every", "1000", "--log-every", "5", "--ckpt-every", "10", "--dropout", "0.1"]
    assert trainer.main([*common, "--steps", "20", "--out", str(tmp_path / "straight")]) == 0
    assert trainer.main([*common, "--steps", "10", "--out", str(tmp_path / "split")]) == 0
    assert trainer.main(["--resume", str(tmp_path / "split"), "--steps", "20"]) == 0
    a = torch.load(tmp_path / "straight" / "checkpoint.pt", weights_only=True)
    b = torch.load(tmp_path / "split" / "checkpoint.pt", weights_only=True)
    assert a["step"] == b["step"] == 20
    for name, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][name]), name


def test_log_first_writes_the_first_step_at_once(tmp_path):
    out = tmp_path / "run"
    assert trainer.main(["--task", "copy", "--preset", "tiny", "--steps", "12", "--threads", "1", "--device", "cpu",
                         "--eval-every", "1000", "--log-every", "5", "--log-first", "--out", str(out)]) == 0
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()
             if json.loads(line)["kind"] == "train"]
    assert steps == [1, 5, 10, 12]


def test_batch_tokens_options_are_checked():
    assert options.option_problem(args_for("--batch-tokens", "-1")) == "--batch-tokens must be 0 or more"
    assert options.option_problem(args_for("--batch-tokens", "0")) is None
    family = options.build_parser().parse_args(["--task", "mlm", "--out", "x", "--batch-tokens", "512"])
    assert "--batch-tokens" in options.option_problem(family)


# ----------------------------------------------------------------------------- the cache of encoded splits

def test_cached_splits_equal_the_built_ones_and_damage_means_rebuild(tmp_path, monkeypatch):
    monkeypatch.setenv("ATLAS_CACHE_DIR", str(tmp_path))
    built = load_task("reverse", 1, None, 32)
    path = train_data.task_cache_path("reverse", 1, 32)
    assert path.is_file()
    cached = load_task("reverse", 1, None, 32)
    assert isinstance(cached.train, EncodedExamples)
    assert list(cached.train) == built.train and cached.valid == built.valid
    assert cached.valid_text == built.valid_text and cached.test_text == built.test_text
    assert cached.train[-1] == built.train[-1] and cached.train[2:4] == built.train[2:4]
    assert train_data.task_cache_path("reverse", 2, 32) != path  # another seed, another file
    path.write_bytes(b"not a checkpoint")
    again = load_task("reverse", 1, None, 32)
    assert list(again.train) == built.train


# ----------------------------------------------------------------------------- the page's recipe

def test_the_en_ko_recipe_batches_by_tokens_and_its_options_pass_the_trainers_checks():
    recipe = task_recipe("en-ko", "small")
    assert recipe["batch_tokens"] > 0
    lo, hi = LIMITS["batch_tokens"]
    assert lo <= recipe["batch_tokens"] <= hi
    o = TrainOptions(task="en-ko", size="small", **recipe)
    validate_options(o)
    argv = train_arguments(o)
    assert argv[argv.index("--batch-tokens") + 1] == str(recipe["batch_tokens"])
    args = options.build_parser().parse_args([*argv, "--out", "x"])
    assert options.option_problem(args) is None and args.batch_tokens == recipe["batch_tokens"] and args.log_first
    # Other tasks and sizes keep their sentence batches.
    assert task_recipe("copy", "small") == {"batch_tokens": 0, "cooldown": 0.0, "dropout": None, **RECIPES["small"]}
    assert "--batch-tokens" not in train_arguments(TrainOptions(task="copy", size="tiny"))
    with pytest.raises(UserError):
        validate_options(TrainOptions(task="en-ko", size="small", **{**recipe, "batch_tokens": 10}))


def test_the_en_ko_recipe_cools_down_without_dropout():
    """The measured en-ko recipe (docs/benchmarks.md): the last half of its steps cools down, and its model has no
    dropout; other preset sizes keep their preset's dropout, a custom size its own."""
    from app.jobs.options import model_config
    recipe = task_recipe("en-ko", "small")
    o = TrainOptions(task="en-ko", size="small", **recipe)
    assert recipe["cooldown"] == 0.5 and model_config(o, 100).dropout == 0.0
    assert "--cooldown" in train_arguments(o)
    assert model_config(TrainOptions(task="en-ko", size="small"), 100).dropout == 0.1  # the preset's
    assert model_config(TrainOptions(task="copy", size="tiny", dropout=0.2), 100).dropout == 0.2
    custom = TrainOptions(task="copy", size="custom", dropout=0.3, custom={"dropout": 0.05})
    assert model_config(custom, 100).dropout == 0.05  # the custom sizes' own
    with pytest.raises(UserError):
        validate_options(TrainOptions(task="copy", size="tiny", dropout=0.9))


def test_a_cooldown_reaches_the_trainer_and_only_where_it_means_something():
    """The page's cool-down share becomes --cooldown (the trainer lowers the rate over that share of the steps);
    0 adds nothing (the paper's schedule); out of range or on a family member it is refused."""
    o = TrainOptions(task="en-ko", size="small", **{**task_recipe("en-ko", "small"), "cooldown": 0.3})
    validate_options(o)
    argv = train_arguments(o)
    args = options.build_parser().parse_args([*argv, "--out", "x"])
    assert args.cooldown == 0.3 and options.option_problem(args) is None
    assert "--cooldown" not in train_arguments(TrainOptions(task="copy", size="tiny"))
    for bad in (-0.1, 0.95, float("nan")):
        with pytest.raises(UserError):
            validate_options(TrainOptions(task="copy", size="tiny", cooldown=bad))
    with pytest.raises(UserError):
        validate_options(TrainOptions(task="vit", size="tiny", cooldown=0.3))


def test_the_trainer_runs_its_cooldown(tmp_path):
    """A real run with --cooldown 0.5: the rate it logs falls to a small share of the peak by the last step
    (the paper's schedule alone would still be at ~90% of it)."""
    out = tmp_path / "run"
    code = trainer.main(["--task", "copy", "--preset", "tiny", "--steps", "40", "--warmup", "10", "--batch-size", "8",
                         "--cooldown", "0.5", "--log-every", "1", "--eval-every", "40", "--ckpt-every", "40",
                         "--threads", "1", "--out", str(out)])
    assert code == 0
    lrs = {r["step"]: r["lr"] for r in map(json.loads, (out / "metrics.jsonl").read_text().splitlines())
           if r.get("kind", "train") == "train" and "lr" in r}
    peak = max(lrs.values())
    assert lrs[40] < 0.1 * peak and lrs[20] > 0.5 * peak
