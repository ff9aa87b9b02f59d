"""What the inspector's model reads of the learner's text, and what it says about it (pages/inspector.py): the text
cut to the model's positions (the words past the cut named, never called unknown), a translation model's text
read a sentence at a time (it was trained on single sentences), words written in letters the model never read,
and how its maps' size follows from the pieces. Also the BERT-family encoder's head (class, tags, or none)."""
from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from app.charts.curves import bar_chart
from app.charts.export import csv_text
from app.charts.heatmaps import matrix_heatmap
from app.i18n import catalogue, lang, t
from app.resources import shared_figure
from app.state import keep
from app.ui import show_figure, show_matrix, table, text
from model.data.vocabulary import script_of, sentences, unseen_scripts
from pages.views import inspector as ins

SHOWN_CUT = 80  # characters of the text past the cut quoted in its warning


@dataclass
class Reading:
    """The text as the model reads it: `parts` (each sentence for a translation model, else the whole text), each
    cut to the model's positions; `ids` their token ids as read; `dropped` the text past each cut ('' for none)."""
    parts: list[str]
    ids: list[list[int]]
    dropped: list[str]
    counts: list[int]  # each part's pieces before the cut


def read(text_: str, tok, limit: int, by_sentence: bool) -> Reading:
    parts, ids, dropped, counts = [], [], [], []
    for part in (sentences(text_) or [text_]) if by_sentence else [text_]:
        whole = tok.encode(part)
        kept = whole[:limit]
        read_text = tok.decode(kept) if len(whole) > limit else part
        parts.append(read_text)
        ids.append(kept)
        counts.append(len(whole))
        dropped.append(tok.decode(whole[limit:]).strip() if len(whole) > limit else "")
    return Reading(parts, ids, dropped, counts)


def say_cuts(reading: Reading, limit: int) -> None:
    """A warning for each part longer than the model's positions, quoting what was not read."""
    several = len(reading.parts) > 1
    for i, (n, rest) in enumerate(zip(reading.counts, reading.dropped)):
        if not rest:
            continue
        shown = rest if len(rest) <= SHOWN_CUT else rest[:SHOWN_CUT - 1] + "…"
        head = t("inspector.sentence_n", n=i + 1) + " " if several else ""
        st.warning(head + t("inspector.too_many_tokens", n=n, limit=limit) + " "
                   + t("inspector.not_read", text=ins.code(shown)))


def script_name(script: str) -> str:
    key = f"inspector.script.{script}"
    return t(key) if key in catalogue(lang()) else script.title()


def say_scripts(unknown: list[str], known: frozenset[str], task: str | None) -> None:
    """Words in letters the model never read (Korean typed into the English→Korean model): say what it reads."""
    for script, words in unseen_scripts(unknown, known).items():
        read_ = sorted({script_of(c) for word in known for c in word} - {None})
        st.warning(t("inspector.foreign_script", words=", ".join(ins.code(w) for w in words), script=script_name(script),
                     reads=", ".join(script_name(s) for s in read_) or "?")
                   + (" " + t("inspector.reads_english") if task == "en-ko" else ""))


def pick_sentence(reading: Reading) -> int:
    """With several sentences, the one whose attention is shown below (0-based); 0 for one."""
    n = len(reading.parts)
    if n < 2:
        return 0
    shown = lambda i: f"{i}. {reading.parts[i - 1]}"  # noqa: E731
    return st.selectbox(t("inspector.sentence_shown"), range(1, n + 1), format_func=shown,
                        **keep("insp_sentence", 1, url="sentence", valid=range(1, n + 1))) - 1


def map_note(n_pieces: int, k_labels: list[str] | None, tok) -> str | None:
    """Why a map has more key columns than the tokenization has pieces: the tokens the model adds ([CLS], </s>, a
    decoder's start), named; None when the columns are the pieces (or more than those tokens differ)."""
    if not k_labels or len(k_labels) <= n_pieces:
        return None
    first, separators = ins.special_positions(k_labels, tok)
    added = sorted(set(first + separators))
    if len(added) != len(k_labels) - n_pieces:
        return None
    return t("inspector.map_extra", cols=len(k_labels), n=n_pieces,
             tokens=", ".join(ins.code(k_labels[i]) for i in added))


def encoder_head(filled, meta: dict, view: tuple) -> None:
    """What a BERT-family encoder without a masked-LM head shows: a class, a tag per token, or (no head) one
    sentence on what it cannot show and its hidden states (how alike its output vectors are)."""
    if filled.classes is not None:
        st.subheader(t("inspector.classify.title"))
        label, prob = filled.classes[0]
        if len(filled.classes) == 1:  # a single output: a regression score, not a probability
            st.markdown(t("inspector.classify.score", label=ins.code(label), score=prob))
            return
        st.markdown(t("inspector.classify.result", label=ins.code(label), prob=prob))
        top = filled.classes[:ins.MAX_CLASSES]
        show_figure(bar_chart([c for c, _ in top], [p for _, p in top], horizontal=True, y_range=[0, 1],
                              x_title=t("inspector.probability"), y_title=t("inspector.classify.label")),
                    name="classes", key="classes", csv=csv_text(["label", "probability"], top))
    elif filled.tags is not None:
        st.subheader(t("inspector.tag.title"))
        table(ins.tag_rows(filled.tags, filled.pieces), key="insp-tags")
    else:
        st.info(t("inspector.no_head_mlm"))
        if meta.get("pooling"):
            st.caption(t("inspector.sentence_vectors", pooling=ins.code(str(meta["pooling"]))))
        st.subheader(t("inspector.hidden.title"))
        text("inspector.hidden")
        names = ins.labels(filled.pieces)
        show_matrix(shared_figure("similarity", view, lambda: matrix_heatmap(
            filled.similarity, names, names, zmin=-1, zmax=1, zmid=0, x_title=t("inspector.token"),
            y_title=t("inspector.token"), show_text=len(names) <= ins.MAX_CELL_TEXT)),
                    filled.similarity, name="hidden-similarity", row_labels=names, col_labels=names, key="similarity")
