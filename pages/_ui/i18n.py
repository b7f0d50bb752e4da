"""The page language and the words in it: labels and engine messages from the catalogue (docs/i18n.md).

A label id is a literal at its call, t("sessions.title"), so `pybabel extract` finds it; an id the page
looks up later is marked where it is written, N_("nav.ask"), and a family read by a value the page
holds is named by its prefix, named("mark.", mark)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from pages._ui import markup
from pages._ui.reads import settings
from pipeline.core.messages import family, localized, symptom_name, tr, value_name


def lang() -> str:
    value = st.session_state.get("lang")
    return value if value in ("en", "zh") else settings().ui.language


def say(text: str, message: Any) -> str:
    """An engine message (gatekeeper finding, reason, coverage) in the page language."""
    return localized(text, message, lang())


def t(key: str, **kw: Any) -> str:
    """The label `key` in the page language, its placeholders filled."""
    return tr(key, lang(), **kw)


def named(prefix: str, value: str, **kw: Any) -> str:
    """The label of `value` in the family `prefix` ("mark.", "ungated"); a value without one stays itself."""
    text = family(prefix, lang()).get(value, value)
    return text.format(**kw) if kw else text


def value(v: str | None) -> str:
    """A status, form or kind id ("fail", "no_data", "root_cause") in the page language."""
    return value_name(v, lang()) if v else "—"


def pill(v: str | None) -> str:
    """A status pill coloured by its id and showing its words."""
    return markup.pill(v, value(v) if v else None)


def field(key: str) -> str:
    """A YAML key with its label ("通过阈值 (passThreshold)"): the key stays what the YAML says."""
    label = family("field.", lang()).get(key)
    return f"{label} ({key})" if label and label != key else key


def N_(key: str) -> str:  # noqa: N802 - gettext's name for "extract this id, look it up later"
    """`key` unchanged: marks a label id that t() looks up later, so the extraction lists it."""
    return key



def symptom(symptom: str) -> str:
    """A symptom id in the reader's language ("memory" -> "内存问题"); an older scope's trigger word as written."""
    return symptom_name(symptom, lang())
