"""Small Streamlit helpers shared by pages."""
from __future__ import annotations

import re

import streamlit as st

from app.charts import matrix_to_csv
from app.i18n import t, tr

# Toolbar with the PNG download button always visible; numbers come as CSV beside the figure.
PLOT_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", s).strip("-").lower() or "figure"


def show_figure(fig, *, name: str, csv: str | None = None, key: str | None = None) -> None:
    """Draw a plotly figure (PNG download from its toolbar) and a CSV download of its numbers."""
    st.plotly_chart(fig, config=PLOT_CONFIG, key=key)
    if csv is not None:
        st.download_button(t("download_csv"), csv, file_name=f"{_slug(name)}.csv", mime="text/csv",
                           key=f"csv-{key or _slug(name)}")


def show_matrix(fig, values, *, name: str, row_labels=None, col_labels=None, key: str | None = None) -> None:
    show_figure(fig, name=name, csv=matrix_to_csv(values, row_labels, col_labels), key=key)


def one_based_slider(label: str, n: int, *, key: str, container=None) -> int:
    """Pick 1…n with a slider. st.slider refuses min_value == max_value, and a model trained with one
    layer or one head has n = 1: then there is nothing to choose, so say so and return 1."""
    where = container if container is not None else st
    if n <= 1:
        where.caption(f"{label}: 1 " + tr("(the only one)", "(하나뿐)"))
        return 1
    return where.slider(label, 1, n, 1, key=key)


def explain(en: str, ko: str) -> None:
    """An explanatory paragraph in the current language."""
    st.markdown(tr(en, ko))


def fail(message_en: str, message_ko: str, detail: str | None = None) -> None:
    """A clear message instead of a traceback."""
    msg = tr(message_en, message_ko)
    st.error(f"{msg}" + (f"\n\n`{detail}`" if detail else ""))
