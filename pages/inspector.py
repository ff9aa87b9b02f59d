"""Attention inspector: a real trained Transformer's heads on the sentence you type."""
from pathlib import Path

import streamlit as st
import torch

from app import inspector as ins
from app.charts import attention_heatmap, head_grid
from app.i18n import t, tr
from app.resources import available_models, forward_pass, load_model, training_piece_ids, translation, _stamp
from app.ui import explain, fail, show_figure, show_matrix
from model.checkpoint import CheckpointError
from model.decode import lm_next_token
from model.metrics import summarize_heads

st.title(tr("Attention inspector", "어텐션 인스펙터"))
explain(
    "Type a sentence and look inside a real trained Transformer: every layer, every head, all three "
    "kinds of attention. The shipped `en-ko` model translates the small English→Korean teaching "
    "corpus; `lm` is a decoder-only model that predicts the next token. Models you train on the "
    "training page appear here too.",
    "문장을 입력하고 실제로 학습된 Transformer의 내부를 들여다보세요. 모든 레이어, 모든 헤드, 세 종류의 "
    "어텐션을 볼 수 있습니다. 함께 제공되는 `en-ko` 모델은 작은 영어→한국어 교육용 말뭉치를 번역하고, "
    "`lm`은 다음 토큰을 예측하는 디코더 전용 모델입니다. 학습 페이지에서 직접 학습한 모델도 여기에 나타납니다.",
)

models = available_models()
if not models:
    fail("No model found: the shipped models in assets/models are missing.",
         "모델이 없습니다: assets/models에 있어야 할 모델 파일이 없습니다.")
    st.stop()
labels = list(models)
wanted = st.session_state.pop("inspect_model_dir", None)
if wanted:
    match = [k for k, v in models.items() if Path(v).resolve() == Path(wanted).resolve()]
    if match:
        st.session_state["insp_model"] = match[0]
if st.session_state.get("insp_model") not in labels:
    st.session_state["insp_model"] = labels[0]
choice = st.selectbox(tr("Model", "모델"), labels, key="insp_model")
path = models[choice]
try:
    loaded = load_model(path)
except CheckpointError as e:
    fail("This model cannot be loaded. Its files are damaged or incomplete; pick another model.",
         "이 모델을 불러올 수 없습니다. 파일이 손상되었거나 불완전합니다. 다른 모델을 고르세요.", str(e))
    st.stop()
cfg, tok, meta = loaded.config, loaded.tokenizer, loaded.meta or {}
if tok is None:
    fail("This model has no tokenizer, so it cannot read text.", "이 모델에는 토크나이저가 없어 글을 읽을 수 없습니다.")
    st.stop()
arch = cfg.architecture
scores = meta.get("scores") or {}
facts = [f"{arch}", f"d_model={cfg.d_model}", f"h={cfg.n_heads}",
         f"layers={cfg.n_encoder_layers if cfg.has_encoder else 0}+{cfg.n_decoder_layers if cfg.has_decoder else 0}",
         f"{loaded.model.num_parameters():,} " + tr("parameters", "파라미터")]
if meta.get("task"):
    facts.append(tr("task", "과제") + f": {meta['task']}")
if "exact_match_beam4" in scores:
    facts.append(tr("test exact match", "테스트 정확 일치") + f" {scores['exact_match_beam4']:.1%}, BLEU {scores['bleu_beam4']:.1f}")
st.caption(" · ".join(facts))
card = Path(path) / "CARD.md"
if card.is_file():
    with st.expander(tr("Model card: how this model was trained and how well it does",
                        "모델 카드: 이 모델을 어떻게 학습했고 얼마나 잘하는지")):
        st.markdown(card.read_text(encoding="utf-8"))

EXAMPLES = {
    "en-ko": ["My friend did not buy a red apple.", "She drank cold water yesterday.", "The children walk home every day.",
              "I go to school.", "The teacher does not like the new movie."],
    "lm": ["The children walk home", "나는 어제 빨간", "My mother loves", "그녀는 매일 도서관에"],
    "copy": ["a b c d e f"], "reverse": ["a b c d e f"], "sort": ["e b d a c f"],
}
examples = EXAMPLES.get(meta.get("task") or ("lm" if arch == "decoder-only" else "en-ko"), EXAMPLES["en-ko"])
if st.session_state.get("insp_for") != choice:  # a new model: start from its first example
    st.session_state["insp_for"] = choice
    st.session_state["insp_text"] = examples[0]
st.selectbox(tr("Examples", "예문"), examples, index=None, placeholder=tr("pick an example…", "예문 고르기…"),
             key="insp_example", on_change=lambda: st.session_state.update(insp_text=st.session_state["insp_example"] or st.session_state["insp_text"]))
raw = st.text_area(tr("Your sentence", "문장 입력"), key="insp_text", height=80)
text, cut = ins.clean_input(raw)
if cut:
    st.warning(tr(f"The text was longer than {ins.MAX_CHARS} characters and was cut to its first {ins.MAX_CHARS}.",
                  f"입력이 {ins.MAX_CHARS}자를 넘어 앞의 {ins.MAX_CHARS}자만 사용합니다."))
if not text:
    st.info(tr("Type a sentence above (or pick an example) to see the model's attention.",
               "위에 문장을 입력하거나 예문을 고르면 모델의 어텐션을 볼 수 있습니다."))
    st.stop()

# ----------------------------------------------------------------------------- tokenization
ids = tok.encode(text)
limit = cfg.max_len - 2
if len(ids) > limit:
    st.warning(tr(f"The sentence has {len(ids)} tokens; the model has positions for {limit}, so only the first {limit} are used.",
                  f"문장이 {len(ids)}개 토큰입니다. 모델의 위치는 {limit}개뿐이라 앞의 {limit}개만 씁니다."))
    ids = ids[:limit]
pieces = [tok.id_to_piece(i) for i in ids]
seen = training_piece_ids(str(path), _stamp(path))
with st.expander(tr(f"Tokenization: {len(ids)} pieces", f"토큰화: 조각 {len(ids)}개"), expanded=False):
    explain("The shared sentencepiece model splits text into pieces (`▁` marks a space). Characters it "
            "has no piece for fall back to their UTF-8 bytes, so any text — emoji included — can be read.",
            "공유 sentencepiece 모델이 글을 조각으로 나눕니다(`▁`는 공백 표시). 조각이 없는 문자는 UTF-8 "
            "바이트로 쪼개지므로(byte fallback) 이모지를 포함한 어떤 글도 읽을 수 있습니다.")
    st.dataframe(ins.token_table(ids, pieces, tok, seen), hide_index=True)
never = ins.unseen(ids, pieces, tok, seen) if seen else []
if never:
    st.warning(tr("Out of domain: the model never saw these pieces in training, so its attention and output "
                  "for them are guesses: ", "학습 범위 밖: 모델이 학습 중 한 번도 보지 못한 조각들입니다. 이 부분의 "
                  "어텐션과 출력은 추측에 가깝습니다: ") + ", ".join(f"`{p}`" for p in dict.fromkeys(never)))

# ----------------------------------------------------------------------------- run the model
src_labels = tgt_labels = None
steps = result = None
if arch == "encoder-decoder":
    c1, c2 = st.columns([1, 2])
    methods = {"beam": tr("beam search", "빔 서치"), "greedy": tr("greedy", "그리디")}
    method = c1.radio(tr("Decoding", "디코딩"), list(methods), horizontal=True, format_func=methods.get, key="insp_method")
    beam = c2.slider(tr("beam size (length penalty α = 0.6)", "빔 크기 (길이 패널티 α = 0.6)"), 2, 8, 4,
                     disabled=method == "greedy", key="insp_beam")
    result = translation(path, tok.decode(ids), method == "greedy", beam)
    st.subheader(tr("Translation", "번역"))
    st.code(result.text or "∅", language=None)
    if not result.finished:
        st.caption(tr("The model did not produce an end-of-sentence token within the length limit.",
                      "모델이 길이 제한 안에 문장 끝 토큰을 내지 않았습니다."))
    att = result.attention
    src_labels, tgt_labels = ins.labels(result.src_pieces), ins.labels(result.tgt_pieces)
    steps = result.steps
elif arch == "decoder-only":
    ctx = [tok.bos_id] + ids
    c1, c2 = st.columns(2)
    temperature = c1.slider(tr("temperature", "온도(temperature)"), 0.0, 2.0, 1.0, 0.05)
    top_k = c2.slider(tr("top-k (0 = all tokens)", "top-k (0 = 전체)"), 0, 50, 10)
    probs, att = lm_next_token(loaded.model, ctx, temperature=temperature, top_k=top_k)
    top = ins.top_tokens(probs, tok, 10)
    st.subheader(tr("Next-token distribution", "다음 토큰 분포"))
    fig = ins.bar_chart([p for _, p, _ in top], ins.labels([pc for pc, _, _ in top]), horizontal=True,
                        x_title=tr("probability", "확률"), y_title=tr("token", "토큰"))
    show_figure(fig, name="next-token", csv="piece,id,probability\n" + "".join(f"\"{pc}\",{i},{p}\n" for pc, p, i in top))

    def _append():
        gen = torch.Generator().manual_seed(st.session_state.get("insp_draws", 0))
        st.session_state["insp_draws"] = st.session_state.get("insp_draws", 0) + 1
        nxt = int(torch.multinomial(probs.cpu(), 1, generator=gen))
        if nxt == tok.eos_id:
            st.session_state["insp_note"] = "eos"
            return
        st.session_state["insp_text"] = tok.decode(ids + [nxt])

    st.button(tr("Append a sampled token", "샘플링한 토큰 덧붙이기"), on_click=_append)
    if st.session_state.pop("insp_note", None) == "eos":
        st.info(tr("The model sampled the end-of-sentence token: the sentence is complete.",
                   "모델이 문장 끝 토큰을 뽑았습니다: 문장이 끝났습니다."))
    tgt_labels = ins.labels([tok.id_to_piece(i) for i in ctx])
else:
    out = forward_pass(path, ids)
    att = out.attention
    src_labels = ins.labels(pieces)

# ----------------------------------------------------------------------------- attention
KIND_NAMES = {"encoder_self": tr("encoder self-attention", "인코더 셀프 어텐션"),
              "decoder_self": tr("masked decoder self-attention", "마스크드 디코더 셀프 어텐션"),
              "cross": tr("cross-attention (target → source)", "크로스 어텐션 (타깃 → 소스)")}
kinds = att.kinds()
st.subheader(tr("Attention", "어텐션"))
kind = st.radio(tr("Which attention", "어텐션 종류"), kinds, format_func=KIND_NAMES.get, horizontal=True, key="insp_kind")
q_labels = {"encoder_self": src_labels, "decoder_self": tgt_labels, "cross": tgt_labels}[kind]
k_labels = {"encoder_self": src_labels, "decoder_self": tgt_labels, "cross": src_labels}[kind]
q_title, k_title = (tr("target (query)", "타깃 (쿼리)"), tr("source (key)", "소스 (키)")) if kind == "cross" else (t("query"), t("key"))
weights = att.stack(kind)[:, 0].float().cpu()  # (layers, H, Lq, Lk)
n_layers, n_heads = weights.shape[:2]
st.caption(t("rows_cols_cross") if kind == "cross" else t("rows_cols"))

tab_grid, tab_head, tab_steps, tab_stats = st.tabs([
    tr("Layers × heads", "레이어 × 헤드"), tr("Head view", "헤드 뷰"),
    tr("Decoding steps", "디코딩 단계"), tr("Head statistics", "헤드 통계")])

with tab_grid:
    st.markdown(tr(f"**All {n_layers} layers × {n_heads} heads at a glance** — each tile is one head's "
                   f"{weights.shape[2]}×{weights.shape[3]} map.",
                   f"**{n_layers}개 레이어 × {n_heads}개 헤드 한눈에 보기** — 타일 하나가 한 헤드의 "
                   f"{weights.shape[2]}×{weights.shape[3]} 맵입니다."))
    show_figure(head_grid(weights, layer_title=t("layer"), head_title=t("head")), name=f"grid-{kind}", key="grid")
    c1, c2 = st.columns(2)
    avg_word = tr("average", "평균")
    pick = lambda i: avg_word if i < 0 else f"{i + 1}"  # -1 = the mean over all layers / heads
    layer = c1.selectbox(t("layer"), [*range(n_layers), -1], format_func=pick, key="insp_layer")
    head = c2.selectbox(t("head"), [*range(n_heads), -1], format_func=pick, key="insp_head")
    w = weights.mean(0) if layer < 0 else weights[layer]  # (H, Lq, Lk)
    w = w.mean(0) if head < 0 else w[head]  # (Lq, Lk): a mean of rows that sum to 1 still sums to 1
    fig = attention_heatmap(w, q_labels, k_labels, query_title=q_title, key_title=k_title,
                            title=f"{KIND_NAMES[kind]} · {t('layer')} {pick(layer)} · {t('head')} {pick(head)}")
    show_matrix(fig, w, name=f"{kind}-L{pick(layer)}-H{pick(head)}", row_labels=q_labels, col_labels=k_labels, key="detail")

with tab_head:
    explain("One line from each query (left) to each key (right); the stronger the attention, the darker "
            "the line. One colour per head — switch heads on and off.",
            "왼쪽의 각 쿼리에서 오른쪽의 각 키로 선을 긋습니다. 어텐션이 강할수록 선이 진합니다. 헤드마다 "
            "색이 다르며, 헤드를 켜고 끌 수 있습니다.")
    hl = st.selectbox(t("layer"), range(n_layers), format_func=lambda i: f"{i + 1}", key="insp_hv_layer")
    head_word = t("head")
    on = st.multiselect(tr("heads shown", "표시할 헤드"), list(range(n_heads)), default=list(range(n_heads)),
                        format_func=lambda i: f"{head_word} {i + 1}", key="insp_hv_heads")
    if on:
        show_figure(ins.head_view(weights[hl], q_labels, k_labels, on, query_title=q_title, key_title=k_title),
                    name=f"headview-{kind}-L{hl + 1}", key="headview")
    else:
        st.info(tr("Pick at least one head.", "헤드를 하나 이상 고르세요."))

with tab_steps:
    if arch != "encoder-decoder" or not steps:
        st.info(tr("Decoding steps are shown for translation models.", "디코딩 단계는 번역 모델에서 보여 줍니다."))
    else:
        explain("The decoder writes one token per step. At step *t* it looks at the source through "
                "cross-attention (the row below) and scores every token of the vocabulary.",
                "디코더는 한 단계에 토큰 하나를 씁니다. *t* 단계에서 크로스 어텐션으로 소스를 보고(아래 막대), "
                "어휘의 모든 토큰에 점수를 매깁니다.")
        tstep = (st.slider(tr("step", "단계"), 1, len(steps), 1, key="insp_step") - 1) if len(steps) > 1 else 0
        sl = st.selectbox(t("layer"), range(n_layers), index=n_layers - 1, format_func=lambda i: f"{i + 1}", key="insp_step_layer")
        chosen = tok.id_to_piece(steps[tstep].token)
        st.markdown(tr(f"Step {tstep + 1}: the model wrote **`{ins.label(chosen)}`** with probability "
                       f"{steps[tstep].prob:.3f}.", f"{tstep + 1}단계: 모델이 확률 {steps[tstep].prob:.3f}로 "
                       f"**`{ins.label(chosen)}`** 토큰을 썼습니다."))
        cross = att.stack("cross")[sl, 0, :, tstep].float().cpu()  # (H, Ls)
        c1, c2 = st.columns(2)
        with c1:
            show_figure(ins.bar_chart(cross.mean(0), src_labels, horizontal=True,
                                      title=tr(f"cross-attention, layer {sl + 1}, mean of heads", f"크로스 어텐션, 레이어 {sl + 1}, 헤드 평균"),
                                      x_title=t("weight"), y_title=tr("source (key)", "소스 (키)")),
                        name=f"step{tstep + 1}-cross", key="steprow")
        with c2:
            top = [(tok.id_to_piece(i), p) for i, p in steps[tstep].top]
            show_figure(ins.bar_chart([p for _, p in top], ins.labels([pc for pc, _ in top]), horizontal=True,
                                      title=tr("top candidates", "상위 후보"), x_title=tr("probability", "확률"),
                                      y_title=tr("token", "토큰"), colour="#d62728"), name=f"step{tstep + 1}-top", key="steptop")

with tab_stats:
    explain("Simple numbers that help find kinds of heads: low **entropy** = focused; **previous** near 1 = "
            "looks at the previous token (a positional head); high **diagonal** = looks at itself; for "
            "cross-attention a low entropy marks an *alignment* head. Click a column to sort.",
            "헤드의 종류를 찾는 데 도움이 되는 간단한 수치입니다. **entropy**가 낮으면 한곳에 집중, **previous**가 1에 "
            "가까우면 바로 앞 토큰을 보는 위치 헤드, **diagonal**이 높으면 자기 자신을 봅니다. 크로스 어텐션에서 "
            "entropy가 낮으면 *정렬(alignment)* 헤드입니다. 열 이름을 눌러 정렬하세요.")
    stats = summarize_heads(att, kind)
    st.dataframe(ins.stats_rows(stats), hide_index=True)
    st.markdown(tr("**Averages per layer and over all heads**", "**레이어별, 전체 헤드 평균**"))
    st.dataframe(ins.averages(stats), hide_index=True)
