"""Symbols are written one way: a superscript letter is drawn (QKᵀ, Wᴼ, or $W^O$ in prose maths), never typed as
a caret ("W^O" beside a drawn "QKᵀ"). Checked on every catalogue and prose file, outside maths and code."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted([*(ROOT / "app" / "locales").rglob("*.toml"), *(ROOT / "app" / "content").rglob("*.md")])
MATHS_OR_CODE = re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$|(`+).+?\1", re.S)
CARET_LETTER = re.compile(r"[A-Za-z]\^[A-Za-z]")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_superscript_letter_typed_as_a_caret(path):
    text = MATHS_OR_CODE.sub(" ", path.read_text(encoding="utf-8"))
    assert [m.group(0) for m in CARET_LETTER.finditer(text)] == []
