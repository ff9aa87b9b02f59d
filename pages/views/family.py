"""Shared pieces of the Transformer family page's members (pages/family/*.py): which models of a family
task exist (shipped in assets/models/<task>/ and trained on the training page), and a kept picker whose
loading (cached in app.resources) turns a wrong or damaged file into a message instead of a traceback."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from app.i18n import UserError, t
from app.jobs import runs_dir
from app.resources import load_family_model
from app.state import keep
from app.ui import error
from model.training.checkpoint import CheckpointError
from model.data.corpus import ASSETS

SHIPPED = "shipped"  # the picker's id for the shipped model of a task
MEMBER_OF_TASK = {"mlm": "mlm", "vit-digits": "vit", "detr-shapes": "detr"}  # a run's task -> the member showing it


def family_models(task: str) -> dict[str, Path]:
    """Picker id -> model directory: the shipped model (if present), then every training-page run of this
    task that has saved weights, newest first."""
    from model.family import family_of
    found: dict[str, Path] = {}
    shipped = ASSETS / "models" / task
    if (shipped / "config.json").is_file():
        found[SHIPPED] = shipped
    base = runs_dir()
    if base.is_dir():
        for cfg in sorted(base.glob("*/model/config.json"), key=lambda p: p.stat().st_mtime, reverse=True):
            if family_of(cfg.parent) == task:
                found[f"run: {cfg.parent.parent.name}"] = cfg.parent
    return found


def pick_family_model(task: str, key: str, *, label: str | None = None, where=None):
    """Draw a kept model picker for `task` and return the loaded model, or None after a clear message
    (no model yet, a damaged file, a folder of another family)."""
    where = where or st
    models = family_models(task)
    if not models:
        where.info(t("family.no_model", task=task))
        return None
    names = list(models)
    if len(names) == 1:
        choice = names[0]
    else:
        choice = where.selectbox(label or t("family.model"), names,
                                 format_func=lambda n: t("family.shipped") if n == SHIPPED else n,
                                 **keep(key, names[0], url=key.removeprefix("fam_"), valid=names))
    try:
        return load_family_model(models[choice], task)
    except CheckpointError as e:
        error(UserError("family.cannot_load", name=choice, detail=str(e)[:300]))
        return None


def concept_link(file: str, label: str, icon: str | None = None, where=None) -> None:
    """A link to the concept page a section builds on (`file` in pages/, e.g. "masks.py"). Page paths are
    relative to the entrypoint app/main.py."""
    (where or st).page_link(f"../pages/{file}", label=label, icon=icon)
