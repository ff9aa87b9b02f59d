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


PAGES: list[PageInfo] = [
    PageInfo("overview.py", "overview", "Overview", "개요", ":material/home:",
             "The architecture, the paper's two models and their sizes.",
             "아키텍처 전체 모습, 논문의 두 모델과 그 크기."),
]
