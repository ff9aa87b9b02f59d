"""UI strings in English and Korean.

Two ways to write a bilingual string, both resolved against the language chosen in the sidebar:
- `tr("en text", "한국어 텍스트")` for text that belongs to one page (both languages side by side);
- `t("key")` for strings shared across pages, kept in STRINGS below.
`lang()` works outside a Streamlit run too (it then returns "en"), so helpers stay testable."""
from __future__ import annotations

LANGS = {"en": "English", "ko": "한국어"}
DEFAULT = "en"
_state_key = "lang"

STRINGS: dict[str, dict[str, str]] = {
    "app_title": {"en": "Attention Atlas", "ko": "어텐션 아틀라스"},
    "language": {"en": "Language", "ko": "언어"},
    "device": {"en": "Compute device", "ko": "연산 장치"},
    "rows_cols": {"en": "Rows are queries, columns are keys.", "ko": "행은 쿼리(query), 열은 키(key)입니다."},
    "rows_cols_cross": {"en": "Rows: target (query) → columns: source (key).",
                        "ko": "행: 타깃(쿼리) → 열: 소스(키)."},
    "download_csv": {"en": "Download numbers (CSV)", "ko": "숫자 내려받기 (CSV)"},
    "query": {"en": "query", "ko": "쿼리"},
    "key": {"en": "key", "ko": "키"},
    "weight": {"en": "weight", "ko": "가중치"},
    "layer": {"en": "layer", "ko": "레이어"},
    "head": {"en": "head", "ko": "헤드"},
    "error_prefix": {"en": "Could not compute this", "ko": "계산할 수 없습니다"},
}


def lang() -> str:
    try:
        import streamlit as st
        value = st.session_state.get(_state_key, DEFAULT)
    except Exception:  # outside a Streamlit script run
        value = DEFAULT
    return value if value in LANGS else DEFAULT


def tr(en: str, ko: str) -> str:
    """The text in the current language."""
    return ko if lang() == "ko" else en


def t(key: str, **fmt) -> str:
    entry = STRINGS[key]
    text = entry.get(lang(), entry["en"])
    return text.format(**fmt) if fmt else text
