"""The limits page's numbers: attention cost measured (memory grows with n, block-wise stays below full), a size
past memory refused before anything is allocated, decoding with and without the KV cache giving the same tokens,
the cache's bytes per token from the configuration."""
from dataclasses import replace
from pathlib import Path

import pytest

from model.lessons import decoding, limits

ROOT = Path(__file__).resolve().parents[2]


def test_measured_memory_grows_with_n_and_blockwise_stays_below_full():
    s = limits.Setting(n=128, d=64, heads=2, block=16, window=8, k=16)
    small = {r["impl"]: r for r in limits.sweep(s, (128,))}
    big = {r["impl"]: r for r in limits.sweep(s, (512,))}
    assert big["full"]["peak_bytes"] > 10 * small["full"]["peak_bytes"]  # 16x the scores
    assert big["blockwise"]["peak_bytes"] < big["full"]["peak_bytes"] / 3
    for impl in limits.IMPLS:  # the estimate is the measurement's size, within a factor of two
        assert 0.5 < big[impl]["estimate_bytes"] / big[impl]["peak_bytes"] < 2, impl


def test_a_size_past_memory_is_refused_from_the_estimate():
    s = limits.Setting(n=4096, d=64, heads=2)
    assert limits.refusal("full", s, budget=10**6) == {"kind": "memory", "needed": limits.estimate_bytes("full", s),
                                                       "allowed": 10**6}
    assert limits.refusal("full", s, budget=10**12, max_flops=10**6)["kind"] == "time"
    assert limits.refusal("blockwise", replace(s, block=1), budget=10**9) is None
    out = limits.measure("full", limits.Setting(n=10**6, d=64, heads=2))  # 8 TB of scores: never allocated
    assert out["refused"]["needed"] > 10**12


def test_a_loop_of_too_many_blocks_is_refused_though_its_arithmetic_is_small():
    """A window of 2 over a million tokens is little arithmetic and little memory, but half a million Python steps
    (hours under the memory profiler): refused by its step count before it starts."""
    s = limits.Setting(n=2**20, d=512, heads=8, window=2, block=16)
    assert limits.estimate_flops("window", s) < 2 * 10**10
    assert limits.refusal("window", s, budget=10**12, max_flops=2 * 10**10, max_steps=512) == {
        "kind": "steps", "needed": 2**19, "allowed": 512}
    assert limits.refusal("blockwise", replace(s, n=8192), budget=10**12, max_steps=512) is None  # 8192 / 16
    assert limits.refusal("blockwise", replace(s, n=8193), budget=10**12, max_steps=512)["needed"] == 513
    assert limits.steps("full", s) == limits.steps("linformer", s) == 1


def test_a_page_may_cap_the_memory_of_one_call_below_what_is_free():
    s = limits.Setting(n=8192, d=64, heads=4)  # full attention: about 2 GiB of scores
    refused = limits.refusal("full", s, max_bytes=2**30)
    assert refused["kind"] == "memory" and refused["needed"] == limits.estimate_bytes("full", s) > 2**31
    assert refused["allowed"] <= 2**30
    assert limits.refusal("full", limits.Setting(n=1024, d=64, heads=4), max_bytes=2**30) is None


def test_every_call_the_page_allows_is_bounded_in_steps_and_arithmetic():
    """Whatever the limits page's controls are set to, a call it runs stays within its budgets: the class of
    defect where one combination of knobs (not each knob alone) makes a page run for an hour."""
    import itertools
    from pages.views import limits as page
    extremes = [page.N_CHOICES, page.D_CHOICES, page.HEAD_CHOICES] + [
        (lo, hi) for lo, hi, _ in (page.BLOCKS, page.WINDOWS, page.GLOBALS, page.KS)]
    for n, d, heads, block, window, global_tokens, k in itertools.product(*extremes):
        s = limits.Setting(n=n, d=d, heads=heads, block=block, window=window, global_tokens=global_tokens, k=k)
        for size in page.sweep_sizes(n):
            one = replace(s, n=size)
            for impl in limits.IMPLS:
                if limits.refusal(impl, one, budget=10**15, max_flops=page.MAX_FLOPS, max_steps=page.MAX_STEPS):
                    continue
                # a bound, not a timing: a profiled loop step costs at most ~20 ms, and one core does >= 1 GFLOP/s
                bound = limits.steps(impl, one) * 0.02 + limits.estimate_flops(impl, one) / 1e9
                assert bound <= 30, (impl, one, bound)


def test_blockwise_output_is_full_attention_and_linformer_k_n_is_exact():
    s = limits.Setting(n=64, d=32, heads=2, block=8, k=64)
    diff = limits.difference_from_full(s)
    assert diff["blockwise"]["max"] < 1e-6 and diff["linformer"]["max"] < 1e-6
    errors = limits.linformer_error(s, (4, 16, 64, 128))
    assert [e["k"] for e in errors] == [4, 16, 64] and errors[-1]["relative"] < 1e-6


def test_each_answers_difference_reads_only_its_own_knobs():
    """difference_of(impl, s) is difference_from_full's entry for impl, and equals it with the knobs impl does not
    read at their defaults (limits.relevant): the page keys each answer's difference by its own knobs."""
    s = limits.Setting(n=96, d=32, heads=2, block=24, window=5, global_tokens=2, k=16)
    every = limits.difference_from_full(s)
    for impl in limits.IMPLS[1:]:
        assert limits.difference_of(impl, s) == every[impl]
        assert limits.difference_of(impl, limits.relevant(impl, s)) == pytest.approx(every[impl], rel=1e-6)


def test_linformer_error_is_each_k_against_full_attention_and_needs_no_other_knob():
    """The sweep gives what difference_from_full gives for each k, and the other answers' knobs (block, window,
    global tokens, the slider's own k) change nothing in it: the page keys it by n, d and the heads alone."""
    s = limits.Setting(n=64, d=32, heads=2, block=8, window=4, global_tokens=2, k=16)
    ks = (4, 16, 64)
    errors = limits.linformer_error(s, ks)
    assert [e["relative"] for e in errors] == pytest.approx(
        [limits.difference_from_full(replace(s, k=kk))["linformer"]["relative"] for kk in ks], rel=1e-6)
    assert limits.linformer_error(limits.Setting(n=64, d=32, heads=2), ks) == errors


def test_window_demo_share():
    keep, share = limits.window_demo(10, 2, 1)
    assert keep.shape == (10, 10) and share == pytest.approx(keep.mean())


def test_kv_cache_gives_the_same_tokens_on_the_shipped_model():
    from model.training.checkpoint import load_model_dir
    loaded = load_model_dir(ROOT / "assets" / "models" / "en-ko")
    out = decoding.decoding_demo(loaded, "I go to school.", 12)
    assert out["same_tokens"] and len(out["cache"]) == len(out["no_cache"]) == 12
    assert out["text"] == "나는 학교에 간다."


def test_the_measuring_process_decodes_the_folder_it_is_given_and_keeps_one_model():
    """decoding_demo_in (what the limits page's measuring process runs): the model loaded from its folder, the
    same tokens as on a model loaded here, and a new stamp (weights written again) loads it again."""
    folder = str(ROOT / "assets" / "models" / "en-ko")
    out = decoding.decoding_demo_in(folder, 1.0, "I go to school.", 8)
    assert out["text"] == "나는 학교에 간다." and out["steps"] == 8
    first = decoding._LOADED[(folder, 1.0)]
    decoding.decoding_demo_in(folder, 1.0, "I go home.", 4)
    assert decoding._LOADED[(folder, 1.0)] is first
    decoding.decoding_demo_in(folder, 2.0, "I go home.", 4)
    assert list(decoding._LOADED) == [(folder, 2.0)]


def test_cache_bytes_per_token_from_the_configuration():
    rows = decoding.cache_rows(context=1000)
    assert [r["kv_heads"] for r in rows] == [8, 2, 1]
    assert rows[0]["bytes_per_token"] == 6 * 8 * (64 + 64) * 2  # layers x heads x (d_k + d_v) x 2 bytes
    assert rows[1]["bytes_per_token"] * 4 == rows[0]["bytes_per_token"]
    assert rows[2]["bytes_context"] == rows[2]["bytes_per_token"] * 1000
