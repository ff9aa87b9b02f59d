"""Masks (causal, padding, both) before and after softmax, and the three kinds of attention of
an encoder-decoder model; encoder-only, decoder-only and encoder-decoder models compared."""
import numpy as np
import streamlit as st
import torch

from app.charts import attention_heatmap, head_grid, matrix_heatmap
from app.concepts import InputError, attention_maps, lift_title, mark_exact_zeros, piece_label, rows_csv
from app.i18n import t, tr
from app.resources import parameter_count
from app.ui import explain, fail, one_based_slider, show_matrix
from model.attention import masked_softmax
from model.config import PRESETS, TransformerConfig
from model.masks import causal_mask, combine, padding_mask
from model.transformer import Intermediates, Transformer

MAX_TOKENS = 20
MAX_SENTENCES = 6
SEED = 0


@st.cache_resource(show_spinner=False)
def _tokenizer():
    from model.tokenizer import load_tokenizer
    return load_tokenizer()


@st.cache_resource(show_spinner=False)
def _seeded_model(vocab_size: int) -> Transformer:
    """A small encoder-decoder with seeded random weights (no training): the attention patterns
    are arbitrary, but the masks and the shapes are exactly those of the real thing."""
    cfg = TransformerConfig(vocab_size=vocab_size, d_model=64, n_heads=4, d_ff=256, n_encoder_layers=2,
                            n_decoder_layers=2, dropout=0.0, max_len=128)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        return Transformer(cfg).eval()


def _trained_models() -> dict:
    """Trained encoder-decoder models, when the app has any (shipped or trained by the user)."""
    try:
        from app.resources import available_models
        return {name: path for name, path in available_models().items()}
    except Exception:  # the loader may not exist yet in this version of the app
        return {}


def _pick_model(choice: str, trained: dict):
    """(model, tokenizer, description) for the choice; falls back to the seeded model."""
    if choice in trained:
        try:
            from app.resources import load_model
            loaded = load_model(trained[choice])
            if loaded.config.architecture == "encoder-decoder" and loaded.tokenizer is not None:
                return loaded.model, loaded.tokenizer, choice
            st.warning(tr(f"“{choice}” is not an encoder–decoder model with a tokenizer; using the seeded model.",
                          f"“{choice}”은(는) 토크나이저가 있는 인코더–디코더 모델이 아니어서 시드 모델을 씁니다."))
        except Exception as e:  # a broken checkpoint must not break the page
            fail(f"Could not load “{choice}”; using the seeded model.",
                 f"“{choice}”을(를) 불러오지 못해 시드 모델을 씁니다.", str(e)[:300])
    tok = _tokenizer()
    return _seeded_model(tok.vocab_size), tok, tr("seeded random weights (untrained)", "시드 고정 무작위 가중치 (학습 전)")


def _tokenize(tok, text: str, what_en: str, what_ko: str) -> tuple[list[int], list[str]]:
    text = (text or "").strip()
    if not text:
        raise InputError(f"The {what_en} is empty: type a few words.", f"{what_ko}이(가) 비어 있습니다. 단어를 몇 개 입력하세요.")
    ids, pieces = tok.encode(text), tok.pieces(text)
    if len(ids) > MAX_TOKENS:
        st.warning(tr(f"The {what_en} has {len(ids)} tokens; only the first {MAX_TOKENS} are used.",
                      f"{what_ko}은(는) 토큰이 {len(ids)}개라서 앞의 {MAX_TOKENS}개만 씁니다."))
        ids, pieces = ids[:MAX_TOKENS], pieces[:MAX_TOKENS]
    return ids, [piece_label(p) for p in pieces]


st.title(tr("Masks and the three attentions", "마스크와 세 가지 어텐션"))
explain(
    "A mask decides which keys a query may look at. It is applied **before** the softmax: forbidden "
    "scores are replaced by −∞, and since e^−∞ = 0 those keys receive a weight of exactly zero, while "
    "the remaining weights of the row still add up to 1. Two masks matter: the **causal** (look-ahead) "
    "mask, so the decoder cannot read the words it is about to predict, and the **padding** mask, so "
    "nobody attends to the filler tokens that make a batch rectangular.",
    "마스크는 쿼리가 어떤 키를 볼 수 있는지 정합니다. 마스크는 소프트맥스 **전에** 적용됩니다. 금지된 "
    "점수는 −∞로 바뀌고, e^−∞ = 0이므로 그 키의 가중치는 정확히 0이 되며, 남은 가중치의 합은 여전히 "
    "1입니다. 중요한 마스크는 두 가지입니다. 디코더가 앞으로 예측할 단어를 미리 읽지 못하게 하는 "
    "**인과(look-ahead) 마스크**, 그리고 배치를 직사각형으로 맞추려고 채운 토큰을 아무도 보지 않게 하는 "
    "**패딩 마스크**입니다.",
)

trained = _trained_models()
seeded_label = tr("seeded, untrained model", "시드 고정, 학습 전 모델")
options = [seeded_label] + list(trained)
# the shipped, trained EN→KO model (when the app has one) shows real alignments: prefer it
choice = st.selectbox(tr("model", "모델"), options, index=options.index("en-ko") if "en-ko" in trained else 0,
                      key="mask_model")
model, tok, model_desc = _pick_model(choice, trained)
st.caption(tr(f"Model: {model_desc} · d_model = {model.config.d_model}, {model.config.n_heads} heads, "
              f"{model.config.n_encoder_layers}+{model.config.n_decoder_layers} layers, vocabulary "
              f"{model.config.vocab_size}.",
              f"모델: {model_desc} · d_model = {model.config.d_model}, 헤드 {model.config.n_heads}개, "
              f"{model.config.n_encoder_layers}+{model.config.n_decoder_layers}층, 어휘 {model.config.vocab_size}개."))

# ----------------------------------------------------------------------------- 1. masks
st.header(tr("1. Causal and padding masks, before and after softmax", "1. 소프트맥스 전후의 인과 마스크와 패딩 마스크"))
text = st.text_area(tr(f"a batch of sentences, one per line (up to {MAX_SENTENCES})",
                       f"문장 배치, 한 줄에 한 문장 (최대 {MAX_SENTENCES}개)"),
                    "the cat sees the sky.\nI love flowers.\nthe teacher bought an apple yesterday.",
                    key="mask_batch", height=110)


def _batch(text: str):
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    if not lines:
        raise InputError("Type at least one sentence.", "문장을 하나 이상 입력하세요.")
    if len(lines) > MAX_SENTENCES:
        st.warning(tr(f"Only the first {MAX_SENTENCES} sentences are used.", f"앞의 {MAX_SENTENCES}개 문장만 씁니다."))
        lines = lines[:MAX_SENTENCES]
    toks = [_tokenize(tok, ln, f"sentence {i + 1}", f"문장 {i + 1}") for i, ln in enumerate(lines)]
    L = max(len(ids) for ids, _ in toks)
    pad = tok.pad_id
    batch = torch.full((len(toks), L), pad, dtype=torch.long)  # (B, L), right-padded
    labels = []
    for b, (ids, labs) in enumerate(toks):
        batch[b, :len(ids)] = torch.tensor(ids)
        labels.append(labs + ["<pad>"] * (L - len(ids)))
    return lines, batch, labels, [len(ids) for ids, _ in toks]


@torch.no_grad()
def _scores(model, batch, pad_id):
    """Pre-softmax scores QK^T/sqrt(d_k) of the first encoder layer: (B, H, L, L)."""
    rec = Intermediates()
    model.encode(batch.to(model.device), batch.to(model.device) != pad_id, rec, details=True)
    return rec.details["encoder_self"][0].scores.float().cpu()


def _show_pair(scores, mask, labels, name, key):
    """Masked scores (−∞ where the mask forbids) and the softmax of them, side by side."""
    masked = scores.masked_fill(~mask, float("-inf"))  # (Lq, Lk)
    weights = masked_softmax(scores, mask)  # (Lq, Lk), exact zeros where masked
    small = len(labels) <= 14
    c1, c2 = st.columns(2)
    with c1:
        fig = lift_title(matrix_heatmap(masked, labels, labels, title=tr("scores after the mask (before softmax)",
                                                                         "마스크 적용 후 점수 (소프트맥스 전)"),
                                        x_title=f"{t('key')} →", y_title=f"{t('query')} ↓", zmid=0, show_text=small))
        show_matrix(fig, masked, name=f"{name}-masked-scores", row_labels=labels, col_labels=labels,
                    key=f"{key}-s")
    with c2:
        fig = lift_title(attention_heatmap(weights, labels, labels, title=tr("softmax → attention weights (exact 0 = “0”)",
                                                                             "소프트맥스 → 어텐션 가중치 (정확히 0은 “0”)"),
                                           query_title=t("query"), key_title=t("key"), show_text=small))
        mark_exact_zeros(fig, weights)
        show_matrix(fig, weights, name=f"{name}-weights", row_labels=labels, col_labels=labels, key=f"{key}-w")
    on_masked = float(weights[~mask].abs().max()) if (~mask).any() else 0.0
    sums = weights.sum(-1)
    live = mask.any(-1)
    st.caption(t("rows_cols") + " " + tr(
        f"Masked cells: {int((~mask).sum())}; largest weight on a masked cell: **{on_masked:g}**"
        f"{' (exactly zero)' if on_masked == 0 else ''}; every row sums to 1 "
        f"(max deviation {float((sums[live] - 1).abs().max()):.1e}).",
        f"마스크된 칸: {int((~mask).sum())}개; 마스크된 칸의 최대 가중치: **{on_masked:g}**"
        f"{' (정확히 0)' if on_masked == 0 else ''}; 모든 행의 합은 1 "
        f"(최대 오차 {float((sums[live] - 1).abs().max()):.1e})."))
    return on_masked


try:
    lines, batch, labels, lengths = _batch(text)
    B, L = batch.shape
    st.markdown(tr(f"**Token ids**, padded on the right with `<pad>` = {tok.pad_id} to the longest length {L}:",
                   f"**토큰 id** — 가장 긴 길이 {L}에 맞춰 오른쪽을 `<pad>` = {tok.pad_id}로 채웠습니다:"))
    st.dataframe([{"#": b + 1, **{str(j): f"{labels[b][j]} ({int(batch[b, j])})" for j in range(L)}}
                  for b in range(B)], hide_index=True)
    pm = padding_mask(batch, tok.pad_id)  # (B, 1, 1, L): True for real tokens
    keep = pm[:, 0, 0, :].float()
    fig = lift_title(matrix_heatmap(keep, [str(j) for j in range(L)], [f"#{b + 1}" for b in range(B)],
                                    colorscale=[[0, "#d9d9d9"], [1, "#9ecae1"]], reversescale=False, zmin=0, zmax=1,
                                    decimals=0, title=tr("padding mask: 1 = real token (may be attended), 0 = <pad>",
                                                         "패딩 마스크: 1 = 실제 토큰 (볼 수 있음), 0 = <pad>"),
                                    x_title=tr("position (key)", "위치 (키)"), y_title=tr("sentence", "문장"),
                                    height=120 + 40 * B))
    fig.update_traces(showscale=False)
    show_matrix(fig, keep, name="padding-mask", row_labels=[f"#{b + 1}" for b in range(B)],
                col_labels=[str(j) for j in range(L)], key="pad-mask")

    c1, c2 = st.columns(2)
    which = c1.selectbox(tr("sentence to inspect", "살펴볼 문장"), list(range(B)),
                         format_func=lambda b: f"#{b + 1}: {lines[b][:40]}", key="mask_which")
    head = one_based_slider(t("head"), model.config.n_heads, key="mask_head", container=c2)
    scores = _scores(model, batch, tok.pad_id)[which, head - 1]  # (L, L)
    n = lengths[which]
    st.caption(tr("Scores: QKᵀ/√d_k of layer 1 of the model's encoder, before any mask (one head).",
                  "점수: 모델 인코더 1층의 QKᵀ/√d_k, 마스크 적용 전 (헤드 하나)."))

    tabs = st.tabs([tr("causal mask", "인과 마스크"), tr("padding mask", "패딩 마스크"),
                    tr("causal + padding", "인과 + 패딩")])
    with tabs[0]:
        explain("Query *i* may see keys 0…*i*: the upper triangle is forbidden (this sentence's own "
                f"{n} tokens, no padding). `model.masks.causal_mask({n})`.",
                f"쿼리 *i*는 키 0…*i*만 볼 수 있습니다. 위쪽 삼각형이 금지됩니다(이 문장의 토큰 {n}개, 패딩 "
                f"없음). `model.masks.causal_mask({n})`.")
        _show_pair(scores[:n, :n], causal_mask(n), labels[which][:n], "causal", "m-causal")
    with tabs[1]:
        explain("Every query may see every **real** key; the `<pad>` columns are forbidden. Rows of "
                "`<pad>` queries are still computed, but their outputs are ignored (the loss skips them). "
                "`model.masks.padding_mask(ids, pad_id)`.",
                "모든 쿼리는 **실제** 키를 모두 볼 수 있고 `<pad>` 열은 금지됩니다. `<pad>` 쿼리의 행도 "
                "계산은 되지만 그 출력은 쓰이지 않습니다(손실 계산에서 빠집니다). "
                "`model.masks.padding_mask(ids, pad_id)`.")
        if n == L:
            st.info(tr("This sentence is the longest one, so it has no padding — pick a shorter one to see "
                       "masked columns.", "이 문장이 가장 길어서 패딩이 없습니다. 마스크된 열을 보려면 더 짧은 "
                       "문장을 고르세요."))
        mask_p = pm[which, 0, 0][None, :].expand(L, L)  # (L, L): same key mask for every query
        _show_pair(scores, mask_p, labels[which], "padding", "m-pad")
    with tabs[2]:
        explain("The decoder in a batch needs both: `combine(causal_mask(L), padding_mask(ids))` — a logical "
                "AND. A query sees only earlier **real** tokens.",
                "배치 안의 디코더에는 둘 다 필요합니다: `combine(causal_mask(L), padding_mask(ids))` — 논리곱 "
                "(AND)입니다. 쿼리는 자기 앞의 **실제** 토큰만 봅니다.")
        mask_c = combine(causal_mask(L), pm)[which, 0]  # (L, L)
        _show_pair(scores, mask_c, labels[which], "causal-padding", "m-both")
except InputError as e:
    fail(e.en, e.ko)

# ----------------------------------------------------------------------------- 2. three attentions
st.header(tr("2. The three kinds of attention", "2. 세 가지 어텐션"))
explain(
    "One encoder–decoder model holds three attentions (in the spirit of tensor2tensor's attention "
    "viewer): **encoder self-attention** (source → source, all to all), **masked decoder "
    "self-attention** (target → target, past and present only) and **encoder–decoder attention** "
    "(target queries → source keys). The decoder reads the target *shifted right*: it starts with "
    "`<s>`, so at each position it sees the words before the one it must predict.",
    "인코더–디코더 모델 하나에 어텐션이 세 가지 있습니다(tensor2tensor 어텐션 뷰어와 같은 구성): "
    "**인코더 셀프 어텐션**(소스 → 소스, 전체 → 전체), **마스크드 디코더 셀프 어텐션**(타깃 → 타깃, "
    "과거와 현재만), **인코더–디코더 어텐션**(타깃 쿼리 → 소스 키). 디코더는 타깃을 *오른쪽으로 한 칸 "
    "밀어서* 읽습니다. `<s>`로 시작하므로 각 위치에서 예측해야 할 단어 바로 앞까지만 봅니다.",
)
c1, c2 = st.columns(2)
src_text = c1.text_input(tr("source sentence", "소스 문장"), "the cat sees the sky.", key="kind_src")
tgt_text = c2.text_input(tr("target sentence", "타깃 문장"), "고양이는 하늘을 본다.", key="kind_tgt")
kinds = {"encoder_self": tr("encoder self-attention (all → all)", "인코더 셀프 어텐션 (전체 → 전체)"),
         "decoder_self": tr("masked decoder self-attention (past and present)", "마스크드 디코더 셀프 어텐션 (과거와 현재)"),
         "cross": tr("encoder–decoder attention (target → source)", "인코더–디코더 어텐션 (타깃 → 소스)")}
kind = st.radio(tr("attention", "어텐션"), list(kinds), format_func=kinds.get, key="kind", horizontal=True)
try:
    src_ids, src_labels = _tokenize(tok, src_text, "source sentence", "소스 문장")
    tgt_ids, tgt_labels = _tokenize(tok, tgt_text, "target sentence", "타깃 문장")
    dec_ids, dec_labels = [tok.bos_id] + tgt_ids, ["<s>"] + tgt_labels  # shifted right
    maps = attention_maps(model, src_ids, dec_ids)
    w = maps[kind]  # (layers, H, Lq, Lk)
    q_labels = src_labels if kind == "encoder_self" else dec_labels
    k_labels = dec_labels if kind == "decoder_self" else src_labels
    if kind == "cross":
        q_title, k_title = tr("target (query)", "타깃 (쿼리)"), tr("source (key)", "소스 (키)")
        rule = t("rows_cols_cross")
    else:
        side = tr("source", "소스") if kind == "encoder_self" else tr("target", "타깃")
        q_title, k_title = f"{side} ({t('query')})", f"{side} ({t('key')})"
        rule = t("rows_cols")
    c1, c2 = st.columns(2)
    layer = one_based_slider(t("layer"), w.shape[0], key="kind_layer", container=c1)
    head = one_based_slider(t("head"), w.shape[1], key="kind_head", container=c2)
    left, right = st.columns([3, 2])
    with left:
        fig = lift_title(attention_heatmap(w[layer - 1, head - 1], q_labels, k_labels, query_title=q_title,
                                           key_title=k_title,
                                           title=f"{kinds[kind]} · {t('layer')} {layer} · {t('head')} {head}"))
        if kind == "decoder_self":
            mark_exact_zeros(fig, w[layer - 1, head - 1])
        show_matrix(fig, w[layer - 1, head - 1], name=f"{kind}-l{layer}-h{head}", row_labels=q_labels,
                    col_labels=k_labels, key="kind_one")
        st.caption(rule + " " + tr(f"Shape [L_query, L_key] = [{w.shape[2]}, {w.shape[3]}].",
                                   f"모양 [L_query, L_key] = [{w.shape[2]}, {w.shape[3]}]."))
    with right:
        fig = head_grid(w, layer_title=t("layer"), head_title=t("head"), height=110 + 110 * w.shape[0])
        flat = w.reshape(-1, w.shape[-1])
        show_matrix(fig, flat, name=f"{kind}-all-heads",
                    row_labels=[f"L{l + 1}H{h + 1}:{q}" for l in range(w.shape[0]) for h in range(w.shape[1])
                                for q in q_labels], col_labels=k_labels, key="kind_grid")
        st.caption(tr("All layers × heads of this attention at a glance (same 0…1 scale).",
                      "이 어텐션의 모든 레이어 × 헤드를 한눈에 (같은 0…1 척도)."))
    future = float(np.triu(maps["decoder_self"], 1).max()) if maps["decoder_self"].shape[-1] > 1 else 0.0
    m1, m2, m3 = st.columns(3)
    m1.metric(tr("encoder self: [L_src, L_src]", "인코더 셀프: [L_src, L_src]"), "×".join(map(str, maps["encoder_self"].shape[2:])))
    m2.metric(tr("decoder self: largest weight on a future token", "디코더 셀프: 미래 토큰에 준 최대 가중치"), f"{future:g}")
    m3.metric(tr("cross: [L_tgt, L_src]", "크로스: [L_tgt, L_src]"), "×".join(map(str, maps["cross"].shape[2:])))
    if model_desc == tr("seeded random weights (untrained)", "시드 고정 무작위 가중치 (학습 전)"):
        st.caption(tr("With untrained weights the patterns mean nothing yet; the structure (which cells can be "
                      "non-zero, which axis is which) is what to look at. A trained model shows alignments.",
                      "학습 전 가중치라 패턴 자체에는 아직 의미가 없습니다. 어느 칸이 0이 아닐 수 있는지, 어느 축이 "
                      "무엇인지 같은 구조를 보세요. 학습된 모델에서는 정렬이 보입니다."))
except InputError as e:
    fail(e.en, e.ko)

# ----------------------------------------------------------------------------- 3. architectures
st.header(tr("3. Encoder-only, decoder-only, encoder–decoder", "3. 인코더 전용, 디코더 전용, 인코더–디코더"))
preset = st.selectbox(tr("configuration for the parameter counts", "파라미터 수를 셀 설정"), list(PRESETS),
                      format_func=lambda p: f"{p} (d_model={PRESETS[p].d_model}, N={PRESETS[p].n_encoder_layers}, "
                                            f"V={PRESETS[p].vocab_size:,})", key="arch_preset")
base = PRESETS[preset]
arch_rows = []
for arch, attn, masks_used, use, examples in (
        ("encoder-only", tr("encoder self-attention", "인코더 셀프 어텐션"), tr("padding", "패딩"),
         tr("understanding: classification, tagging, retrieval", "이해: 분류, 태깅, 검색"), "BERT, RoBERTa"),
        ("decoder-only", tr("masked self-attention", "마스크드 셀프 어텐션"), tr("causal (+ padding)", "인과 (+ 패딩)"),
         tr("generation: next-token prediction, chat", "생성: 다음 토큰 예측, 대화"), "GPT, LLaMA"),
        ("encoder-decoder", tr("all three: encoder self, masked decoder self, cross",
                               "세 가지 모두: 인코더 셀프, 마스크드 디코더 셀프, 크로스"),
         tr("encoder: padding; decoder: causal + padding; cross: source padding",
            "인코더: 패딩; 디코더: 인과 + 패딩; 크로스: 소스 패딩"),
         tr("sequence to sequence: translation, summarisation", "시퀀스→시퀀스: 번역, 요약"),
         "Transformer (2017), T5, BART")):
    cfg = base.replace(architecture=arch)
    arch_rows.append({tr("architecture", "아키텍처"): arch,
                      tr("parameters (computed)", "파라미터 (계산값)"): f"{parameter_count(cfg.to_dict()):,}",
                      tr("examples", "예시"): examples, tr("attentions", "어텐션"): attn,
                      tr("masks", "마스크"): masks_used, tr("typical use", "주 용도"): use})
st.dataframe(arch_rows, hide_index=True)
st.download_button(t("download_csv"), rows_csv(arch_rows), file_name="architectures.csv", mime="text/csv",
                   key="arch_csv")
explain(
    "Counts come from building each architecture with the same settings on PyTorch's meta device. "
    "The decoder-only stack has no cross-attention, so each of its layers is the size of an encoder "
    "layer; the encoder–decoder model has both stacks plus one cross-attention per decoder layer.",
    "각 아키텍처를 같은 설정으로 PyTorch meta 장치에 만들어 센 값입니다. 디코더 전용 스택에는 크로스 "
    "어텐션이 없어서 층 하나의 크기가 인코더 층과 같고, 인코더–디코더 모델은 두 스택에 더해 디코더 층마다 "
    "크로스 어텐션이 하나씩 있습니다.",
)
