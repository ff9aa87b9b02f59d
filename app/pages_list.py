"""The app's pages, in the paper's order. Files live in the top-level pages/ folder (its subfolders,
pages/family/ and pages/views/, hold what the pages import, never a page: only the files listed here are
handed to st.navigation); titles and one-line descriptions are in the catalogue (`pages.<url>.title`,
`pages.<url>.blurb`)."""
from __future__ import annotations

from dataclasses import dataclass

from app.i18n import catalogue, t


@dataclass(frozen=True)
class PageInfo:
    file: str
    url: str
    icon: str

    @property
    def section(self) -> str:
        return SECTION_OF.get(self.file, "paper")

    @property
    def title(self) -> str:
        """The title in the current language."""
        return t(f"pages.{self.url}.title")

    @property
    def blurb(self) -> str:
        return t(f"pages.{self.url}.blurb")

    def title_in(self, lang: str) -> str:
        """The title in a given language (browser tests click sidebar links by title)."""
        return catalogue(lang)[f"pages.{self.url}.title"]



# Sidebar sections in order; pages not listed in SECTION_OF belong to "paper".
SECTIONS = ["start", "paper", "live"]
SECTION_OF = {"overview.py": "start", "tour.py": "start", "inspector.py": "live", "train.py": "live", "study.py": "live"}

PAGES: list[PageInfo] = [
    PageInfo("overview.py", "overview", ":material/home:"),
    PageInfo("tour.py", "tour", ":material/tour:"),
    PageInfo("attention.py", "attention", ":material/calculate:"),
    PageInfo("multihead.py", "multihead", ":material/view_module:"),
    PageInfo("positional.py", "positional", ":material/waves:"),
    PageInfo("masks.py", "masks", ":material/grid_on:"),
    PageInfo("recipe.py", "recipe", ":material/trending_up:"),
    PageInfo("why.py", "why", ":material/speed:"),
    PageInfo("limits.py", "limits", ":material/straighten:"),
    PageInfo("family.py", "family", ":material/family_history:"),
    PageInfo("inspector.py", "inspector", ":material/visibility:"),
    PageInfo("train.py", "train", ":material/model_training:"),
    PageInfo("study.py", "study", ":material/table_chart:"),
]
