"""Overview: the architecture, the paper's configurations and what each page teaches."""
import streamlit as st

from app.i18n import tr
from app.pages_list import PAGES
from app.resources import preset_parameter_count
from app.ui import explain
from model.config import PAPER_PARAMS, PRESETS

st.title(tr("Attention Atlas", "어텐션 아틀라스"))
explain(
    "An interactive companion to *Attention Is All You Need* (Vaswani et al., 2017). Every figure "
    "in this app is computed live by a real Transformer written in plain PyTorch — change the "
    "inputs and watch the numbers change.",
    "*Attention Is All You Need* (Vaswani 외, 2017)를 직접 만져 보며 배우는 도구입니다. 이 앱의 모든 "
    "그림은 순수 PyTorch로 작성한 실제 Transformer가 그 자리에서 계산합니다. 입력을 바꾸면 숫자도 "
    "함께 바뀝니다.",
)

st.header(tr("The architecture", "아키텍처"))
left, right = st.columns([3, 2])
enc, dec = tr("Encoder (×N)", "인코더 (×N)"), tr("Decoder (×N)", "디코더 (×N)")
self_a = tr("encoder self-attention\\n(all → all)", "인코더 셀프 어텐션\\n(전체 → 전체)")
masked = tr("masked decoder self-attention\\n(past and present only)", "마스크드 디코더 셀프 어텐션\\n(과거와 현재만)")
cross = tr("encoder–decoder attention\\n(target queries → source keys)", "인코더–디코더 어텐션\\n(타깃 쿼리 → 소스 키)")
ffn = tr("feed-forward", "피드포워드")
addnorm = tr("add & norm", "잔차 연결 & 정규화")
dot = f"""
digraph G {{
  rankdir=BT; node [shape=box, style="rounded,filled", fontname="sans-serif", fontsize=11];
  src [label="{tr('source tokens', '소스 토큰')}", fillcolor="#eeeeee"];
  tgt [label="{tr('target tokens (shifted right)', '타깃 토큰 (오른쪽으로 한 칸 이동)')}", fillcolor="#eeeeee"];
  semb [label="{tr('embedding × √d_model + positional encoding', '임베딩 × √d_model + 위치 인코딩')}", fillcolor="#fff3cd"];
  temb [label="{tr('embedding × √d_model + positional encoding', '임베딩 × √d_model + 위치 인코딩')}", fillcolor="#fff3cd"];
  subgraph cluster_enc {{ label="{enc}"; style=rounded; color="#1f77b4";
    esa [label="{self_a}", fillcolor="#cfe2f3"]; en1 [label="{addnorm}", fillcolor="#ffffff"];
    eff [label="{ffn}", fillcolor="#d9ead3"]; en2 [label="{addnorm}", fillcolor="#ffffff"];
    esa -> en1 -> eff -> en2; }}
  subgraph cluster_dec {{ label="{dec}"; style=rounded; color="#d62728";
    dsa [label="{masked}", fillcolor="#f4cccc"]; dn1 [label="{addnorm}", fillcolor="#ffffff"];
    dca [label="{cross}", fillcolor="#d9d2e9"]; dn2 [label="{addnorm}", fillcolor="#ffffff"];
    dff [label="{ffn}", fillcolor="#d9ead3"]; dn3 [label="{addnorm}", fillcolor="#ffffff"];
    dsa -> dn1 -> dca -> dn2 -> dff -> dn3; }}
  out [label="{tr('linear (shared weights) → softmax → next-token probabilities', '선형 변환(가중치 공유) → 소프트맥스 → 다음 토큰 확률')}", fillcolor="#eeeeee"];
  src -> semb -> esa; tgt -> temb -> dsa; en2 -> dca [label="K, V", color="#7f3fbf"]; dn3 -> out;
}}"""
with left:
    st.graphviz_chart(dot)
with right:
    explain(
        "**Three kinds of attention** live in this one model:\n\n"
        "1. **Encoder self-attention** — every source token looks at every source token.\n"
        "2. **Masked decoder self-attention** — each target token looks only at the tokens before "
        "it and itself, so the model cannot peek at the word it must predict.\n"
        "3. **Encoder–decoder (cross) attention** — queries come from the decoder, keys and values "
        "from the encoder's output: this is where the translation is *aligned*.\n\n"
        "Each sublayer is wrapped as `LayerNorm(x + Dropout(Sublayer(x)))` (post-LN, as in the "
        "paper). Embeddings are multiplied by √d_model and share one matrix with the output "
        "projection.",
        "이 하나의 모델 안에 **세 종류의 어텐션**이 있습니다.\n\n"
        "1. **인코더 셀프 어텐션** — 모든 소스 토큰이 모든 소스 토큰을 봅니다.\n"
        "2. **마스크드 디코더 셀프 어텐션** — 각 타깃 토큰은 자기 자신과 그 앞의 토큰만 봅니다. "
        "그래서 예측해야 할 단어를 미리 엿볼 수 없습니다.\n"
        "3. **인코더–디코더(크로스) 어텐션** — 쿼리는 디코더에서, 키와 값은 인코더 출력에서 옵니다. "
        "번역의 *정렬*(alignment)이 일어나는 곳입니다.\n\n"
        "각 서브레이어는 `LayerNorm(x + Dropout(Sublayer(x)))`로 감싸집니다(논문과 같은 post-LN). "
        "임베딩에는 √d_model을 곱하고, 출력 투영과 같은 행렬을 공유합니다.",
    )

st.header(tr("The paper's two models", "논문의 두 모델"))
explain(
    "Parameter counts below are computed right now by instantiating `model.Transformer` with each "
    "configuration (on PyTorch's *meta* device, so no memory is used), next to the numbers printed "
    "in Table 3 of the paper. Both use a shared 37,000-token vocabulary and tied embeddings.",
    "아래 파라미터 수는 각 설정으로 `model.Transformer`를 지금 만들어 세어 본 값입니다(PyTorch의 "
    "*meta* 장치를 써서 메모리를 쓰지 않습니다). 옆에는 논문 표 3에 인쇄된 수를 두었습니다. 두 모델 "
    "모두 37,000개 토큰의 공유 어휘와 임베딩 가중치 공유를 씁니다.",
)
rows = []
for name in ("paper_base", "paper_big"):
    cfg = PRESETS[name]
    counted = preset_parameter_count(name)
    paper = PAPER_PARAMS[name]
    rows.append({
        tr("model", "모델"): "Transformer (base)" if name == "paper_base" else "Transformer (big)",
        "N": cfg.n_encoder_layers, "d_model": cfg.d_model, "d_ff": cfg.d_ff, "h": cfg.n_heads,
        "d_k = d_v": cfg.d_head, "P_drop": cfg.dropout, "ε_ls": cfg.label_smoothing,
        tr("parameters (computed)", "파라미터 (계산값)"): f"{counted / 1e6:.1f}M",
        tr("parameters (paper)", "파라미터 (논문)"): f"{paper / 1e6:.0f}M",
        tr("difference", "차이"): f"{(counted - paper) / paper:+.1%}",
    })
st.dataframe(rows, hide_index=True)
explain(
    "The small difference comes from details the paper does not print (for example whether the "
    "output layer has a bias, and exactly how the 37k vocabulary was counted).",
    "작은 차이는 논문에 적혀 있지 않은 세부 사항(출력층의 편향 유무, 37k 어휘를 정확히 어떻게 "
    "셌는지 등)에서 옵니다.",
)

st.header(tr("What each page teaches", "각 페이지에서 배우는 것"))
for p in PAGES[1:]:
    st.page_link(f"../pages/{p.file}", label=tr(p.en, p.ko), icon=p.icon)
    st.caption(tr(p.blurb_en, p.blurb_ko))
