"""The app's pages, in the paper's order. Files live in the top-level pages/ folder."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageInfo:
    file: str
    url: str
    en: str
    ko: str
    icon: str
    blurb_en: str
    blurb_ko: str

    @property
    def section(self) -> str:
        return SECTION_OF.get(self.file, "paper")


# Sidebar sections: (key, English, Korean); pages not listed in SECTION_OF belong to "paper".
SECTIONS = [("start", "Start", "시작"), ("paper", "The paper, step by step", "논문 따라가기"),
            ("live", "A live model", "살아 있는 모델")]
SECTION_OF = {"overview.py": "start", "inspector.py": "live", "train.py": "live"}


PAGES: list[PageInfo] = [
    PageInfo("overview.py", "overview", "Overview", "개요", ":material/home:",
             "The architecture, the paper's two models and their sizes.",
             "아키텍처 전체 모습, 논문의 두 모델과 그 크기."),
    PageInfo("attention.py", "attention", "Scaled dot-product attention", "스케일드 닷-프로덕트 어텐션",
             ":material/calculate:",
             "QKᵀ → ÷√dₖ → mask → softmax → ×V on a worked example you can edit, every number computed.",
             "QKᵀ → ÷√dₖ → 마스크 → 소프트맥스 → ×V를 직접 고칠 수 있는 예제로, 모든 숫자를 계산해 봅니다."),
    PageInfo("multihead.py", "multihead", "Multi-head attention", "멀티헤드 어텐션", ":material/view_module:",
             "Every tensor shape from [B, L, D] to the heads and back, and what several heads buy.",
             "[B, L, D]에서 여러 헤드로 나뉘었다가 다시 합쳐지는 모든 텐서 모양, 그리고 헤드가 여럿인 이유."),
    PageInfo("positional.py", "positional", "Positional encoding", "위치 인코딩", ":material/waves:",
             "The sine waves, why a shift is a rotation, and what attention does without positions.",
             "사인 파형, 위치 이동이 회전인 이유, 위치 정보가 없을 때 어텐션이 하는 일."),
    PageInfo("masks.py", "masks", "Masks and the three attentions", "마스크와 세 가지 어텐션", ":material/grid_on:",
             "Causal and padding masks before and after softmax; encoder, decoder and cross-attention.",
             "소프트맥스 전후의 인과·패딩 마스크, 인코더·디코더·크로스 어텐션."),
    PageInfo("recipe.py", "recipe", "Training recipe", "학습 레시피", ":material/trending_up:",
             "The warm-up learning-rate schedule, Adam's settings and label smoothing.",
             "워밍업 학습률 스케줄, Adam 설정, 레이블 스무딩."),
    PageInfo("why.py", "why", "Why self-attention", "왜 셀프 어텐션인가", ":material/speed:",
             "The paper's complexity table with your own n and d, and recurrence versus attention timed here.",
             "논문의 복잡도 표를 직접 정한 n, d로 계산하고, 순환 신경망과 어텐션을 이 기기에서 재 봅니다."),
    PageInfo("inspector.py", "inspector", "Attention inspector", "어텐션 인스펙터", ":material/visibility:",
             "A trained translation model's heads on the sentence you type: every layer, head and kind.",
             "입력한 문장에 대한 학습된 번역 모델의 모든 레이어·헤드·어텐션 종류."),
    PageInfo("train.py", "train", "Train your own", "직접 학습하기", ":material/model_training:",
             "Train a real Transformer in the background, watch its curves, compare runs, open one in the inspector.",
             "진짜 Transformer를 백그라운드에서 학습하고, 곡선을 지켜보고, 실행을 비교하고, 인스펙터에서 열어 봅니다."),
]
