"""Badges, the scope line, the engine caption and links to a session's trace, as every page draws them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import streamlit as st

from pages._ui.i18n import lang, named, pill, say, symptom, t, value
from pages._ui.markup import esc, html_block, md
from pages._ui.reads import settings
from pipeline.frontends.views.trace import form_view
from pipeline.store.record import SessionRecord

if TYPE_CHECKING:  # the module moved between Streamlit versions; only the type is needed
    from streamlit.elements.lib.column_types import ColumnConfig

VERDICTS = ("PASS", "LOW_CONFID", "REJECT")
GATE_STATUSES = ("pass", "warn", "fail")
VERDICT_COLORS = {"PASS": "green", "LOW_CONFID": "orange", "REJECT": "red"}
STATUS_COLORS = {"pass": "green", "warn": "orange", "fail": "red", "skipped": "gray"}
REVIEW_LABELS = ("correct", "partially_correct", "incorrect", "hallucination", "needs_follow_up")


def headers(*names: str) -> dict[str, ColumnConfig]:
    """Column configs heading each named column in the page language: a table's header is drawn on a
    canvas, so the row keys themselves stay the same in every language."""
    return {n: st.column_config.Column(named("col.", n)) for n in names}


def scope_block(r: SessionRecord) -> None:
    """What the question asked (law 8) and, once verified, each asked service's coverage."""
    scope = r.question_scope
    if scope is None:
        return
    known = set(scope.known_services)
    services = ", ".join(f"{esc(s)}" + ("" if s in known else " <span class='wb-muted'>(" + esc(t("scope.unknown")) + ")</span>")
                         for s in scope.services) or esc(t("ask.none"))
    window = scope.time_window
    span = (f"{window.text} = " if window and window.text else "") + (
        f"{window.start:%Y-%m-%d %H:%M} – {window.end:%Y-%m-%d %H:%M} UTC" if window and window.start and window.end
        else "—")
    # A clock time without a date: which record's day it was read on (pipeline.text.timewindow).
    anchor = window.anchor if window else None
    if anchor is not None:
        span += " (" + named("scope.anchor.", anchor.kind, service=anchor.service or "*",
                             at=f"{anchor.at:%Y-%m-%d %H:%M} UTC") + ")"
    symptoms = ", ".join(symptom(x.strip()) for x in scope.symptom.split(",") if x.strip()) or "—"
    parts = [esc(t("scope.services")) + f": {services}", esc(t("scope.symptom")) + f": {esc(symptoms)}",
             esc(t("scope.window")) + f": {esc(span)}"]
    form = form_view(scope, r.evaluation)
    if form is not None:
        parts.append(esc(t("scope.form")) + f": {esc(value(form.form))}"
                     + (f" · {esc(form.proposition_text(lang()))}" if form.proposition is not None else ""))
    coverage = r.evaluation.question_coverage if r.evaluation else []
    items = "".join(f"<li>{esc(c.service or '*')} · {esc(symptom(c.symptom))} {pill(c.status)} "
                    f"<span class='wb-muted'>{esc(say(c.detail, c.msg))}</span></li>" for c in coverage)
    if form is not None and form.row is not None:
        # The form row, and the coverage row that decided it (law 8 extended).
        row = form.row
        decided = f"{row.service or '*'} · {symptom(row.symptom)}" + (f" ({value(form.decided_by.status)})" if form.decided_by else "")
        answer = f" {esc(value(row.answer))}" if row.answer else ""
        label, by = esc(t("scope.form_row")), esc(t("scope.decided_by"))
        items += (f"<li>{label} {esc(value(row.form))} {pill(row.status)}{answer} · "
                  f"{by}: {esc(decided)} <span class='wb-muted'>{esc(say(row.detail, row.msg))}</span></li>")
    html_block(f"<div>{' · '.join(parts)}</div>" + (f'<ul class="wb-list">{items}</ul>' if items else ""))



def verdict_badge(verdict: str | None, marks: Sequence[str] = ()) -> None:
    """The verdict and what qualifies it (record.verdict_marks: "ungated", "unverified")."""
    st.badge(verdict or "—", color=VERDICT_COLORS.get(verdict or "", "gray"))  # type: ignore[arg-type]
    for mark in marks:
        st.badge(named("mark.", mark), color="orange" if mark == "ungated" else "red",
                 help=named("mark.", f"{mark}.help"))


def verdict_shown(verdict: str | None, at_ask: str | None, version: int | None, version_at_ask: int | None) -> str:
    """The verdict in force as a line of text, with the verdict at ask and both rule versions where
    applied rules changed it (design law 11): a listed verdict never hides what was said at ask."""
    if not verdict or verdict == at_ask:
        return verdict or ""
    return t("common.at_ask", v=verdict, n="—" if version is None else version, a=at_ask or "—",
             m="—" if version_at_ask is None else version_at_ask)


def status_badge(status: str | None, prefix: str = "") -> None:
    st.badge(md(f"{prefix}{value(status)}"), color=STATUS_COLORS.get(status or "", "gray"))  # type: ignore[arg-type]



def engine_caption() -> str:
    s = settings()
    if s.provider == "offline":
        engine = t("engine.offline")
    else:
        engine = md(f"{s.provider} · {s.openai.model if s.provider == 'openai' else s.model}")
    return t("engine.provider") + f": {engine} · " + t("engine.shape") + ": " + named("engine.shape.", s.shape)


def trace_link(session_id: str, label: str | None = None) -> None:
    st.page_link("pages/trace.py", label=label or t("nav.trace") + f": {md(session_id)}", icon=":material/account_tree:",
                 query_params={"session": session_id})


# selection_mode of tables whose rows open a trace
PICK: tuple[Literal["single-row"], Literal["single-cell"]] = ("single-row", "single-cell")


def open_picked_trace(event: Any, session_ids: list[str | None]) -> None:
    """A table's row or cell click opens that session's trace in this tab, in one click."""
    selection = event.selection if event else None
    picked = [*(selection.rows if selection else []), *(row for row, _ in (selection.cells if selection else []))]
    sid = session_ids[picked[0]] if picked else None
    if sid:  # an eval fixture that could not start has no session
        st.switch_page("pages/trace.py", query_params={"session": sid})
