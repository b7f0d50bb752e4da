"""Sessions: the review queue. Filters live in the URL, paging and charts run in SQL."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from datetime import UTC, date, datetime, time

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from pages import _common as ui
from pipeline import views
from pipeline.bundle import export_bundle
from pipeline.gatekeeper.rules_schema import PARAM_MODELS
from pipeline.incidents import load_worlds
from pipeline.session import SessionFailed, run_session
from pipeline.store import SessionFilter

PAGE_SIZE = 50
REVIEWED = ("no", "yes", "any")
CHART_COLORS = {"PASS": "#2b8a3e", "LOW_CONFID": "#e67700", "REJECT": "#c92a2a", "none": "#868e96"}


def _day(value: date | None, end: bool) -> datetime | None:
    if value is None:
        return None
    return datetime.combine(value, time.max if end else time.min, tzinfo=UTC)


def _show_all() -> None:
    # Runs before the filter widgets are drawn (a callback, or the flag set after the samples ran).
    st.session_state["sessions_verdicts"] = list(ui.VERDICTS)
    st.session_state["sessions_reviewed"] = "any"


def sidebar() -> SessionFilter:
    if st.session_state.pop("sessions_show_all", False):
        _show_all()
    with st.sidebar:
        st.subheader(ui.t("sessions.filters"))
        verdicts = st.multiselect(ui.t("sessions.verdicts"), list(ui.VERDICTS), default=["LOW_CONFID", "REJECT"],
                                  key="sessions_verdicts", bind="query-params")
        gate = st.multiselect(ui.t("sessions.gate"), list(ui.GATE_STATUSES), key="sessions_gate",
                              bind="query-params")
        reviewed = st.segmented_control(
            ui.t("sessions.reviewed"), list(REVIEWED), default="no", required=True, key="sessions_reviewed",
            format_func=lambda v: ui.t(f"sessions.reviewed.{v}"), bind="query-params")
        rule = st.selectbox(ui.t("sessions.rule"), ["", *PARAM_MODELS], key="sessions_rule", bind="query-params")
        since = st.date_input(ui.t("sessions.since"), value=None, key="sessions_since", bind="query-params")
        until = st.date_input(ui.t("sessions.until"), value=None, key="sessions_until", bind="query-params")
        service = st.text_input(ui.t("sessions.service"), key="sessions_service", bind="query-params")
        text = st.text_input(ui.t("sessions.text"), key="sessions_text", bind="query-params")
        statuses = st.multiselect(ui.t("sessions.statuses"), ["completed", "failed", "running"],
                                  key="sessions_statuses", bind="query-params")
    return SessionFilter(
        verdicts=list(verdicts), gatekeeper_statuses=list(gate), rule_id=rule or None,
        since=_day(since, False), until=_day(until, True), service=service.strip() or None,
        reviewed={"no": False, "yes": True}.get(reviewed or "any"), text=text.strip() or None,
        statuses=list(statuses),
    )


def run_samples() -> None:
    s = ui.settings()
    worlds = load_worlds(s.incidents_dir)
    questions = [(w.questions_zh if ui.lang() == "zh" else w.questions_en)[:1] for w in worlds]
    flat = [q for qs in questions for q in qs]
    bar = st.progress(0.0)
    for i, q in enumerate(flat, 1):
        try:
            run_session(q, settings=s, store=ui.store())
        except SessionFailed as exc:
            st.error(str(exc))
        bar.progress(i / len(flat), text=q)
    ui.refresh_session_reads()


def empty_store() -> None:
    st.info(ui.t("sessions.empty_store"))
    worlds = load_worlds(ui.settings().incidents_dir)
    if st.button(ui.t("sessions.run_samples", n=len(worlds)), type="primary", key="sessions_run_samples"):
        run_samples()
        # The samples mostly PASS: show every verdict so a new user sees what just ran.
        st.session_state["sessions_show_all"] = True
        st.rerun()


def table(rows: list[dict]) -> None:
    frame = pd.DataFrame([{
        "trace": f"trace?session={r['id']}",
        "time": r["created_at"],
        "question": r["question"],
        "verdict": r.get("verdict") or "",
        "gatekeeper": r.get("gatekeeper_status") or "",
        "failed rules": list(r.get("failed_rules") or []),
        "groundedness": r.get("groundedness"),
        "review": r.get("review_label") or "",
        "status": r.get("status"),
    } for r in rows])
    picked = st.dataframe(
        frame, hide_index=True, key="sessions_table", on_select="rerun", selection_mode="single-row",
        column_config={
            "trace": st.column_config.LinkColumn(ui.t("common.session"), display_text=r"session=(.*)$"),
            "time": st.column_config.DatetimeColumn(ui.t("common.time"), format="YYYY-MM-DD HH:mm:ss"),
            "question": st.column_config.TextColumn(ui.t("common.question"), width="large"),
            "verdict": st.column_config.TextColumn(ui.t("common.verdict")),
            "gatekeeper": st.column_config.TextColumn(ui.t("common.gatekeeper")),
            "failed rules": st.column_config.ListColumn(ui.t("common.failed_rules")),
            "review": st.column_config.TextColumn(ui.t("common.review")),
            "status": st.column_config.TextColumn(ui.t("common.status")),
            "groundedness": st.column_config.ProgressColumn(ui.t("common.groundedness"), min_value=0.0,
                                                            max_value=1.0, format="%.2f"),
        },
    )
    selected = picked.selection.rows if picked else []
    if selected:
        ui.trace_link(rows[selected[0]]["id"], ui.t("sessions.open") + f": {rows[selected[0]]['id']}")


def charts(f: SessionFilter) -> None:
    stats = ui.queue_stats(ui.settings().db_url, f)
    if not stats.total:
        return
    c1, c2, c3 = st.columns(3)
    layout = {"height": 260, "margin": {"l": 10, "r": 10, "t": 36, "b": 10}, "showlegend": True,
                  "legend": {"orientation": "h", "y": -0.25}}
    fig = go.Figure()
    for verdict in (*ui.VERDICTS, "none"):
        points = [(d, n) for d, v, n in stats.per_day if v == verdict]
        if points:
            fig.add_bar(x=[d for d, _ in points], y=[n for _, n in points], name=verdict,
                        marker_color=CHART_COLORS[verdict])
    fig.update_layout(barmode="stack", title=ui.t("sessions.per_day"), **layout)
    fig.update_xaxes(type="category")
    c1.plotly_chart(fig, width="stretch", key="sessions_chart_days")
    if stats.failed_rules:
        fig = go.Figure(go.Bar(x=list(stats.failed_rules.values()), y=list(stats.failed_rules), orientation="h",
                               marker_color="#c92a2a"))
        fig.update_layout(title=ui.t("sessions.rule_counts"), **{**layout, "showlegend": False})
        c2.plotly_chart(fig, width="stretch", key="sessions_chart_rules")
    else:
        c2.markdown(f"**{ui.t('sessions.rule_counts')}**")
        c2.caption(ui.t("sessions.no_failed_rules"))
    fig = go.Figure(go.Bar(x=[f"{b:.1f}–{b + 0.1:.1f}" for b, _ in stats.groundedness],
                           y=[n for _, n in stats.groundedness], marker_color="#3b5bdb"))
    fig.update_layout(title=ui.t("sessions.histogram"), **{**layout, "showlegend": False})
    fig.update_xaxes(type="category")
    c3.plotly_chart(fig, width="stretch", key="sessions_chart_ground")


def exports(f: SessionFilter) -> None:
    store = ui.store()

    def to_csv() -> bytes:
        buf = io.StringIO()
        fields = ["id", "created_at", "question", "status", "verdict", "gatekeeper_status", "failed_rules",
                  "groundedness", "services", "provider", "shape", "review_label"]
        writer = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        for row in views.iter_filtered(store, f):
            writer.writerow({**row, "failed_rules": " ".join(row.get("failed_rules") or [])})
        return buf.getvalue().encode("utf-8-sig")

    def to_zip() -> bytes:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            for row in views.iter_filtered(store, f):
                bundle = export_bundle(store, row["id"])
                zf.writestr(f"{row['id']}.json", json.dumps(bundle, ensure_ascii=False, indent=1, default=str))
        return buf.getvalue()

    c1, c2, _ = st.columns([1, 1, 3])
    c1.download_button(ui.t("sessions.export_csv"), to_csv, file_name="sessions.csv", mime="text/csv",
                       key="sessions_csv", on_click="ignore")
    c2.download_button(ui.t("sessions.export_zip"), to_zip, file_name="session-bundles.zip",
                       mime="application/zip", key="sessions_zip", on_click="ignore")


def body(f: SessionFilter) -> None:
    st.title(ui.t("sessions.title"))
    url = ui.settings().db_url
    _, everything = ui.list_sessions(url, SessionFilter(), 1, 0)
    if not everything:
        empty_store()
        return
    charts(f)
    _, total = ui.list_sessions(url, f, 1, 0)
    if not total:
        st.info(ui.t("sessions.no_match_of", n=everything))
        st.button(ui.t("sessions.show_all"), on_click=_show_all, key="sessions_show_all_btn")
        return
    pages = max(1, -(-total // PAGE_SIZE))
    left, right = st.columns([1, 5], vertical_alignment="bottom")
    page = left.number_input(ui.t("sessions.page"), min_value=1, max_value=pages, step=1, key="sessions_page",
                             bind="query-params")
    page = min(max(1, int(page or 1)), pages)
    rows, total = ui.list_sessions(url, f, PAGE_SIZE, (page - 1) * PAGE_SIZE)
    first = (page - 1) * PAGE_SIZE + 1
    right.caption(ui.t("sessions.count", total=total, first=first, last=first + len(rows) - 1))
    table(rows)
    exports(f)


ui.page_start()
body(sidebar())
