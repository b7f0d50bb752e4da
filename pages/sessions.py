"""Sessions: the review queue. Filters live in the URL, paging and charts run in SQL."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from urllib.parse import urlencode

import streamlit as st

from pages._ui import frame, i18n, markup, reads, widgets
from pipeline.frontends.views import sessions as sessions_view
from pipeline.gatekeeper.rules import RULES
from pipeline.runs import review_queue
from pipeline.store import SessionFilter
from pipeline.store.record import SessionRow

PAGE_SIZE = 50
REVIEWED = ("no", "yes", "any")
CHART_COLORS = {"PASS": "#2b8a3e", "LOW_CONFID": "#e67700", "REJECT": "#c92a2a", "none": "#868e96"}


def _day(value: date | None, end: bool) -> datetime | None:
    if value is None:
        return None
    return datetime.combine(value, time.max if end else time.min, tzinfo=UTC)


def _show_all() -> None:
    # Runs before the filter widgets are drawn (a callback): every stored session, eval runs too.
    for key in ("sessions_verdicts", "sessions_gate", "sessions_statuses"):
        st.session_state[key] = []
    for key in ("sessions_service", "sessions_text", "sessions_rule"):
        st.session_state[key] = ""
    for key in ("sessions_since", "sessions_until"):
        st.session_state[key] = None
    st.session_state["sessions_reviewed"] = "any"
    st.session_state["sessions_needs_person"] = False
    st.session_state["sessions_eval"] = True


def _why(r: SessionRow) -> list[str]:
    said = {"composer_findings": i18n.t("sessions.composer_findings"), "gatekeeper_warn": i18n.t("common.gatekeeper") + " warn"}
    why = [said.get(w, w) for w in r.queued_for]
    return [i18n.t("sessions.queued_for", why=", ".join(why))] if why else []


def sidebar() -> review_queue.QueueFilter:
    with st.sidebar:
        st.subheader(i18n.t("sessions.filters"))
        needs = st.toggle(i18n.t("sessions.needs_person"), True, key="sessions_needs_person", bind="query-params",
                          help=i18n.t("sessions.needs_person_help"))
        include_eval = st.toggle(i18n.t("sessions.eval"), False, key="sessions_eval", bind="query-params")
        verdicts = st.multiselect(i18n.t("sessions.verdicts"), list(widgets.VERDICTS), placeholder=i18n.t("common.choose_many"), key="sessions_verdicts",
                                  bind="query-params")
        gate = st.multiselect(i18n.t("sessions.gate"), list(widgets.GATE_STATUSES), placeholder=i18n.t("common.choose_many"), key="sessions_gate",
                              bind="query-params")
        reviewed = st.segmented_control(
            i18n.t("sessions.reviewed"), list(REVIEWED), default="no", required=True, key="sessions_reviewed",
            format_func=lambda v: i18n.named("sessions.reviewed.", v), bind="query-params",
            help=i18n.t("sessions.reviewed_help"))
        rule = st.selectbox(i18n.t("sessions.rule"), ["", *RULES], placeholder=i18n.t("common.choose_one"), key="sessions_rule", bind="query-params")
        since = st.date_input(i18n.t("sessions.since"), value=None, key="sessions_since", bind="query-params")
        until = st.date_input(i18n.t("sessions.until"), value=None, key="sessions_until", bind="query-params")
        service = st.text_input(i18n.t("sessions.service"), key="sessions_service", bind="query-params")
        text = st.text_input(i18n.t("sessions.text"), key="sessions_text", bind="query-params")
        statuses = st.multiselect(i18n.t("sessions.statuses"), ["completed", "failed", "running"],
                                  placeholder=i18n.t("common.choose_many"), key="sessions_statuses", bind="query-params")
    base = SessionFilter(
        verdicts=list(verdicts), gatekeeper_statuses=list(gate), rule_id=rule or None,
        since=_day(since, False), until=_day(until, True), service=(service or "").strip() or None,
        text=(text or "").strip() or None, statuses=list(statuses),
    )
    return review_queue.QueueFilter(base, needs_person=bool(needs), include_eval=bool(include_eval),
                             reviewed={"no": False, "yes": True}.get(reviewed or "any"))


def run_samples() -> None:
    from pipeline.eval.demo import run_demo  # only an empty store needs the sample set (and its imports)

    bar = st.progress(0.0)

    def progress(n: int, total: int, question: str) -> None:
        bar.progress(n / total, text=markup.md(question))

    run_demo(reads.settings(), reads.store(), language=i18n.lang(), on_progress=progress)
    reads.refresh_session_reads()


def empty_store() -> None:
    from pipeline.eval.demo import demo_runs

    st.info(i18n.t("sessions.empty_store"))
    n = len(demo_runs(reads.settings(), i18n.lang()))
    row = st.container(horizontal=True, vertical_alignment="center")
    if row.button(i18n.t("sessions.run_samples", n=n), type="primary", key="sessions_run_samples"):
        run_samples()
        st.rerun()
    with row:
        st.page_link("pages/ask.py", label=i18n.t("sessions.go_ask"), icon=":material/chat:")


def table(rows: list[SessionRow]) -> None:
    """The queue as links to each session's trace: one click opens it in this tab, a middle click
    in a new one. HTML, not a grid: st.dataframe and the charts both need Streamlit's Arrow code in
    the browser, which held the page's first open back by about 0.6 s (docs/benchmarks.md). Long
    questions wrap, so no column is cut at 1280 px."""
    head = "".join(f"<th>{markup.esc(title)}</th>" for title in (
        i18n.t("common.session"), i18n.t("common.time"), i18n.t("common.question"), i18n.t("common.verdict"),
        i18n.t("common.failed_rules"), i18n.t("common.groundedness"), i18n.t("common.review")))
    body = []
    for r in rows:
        link = f"trace?{urlencode({'session': r.id, 'lang': i18n.lang()})}"
        verdict = widgets.verdict_shown(r.verdict, r.verdict_at_ask, r.rules_version, r.rules_version_at_ask) or r.status
        notes = [*(i18n.named("mark.", m) for m in r.marks), *_why(r)]
        g = r.groundedness
        bar = "" if g is None else (f'<span class="wb-bar"><span style="width:{max(0.0, min(1.0, g)) * 100:.0f}%">'
                                    f"</span></span> {g:.2f}")
        body.append(
            f'<tr data-session="{markup.esc(r.id)}"><td><a href="{markup.esc(link)}" target="_self">{markup.esc(r.id)}</a></td>'
            f"<td>{markup.esc(r.created_at.strftime('%m-%d %H:%M') if r.created_at else '')}</td>"
            f'<td class="wb-question"><a href="{markup.esc(link)}" target="_self">{markup.esc(r.question)}</a></td>'
            f"<td>{markup.esc(' · '.join([verdict, *notes]))}</td>"
            f"<td>{'<br>'.join(markup.esc(rule) for rule in r.failed_rules)}</td><td>{bar}</td>"
            f"<td>{markup.esc(r.review_label or '')}</td></tr>")
    markup.html_block(f'<table class="wb-queue"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>')


def _bars(title: str, rows: list[dict[str, object]], encoding: dict[str, object]) -> dict[str, object]:
    return {"title": title, "height": 220, "data": {"values": rows}, "mark": {"type": "bar", "tooltip": True},
            "encoding": encoding}


def charts(stats: review_queue.QueueStats) -> None:
    """Vega-Lite, Streamlit's own charts: plotly's 4.7 MB bundle held a first open of this page back by
    about 3 s in the browser (docs/benchmarks.md, first open of every page)."""
    c1, c2, c3 = st.columns(3)
    count = {"field": "n", "type": "quantitative", "title": None}
    shown = [v for v in (*widgets.VERDICTS, "none") if any(verdict == v for _, verdict, _ in stats.per_day)]
    c1.vega_lite_chart(spec=_bars(i18n.t("sessions.per_day"), [
        {"day": d, "verdict": v, "n": n} for d, v, n in stats.per_day], {
        "x": {"field": "day", "type": "ordinal", "title": None, "axis": {"labelAngle": 0}},
        "y": {**count, "stack": "zero"},
        "color": {"field": "verdict", "title": None, "legend": {"orient": "bottom"},
                  "scale": {"domain": shown, "range": [CHART_COLORS[v] for v in shown]}},
    }), width="stretch", key="sessions_chart_days")
    if stats.failed_rules:
        c2.vega_lite_chart(spec=_bars(i18n.t("sessions.rule_counts"), [
            {"rule": rule, "n": n} for rule, n in stats.failed_rules.items()], {
            "y": {"field": "rule", "type": "nominal", "title": None, "sort": "-x", "axis": {"labelLimit": 170}},
            "x": count, "color": {"value": CHART_COLORS["REJECT"]},
        }), width="stretch", key="sessions_chart_rules")
    else:
        c2.markdown("**" + i18n.t("sessions.rule_counts") + "**")
        c2.caption(i18n.t("sessions.no_failed_rules"))
    if not stats.groundedness:  # no session with a score: an empty chart only logs "Infinite extent"
        c3.markdown("**" + i18n.t("sessions.histogram") + "**")
        c3.caption(i18n.t("sessions.no_groundedness"))
        return
    # Every tenth is a bar, the empty ones too, in order: the gaps are part of the picture.
    bins = [f"{b:.1f}–{b + 0.1:.1f}" for b, _ in stats.groundedness]
    c3.vega_lite_chart(spec=_bars(i18n.t("sessions.histogram"), [
        {"bin": label, "n": n} for label, (_, n) in zip(bins, stats.groundedness, strict=True)], {
        "x": {"field": "bin", "type": "ordinal", "title": None, "sort": bins,
              "axis": {"labelAngle": 0, "labelExpr": "slice(datum.label, 0, 3)"}},
        "y": count, "color": {"value": "#3b5bdb"},
    }), width="stretch", key="sessions_chart_ground")


def exports(f: review_queue.QueueFilter) -> None:
    # One row sized to the labels: fixed columns cut a label longer than its share of the width.
    row = st.container(horizontal=True)
    for export in sessions_view.queue_exports(reads.settings(), reads.store(), f):
        row.download_button(i18n.named("sessions.export_", export.kind), export.build, file_name=export.file_name,
                            mime=export.mime, key=f"sessions_{export.kind}", on_click="ignore")


def body(f: review_queue.QueueFilter) -> None:
    st.title(i18n.t("sessions.title"))
    url = reads.settings().db_url
    # One grouped scan gives the charts and the count; the rows are one walk of an index.
    stats = reads.queue_stats(url, f)
    total = stats.total
    if not total:
        _, everything = reads.list_sessions(url, SessionFilter(), 1, 0)
        if not everything:
            empty_store()
            return
        st.info(i18n.t("sessions.no_match_of", n=everything))
        st.button(i18n.t("sessions.show_all"), on_click=_show_all, key="sessions_show_all_btn")
        return
    # The charts are drawn only while their tab is open: Vega and the Arrow code they need held
    # the queue's first open back (docs/benchmarks.md, first open of every page).
    queue, charted = st.tabs([i18n.t("sessions.queue_tab"), i18n.t("sessions.charts_tab")], key="sessions_tab",
                             on_change="rerun")
    with queue:
        pages = max(1, -(-total // PAGE_SIZE))
        left, right = st.columns([1, 5], vertical_alignment="bottom")
        page = left.number_input(i18n.t("sessions.page"), min_value=1, max_value=pages, step=1, key="sessions_page",
                                 bind="query-params")
        page = min(max(1, int(page or 1)), pages)
        rows = reads.queue_rows(url, f, PAGE_SIZE, (page - 1) * PAGE_SIZE)
        first = (page - 1) * PAGE_SIZE + 1
        right.caption(i18n.t("sessions.count", total=total, first=first, last=first + len(rows) - 1))
        table(rows)
        exports(f)
    if charted.open:
        with charted:
            charts(stats)


frame.page_start()
body(sidebar())
