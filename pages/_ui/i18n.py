"""The page language and the words in it: labels from labels.LABELS, engine messages rendered."""

from __future__ import annotations

from typing import Any

import streamlit as st

from pages._ui.labels import LABELS
from pages._ui.reads import settings
from pipeline.core.messages import localized, symptom_name


def lang() -> str:
    value = st.session_state.get("lang")
    return value if value in ("en", "zh") else settings().ui.language


def say(text: str, message: Any) -> str:
    """An engine message (gatekeeper finding, reason, coverage) in the page language."""
    return localized(text, message, lang())


def t(key: str, **kw: Any) -> str:
    en, zh = LABELS[key]
    text = zh if lang() == "zh" else en
    return text.format(**kw) if kw else text



def symptom(symptom: str) -> str:
    """A symptom id in the reader's language ("memory" -> "内存问题"); an older scope's trigger word as written."""
    return symptom_name(symptom, lang())
