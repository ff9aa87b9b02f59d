"""The guided tour's answers: each step's question answered from the learner's current inputs, with the same
functions the step's page draws its figure from (so the tour's answer is what that figure shows)."""
from __future__ import annotations

import numpy as np

from model.lessons import lab, layer_walk, multihead, positions, table3, worked_example
from model.training.schedule import compare_schedules
from model.training.smoothing import smoothing_demo


def qkv_weights(q_text: str, k_text: str, v_text: str, causal: bool) -> np.ndarray:
    """A = softmax(QKᵀ/√dₖ) for the matrices as typed on the attention page (its parser, its stages)."""
    q, k, v = (worked_example.parse_matrix(x, name) for x, name in ((q_text, "Q"), (k_text, "K"), (v_text, "V")))
    return lab.checked_stages(q, k, v, causal).weights


def _tops(values: np.ndarray) -> list[int]:
    """The indices of the largest value, every one of them where several tie (to rounding error)."""
    v = np.asarray(values, dtype=float)
    return [int(i) for i in np.flatnonzero(np.isclose(v, v.max(), rtol=1e-9, atol=1e-12))]


def top_key(weights: np.ndarray, query: int) -> int:
    """The key (0-based) that query `query` gives the most weight (the first of a tie)."""
    return top_keys(weights, query)[0]


def top_keys(weights: np.ndarray, query: int) -> list[int]:
    """Every key (0-based) that query `query` gives the most weight: several where they tie."""
    return _tops(weights[query])


def weight_at(weights: np.ndarray, row: int, col: int) -> float:
    return float(weights[row, col])


SCALE_CHOICES = ("one", "sqrt_dk", "dk")  # what the variance of q·k could grow like


def dot_variance(d_k: int, seed: int = 0) -> dict:
    """The measured variance of q·k for random unit-variance q, k (the attention page's √dₖ histogram) and
    which of 1, √dₖ, dₖ it is nearest to (on a log scale): `nearest` lists every candidate as near as the nearest,
    first to last (at dₖ = 1 the three are the same number, so all three are nearest)."""
    s = lab.dot_product_samples(d_k, seed=seed)
    var = s.var_raw
    candidates = {"one": 1.0, "sqrt_dk": float(np.sqrt(d_k)), "dk": float(d_k)}
    distance = {c: abs(np.log(var) - np.log(candidates[c])) for c in SCALE_CHOICES}
    best = min(distance.values())
    nearest = tuple(c for c in SCALE_CHOICES if distance[c] <= best + 1e-12)
    return {"var": var, "var_scaled": s.var_scaled, "nearest": nearest, "candidates": candidates}


def head_weights(words: list[str], d_model: int, n_heads: int, seed: int, positions_on: bool) -> np.ndarray:
    """Every head's weights (H, L, L), as the multi-head page computes them."""
    return multihead.multihead_demo(words, d_model, n_heads, seed, positions_on, cost_heads=()).weights


def top_head(weights: np.ndarray, query: int, key: int) -> int:
    """The head (0-based) that puts the most weight from word `query` on word `key` (the first of a tie)."""
    return top_heads(weights, query, key)[0]


def top_heads(weights: np.ndarray, query: int, key: int) -> list[int]:
    """Every head (0-based) that puts the most weight from word `query` on word `key`."""
    return _tops(weights[:, query, key])


def pe_neighbour_dot(length: int, d_model: int, anchor: int) -> dict:
    """PE(anchor)·PE(next) where next is anchor + 1 (anchor − 1 at the table's end), from the positional page's
    dot profile."""
    prof = positions.dot_profile(length, d_model, anchor)
    other = anchor + 1 if anchor + 1 < length else anchor - 1
    return {"other": other, "dot": float(prof["measured"][other]), "profile": prof}


def warmup_peak(d_model: int, warmup: int) -> dict:
    """The step at which the learning rate peaks, and the rate there (the recipe page's schedule)."""
    curve = compare_schedules([(d_model, warmup)], 1, max(2 * warmup, 2))
    c = curve["curves"][0]
    steps = np.asarray(curve["steps"])
    return {"step": int(c["peak_step"]), "lr": float(c["peak_lr"]), "steps": steps, "lr_curve": c["lr"],
            "grid_peak": int(steps[int(np.argmax(c["lr"]))])}


def smoothed_target(vocab: int, eps: float) -> dict:
    """The probability label smoothing gives the correct token, and one other token (the recipe page's bars)."""
    target = smoothing_demo(vocab, eps)["target"]
    return {"correct": float(target[0]), "other": float(target[1]), "target": target}


def close_enough(answer: float, truth: float, tol: float) -> bool:
    return bool(abs(float(answer) - float(truth)) <= tol)


def relu_zero_shares(words: list[str], d_model: int, n_heads: int, seed: int, positions_on: bool) -> np.ndarray:
    """For each word, the share of the feed-forward layer's ReLU units that are exactly zero (the multi-head
    page's walk through one encoder layer)."""
    return np.asarray(layer_walk.layer_walk(words, d_model, n_heads, seed, positions_on).relu_zero_share, dtype=float)


def best_row(rows: dict, keys: list[str], metric: str) -> dict:
    """Of Table 3's rows `keys`, the one our study scored best on `metric` (lowest perplexity, highest exact
    match; the median over seeds, as the study page plots it). Rows without a score are left out. `alike`: the
    best row and every row whose seeds' range (min…max) overlaps the best row's: the seeds cannot tell those
    apart from the best, so a learner who names one of them is as right."""
    scores = {k: table3.centre(rows.get(k, {}), metric) for k in keys}
    scores = {k: v for k, v in scores.items() if v is not None}
    if not scores:
        return {"row": None, "scores": scores, "alike": []}
    pick = min if metric == "perplexity" else max
    best = pick(scores, key=scores.__getitem__)

    def span(k):
        seeds = table3.seed_values(rows.get(k), metric) or [scores[k]]
        return min(seeds), max(seeds)

    lo, hi = span(best)
    alike = [k for k in scores if k == best or (span(k)[0] <= hi and span(k)[1] >= lo)]
    return {"row": best, "scores": scores, "alike": alike}


def visible_keys(weights: np.ndarray, kind: str, layer: int, head: int, query: int) -> dict:
    """One map of an attention as the masks page draws it (weights (layers, H, Lq, Lk) from
    model.lessons.probe.attention_maps; layer, head, query 0-based) and how many keys that query may see: the
    network's own causal mask (model.nn.masks.causal_mask) in the decoder's self-attention, every key in the
    encoder's self-attention and in cross-attention (one sentence, no padding). A trained head may give an
    allowed key a weight that rounds to 0, so the count comes from the mask, not from the weights."""
    one = np.asarray(weights)[layer, head]
    allowed = allowed_keys(kind, *one.shape)
    return {"map": one, "allowed": allowed, "visible": int(allowed[query].sum())}


def allowed_keys(kind: str, n_q: int, n_k: int) -> np.ndarray:
    """Which keys each query may see (n_q, n_k) bool: the network's own causal mask (model.nn.masks.causal_mask)
    in the decoder's self-attention, every key in the encoder's self-attention and in cross-attention."""
    from model.nn.masks import causal_mask
    return causal_mask(n_q, n_k).numpy() if kind == "decoder_self" else np.ones((n_q, n_k), dtype=bool)


def attention_maps_of(model, src_ids: list[int], dec_ids: list[int]) -> dict:
    """The masks page's maps of the three attentions for a (source, decoder input) pair."""
    from model.lessons.probe import attention_maps
    return attention_maps(model, list(src_ids), list(dec_ids))


def cross_top_source(record, layer: int, step: int) -> dict:
    """Decoding step `step`'s (0-based) cross-attention row in `layer`, averaged over heads, as the inspector's
    decoding-step bars draw it, and the source token (0-based) it weighs most."""
    from model.lessons.probe import step_cross_attention
    row = np.asarray(step_cross_attention(record, layer, step), dtype=float)
    return {"row": row, "top": int(np.argmax(row))}


def mlm_first_guess(loaded, text_a: str, text_b: str, positions: tuple[int, ...]) -> dict:
    """The masked-LM member's candidates for the first [MASK] of its input (model.family.mlm.fill_masks, as
    the family page runs it): its position, the top candidates (piece, probability) and the best guess.
    `loaded` is the loaded family model (network and its tokenizer)."""
    from model.family.mlm import fill_masks
    p = fill_masks(loaded.model, loaded.extra, text_a, text_b or None, list(positions)).predictions[0]
    return {"position": p.position, "top": list(p.top), "guess": p.top[0][0], "hidden": p.hidden}


GROWTH_CHOICES = (2, 4, 8)  # what doubling n could do to full attention's peak memory


def memory_growth(n: int, d: int, heads: int) -> dict:
    """Full and block-wise attention's measured peak memory at n and 2n (the limits page's measure), and which of
    ×2, ×4, ×8 full attention's growth is nearest to (on a log scale)."""
    from model.lessons import limits
    peaks = {(impl, m): limits.measure(impl, limits.Setting(n=m, d=d, heads=heads), repeats=1)["peak_bytes"]
             for impl in ("full", "blockwise") for m in (n, 2 * n)}
    ratio = peaks[("full", 2 * n)] / peaks[("full", n)]
    nearest = min(GROWTH_CHOICES, key=lambda c: abs(np.log(ratio) - np.log(c)))
    return {"peaks": peaks, "ratio": ratio, "nearest": nearest}


def best_at_length(doc: dict, multiple: int) -> dict:
    """Of the length study's position schemes, the one with the highest median accuracy at `multiple` times the
    training length, and every scheme whose seeds' range overlaps it (the seeds cannot tell those apart)."""
    rows = {r["scheme"]: r["accuracy"][str(multiple)] for r in doc["rows"]}
    rows = {k: v for k, v in rows.items() if v.get("median") is not None}
    best = max(rows, key=lambda k: rows[k]["median"])
    alike = [k for k, v in rows.items() if v["max"] >= rows[best]["min"]]
    return {"scheme": best, "alike": alike, "medians": {k: v["median"] for k, v in rows.items()}}
