"""Ask: a question in, live stage progress, then the answer with its facts kept apart."""

from __future__ import annotations

import time
from typing import Any

import streamlit as st

from pages import _common as ui
from pipeline.core.errors import WorkbenchError
from pipeline.core.messages import render
from pipeline.frontends import views
from pipeline.jobs import JobQueue, make_queue, submit_rerun, submit_session
from pipeline.store.lease import events
from pipeline.tools.incidents import load_worlds, sample_notice, world_by_id

# How often a follower reads new stage events from the store.
FOLLOW_POLL_S = 0.3


def init_state() -> None:
    st.session_state.setdefault("ask_question", "")
    st.session_state.setdefault("ask_session", st.query_params.get("session"))
    # After a reload the URL names the session: its question goes back into the box.
    sid = st.session_state["ask_session"]
    if sid and not st.session_state["ask_question"]:
        row = ui.store().get_session(sid)
        st.session_state["ask_question"] = (row or {}).get("question") or ""


def sidebar() -> None:
    s = ui.settings()
    with st.sidebar:
        if s.provider != "offline":
            st.caption(f"{ui.t('engine.model')}: {ui.md(s.openai.model if s.provider == 'openai' else s.model)}")


def _use_sample(question: str) -> None:
    st.session_state["ask_question"] = question
    st.session_state["ask_go"] = True


def samples() -> None:
    s = ui.settings()
    worlds = load_worlds(s.incidents_dir)
    if not worlds:
        return
    with st.expander(ui.t("ask.samples"), expanded=not st.session_state.get("ask_session")):
        for world in worlds:
            questions = world.questions_zh if ui.lang() == "zh" else world.questions_en
            title = world.title_zh if ui.lang() == "zh" else world.title_en
            st.markdown(f"**{ui.md(title)}** · {ui.md(world.id)}")
            cols = st.columns(max(1, len(questions)))
            for i, (col, q) in enumerate(zip(cols, questions, strict=False)):
                col.button(ui.md(q), key=f"ask_sample_{world.id}_{i}", on_click=_use_sample, args=(q,),
                           width="stretch")


class Progress:
    """Draws each stage event as it arrives, one st.status box per stage."""

    def __init__(self) -> None:
        self.tools: Any = None
        self.tool_count = 0

    def __call__(self, stage: str, data: dict[str, Any]) -> None:
        handler = getattr(self, f"on_{stage}", None)
        if handler:
            handler(data)

    def on_session(self, data: dict[str, Any]) -> None:
        st.caption(ui.md(f"{ui.t('common.session')} {data['session_id']} · {data.get('world') or '-'} · "
                         f"{data.get('provider')} · {data.get('shape')}"))
        if data.get("world"):
            st.info(render(sample_notice(world_by_id(ui.settings().incidents_dir, data["world"])), ui.lang()))

    def on_planner(self, data: dict[str, Any]) -> None:
        plan = data.get("plan") or {}
        with st.status(f"{ui.t('stage.planner')} · {ui.t('stage.skill')} {ui.md(plan.get('skill', ''))}",
                       state="complete"):
            ui.html_block('<ol class="wb-list">' + "".join(f"<li>{ui.esc(s)}</li>" for s in plan.get("steps", []))
                          + "</ol>")
            st.dataframe([{"tool": c.get("tool_name"), "arguments": str(c.get("arguments")), "purpose": c.get("purpose")}
                          for c in plan.get("tool_calls", [])], hide_index=True)

    def on_tool(self, data: dict[str, Any]) -> None:
        if self.tools is None:
            self.tools = st.status(ui.t("stage.collector"), state="running", expanded=True)
        self.tool_count += 1
        err = f" — {ui.esc(data['error'])}" if data.get("error") else ""
        with self.tools:
            ui.html_block(f"<div>{ui.pill(data.get('status'))} #{ui.esc(data['id'])} <b>{ui.esc(data['tool'])}</b> "
                          f"<span class='wb-muted'>{ui.esc(data.get('arguments'))}</span> · "
                          f"{ui.esc(data.get('latency_ms'))} ms{err}</div>")

    def on_collector(self, data: dict[str, Any]) -> None:
        summary = (data.get("summary") or {}).get("collection_summary", "")
        if self.tools is None:
            self.tools = st.status(ui.t("stage.collector"))
        self.tools.update(label=f"{ui.t('stage.collector')} · {ui.md(summary)}", state="complete", expanded=False)
        self.tools = None

    def on_digest(self, data: dict[str, Any]) -> None:
        digests = data.get("digests") or []
        with st.status(f"{ui.t('stage.digest')} · {len(digests)}", state="complete"):
            st.dataframe([{"digest_id": d.get("digest_id"), "tool": d.get("tool"),
                           "sources": str(d.get("source_invocation_ids")), "summary": d.get("summary")}
                          for d in digests], hide_index=True)

    def on_diagnosis(self, data: dict[str, Any]) -> None:
        st.status(f"{ui.t('stage.diagnosis')} · {data.get('chars', 0)} {ui.t('stage.chars')}", state="complete")

    def on_verification(self, data: dict[str, Any]) -> None:
        gate = data.get("gatekeeper_result") or {}
        label = (f"{ui.t('stage.verification')} · {ui.t('common.gatekeeper')} {ui.md(gate.get('status'))} · "
                 f"{ui.t('common.verdict')} {ui.md(data.get('verdict'))}")
        with st.status(label, state="complete"):
            st.write(f"{ui.t('common.parse')}: {ui.md(data.get('parse_status'))}")
            if gate.get("failed_rules"):
                st.write(f"{ui.t('common.failed_rules')}: {ui.md(', '.join(gate['failed_rules']))}")
            if gate.get("warnings"):
                st.write(f"{ui.t('common.warnings')}: {ui.md(', '.join(gate['warnings']))}")
            for e in gate.get("errors", [])[:20]:
                ui.html_block(f"<div class='wb-muted'>{ui.esc(e.get('rule_id'))} @ {ui.esc(e.get('target'))}: "
                              f"{ui.esc(ui.say(str(e.get('message')), e.get('msg')))}</div>")

    def on_retry(self, data: dict[str, Any]) -> None:
        ctx = data.get("retry_context") or {}
        with st.status(ui.t("stage.retry"), state="complete"):
            st.write(ctx)

    def on_failed(self, data: dict[str, Any]) -> None:
        st.status(f"{ui.t('ask.failed')}: {ui.md(data.get('stage'))}", state="error")


@st.cache_resource(show_spinner=False)
def _queue(url: str) -> JobQueue:
    # One per server process: the in-process pool (SQLite) or the PostgreSQL queue's client.
    return make_queue(ui.settings(), ui.store())


def run(question: str) -> None:
    """Queue the session; it runs on a worker, not in this script, so closing the tab stops nothing."""
    s = ui.settings()
    try:
        sid = submit_session(_queue(s.db_url), s, ui.store(), question)
    except WorkbenchError as exc:
        st.warning(ui.md(exc))
        return
    st.session_state["ask_session"] = sid
    ui.refresh_session_reads(sid)


def follow(session_id: str) -> None:
    """Draw a queued or running session's stage events from the store as workers write them;
    a reload or another browser following the same session sees the same progress."""
    store, progress, seen = ui.store(), Progress(), 0
    while True:
        row = store.get_session(session_id)
        for event_id, stage, data in events(store, session_id, after=seen):
            progress(stage, data)
            seen = event_id
            # Each new box is brought into view as it is drawn: the boxes grow below the fold.
            ui.scroll_here(f"wb-progress-{event_id}", f"{session_id} {event_id}", block="end")
        if row is None or row["status"] not in ("queued", "running"):
            break
        time.sleep(FOLLOW_POLL_S)
    ui.refresh_session_reads(session_id)


def interrupted(session_id: str, error: str) -> None:
    st.warning(f"{ui.t('ask.interrupted')}: {ui.md(error)}")
    if st.button(ui.t("ask.rerun"), key=f"ask_rerun_{session_id}"):
        st.session_state["ask_session"] = submit_rerun(_queue(ui.settings().db_url), ui.store(), session_id)
        st.rerun()


def _items(title: str, items: list[str]) -> None:
    st.markdown(f"**{title}**")
    if not items:
        st.caption(ui.t("ask.none"))
        return
    ui.html_block('<ul class="wb-list">' + "".join(f"<li>{ui.esc(i)}</li>" for i in items) + "</ul>")


def answer(session_id: str) -> None:
    r = ui.record(ui.settings().db_url, session_id)
    if r is None:
        return
    view = views.answer_view(r)
    st.divider()
    ui.scroll_here("wb-answer", f"answer {session_id}")
    head, link = st.columns([3, 2])
    with head:
        st.subheader(ui.t("ask.answer"))
        ui.verdict_badge(view.verdict, r.marks)
    with link:
        ui.trace_link(session_id, ui.t("ask.open_trace"))
    if r.status == "failed":
        st.error(f"{ui.t('ask.failed')}: {ui.md(r.error)}")
    ui.text_block(view.lead)
    with st.expander(ui.t("ask.full_answer")):
        ui.text_block(view.final_answer)
    ui.scope_block(r)

    st.markdown(f"**{ui.t('ask.confirmed')}**")
    if not view.confirmed:
        st.caption(ui.t("ask.none"))
    facts = []
    for fact in view.confirmed:
        evidence = "".join(
            f"<div class='wb-ev'>↳ {ui.esc(e.tool_name)} #{ui.esc(', #'.join(map(str, e.source_invocation_ids)))}"
            + (f" · {ui.esc(e.digest_id)}" if e.digest_id else "")
            + f" · “{ui.esc(e.evidence_excerpt)}”</div>"
            for e in fact.evidence
        )
        facts.append(f"<li>{ui.esc(fact.claim_text)} <span class='wb-muted'>[{ui.esc(fact.claim_id)} · "
                     f"{ui.esc(fact.claim_type)}]</span>{evidence}</li>")
    if facts:
        ui.html_block('<ul class="wb-list">' + "".join(facts) + "</ul>")
    left, right = st.columns(2)
    with left:
        _items(ui.t("ask.hypotheses"), [h.hypothesis_text + (
            f" — {ui.t('ask.gaps').lower()}: {'; '.join(h.needed_evidence)}" if h.needed_evidence else "")
            for h in view.hypotheses])
        _items(ui.t("ask.gaps"), view.missing_info)
    with right:
        _items(ui.t("ask.actions"), [a.action_text + (f" — {a.reason}" if a.reason else "") for a in view.actions])
        if view.rationale:
            st.markdown(f"**{ui.t('ask.rationale')}**")
            ui.text_block(view.rationale)


def body() -> None:
    st.title(ui.t("ask.title"))
    st.caption(ui.engine_caption())
    samples()
    with st.form("ask_form", border=False):
        st.text_area(ui.t("ask.question"), key="ask_question", placeholder=ui.t("ask.placeholder"), height=80)
        submitted = st.form_submit_button(ui.t("ask.submit"), type="primary")
    if submitted or st.session_state.pop("ask_go", False):
        question = st.session_state["ask_question"]
        if not question.strip():
            st.warning(ui.t("ask.empty"))
        else:
            run(question)
    sid = st.session_state.get("ask_session")
    if sid:
        # Set on every run that shows an answer, not only after the run that made it: a rerun
        # racing the first one (a second click) could otherwise leave the URL at "/".
        st.query_params["session"] = sid
        row = ui.store().get_session(sid)
        if row and row["status"] in ("queued", "running"):
            follow(sid)
            row = ui.store().get_session(sid)
        if row and row["status"] == "interrupted":
            interrupted(sid, row.get("error") or "")
        answer(sid)


ui.page_start()
init_state()
sidebar()
body()
