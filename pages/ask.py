"""Ask: a question in, live stage progress, then the answer with its facts kept apart."""

from __future__ import annotations

import time
from typing import Any

import streamlit as st

from pages._ui import frame, i18n, markup, reads, widgets
from pipeline.core.errors import WorkbenchError
from pipeline.core.events import (
    Collected,
    Diagnosed,
    Digested,
    Failed,
    Planned,
    Retrying,
    SessionEvent,
    SessionOpened,
    StreamProgress,
    ToolCalled,
    Verified,
)
from pipeline.core.messages import render
from pipeline.frontends.views import ask as ask_view
from pipeline.frontends.views import trace as trace_view
from pipeline.jobs import submit_rerun, submit_session
from pipeline.tools.incidents import load_worlds, sample_notice, world_by_id

# How often a follower reads new stage events from the store.
FOLLOW_POLL_S = 0.3


def init_state() -> None:
    st.session_state.setdefault("ask_question", "")
    st.session_state.setdefault("ask_session", st.query_params.get("session"))
    # After a reload the URL names the session: its question goes back into the box.
    sid = st.session_state["ask_session"]
    if sid and not st.session_state["ask_question"]:
        row = reads.store().get_session(sid)
        st.session_state["ask_question"] = row["question"] if row else ""


def sidebar() -> None:
    s = reads.settings()
    with st.sidebar:
        if s.provider != "offline":
            st.caption(i18n.t("engine.model") + f": {markup.md(s.openai.model if s.provider == 'openai' else s.model)}")


def _use_sample(question: str) -> None:
    st.session_state["ask_question"] = question
    st.session_state["ask_go"] = True


def samples() -> None:
    s = reads.settings()
    worlds = load_worlds(s.incidents_dir)
    if not worlds:
        return
    with st.expander(i18n.t("ask.samples"), expanded=not st.session_state.get("ask_session")):
        for world in worlds:
            questions = ask_view.samples(world, i18n.lang())
            title = world.title_zh if i18n.lang() == "zh" else world.title_en
            st.markdown(f"**{markup.md(title)}** · {markup.md(world.id)}")
            # One flex row, not a column per button (fewer blocks for the browser to lay out); a
            # narrow button cuts a long question: its full text is the button's tooltip.
            row = st.container(horizontal=True)
            for i, q in enumerate(questions):
                row.button(markup.md(q), key=f"ask_sample_{world.id}_{i}", on_click=_use_sample, args=(q,),
                           help=markup.md(q), width="stretch")


class Progress:
    """Draws each stage event as it arrives, one st.status box per stage."""

    def __init__(self) -> None:
        self.tools: Any = None
        self.calls: list[str] = []  # the statuses of the collector box's calls so far
        self.streaming: Any = None  # one line, rewritten as a stage's reply streams in

    def __call__(self, event: SessionEvent) -> None:
        if not isinstance(event, StreamProgress) and self.streaming is not None:  # the stage it followed has ended
            self.streaming.empty()
            self.streaming = None
        match event:
            case StreamProgress():
                self.on_progress(event)
            case SessionOpened():
                self.on_session(event)
            case Planned():
                self.on_planner(event)
            case ToolCalled():
                self.on_tool(event)
            case Collected():
                self.on_collector(event)
            case Digested():
                self.on_digest(event)
            case Diagnosed():
                st.status(i18n.t("stage.diagnosis") + f" · {event.chars} " + i18n.t("stage.chars"), state="complete")
            case Verified():
                self.on_verification(event)
            case Retrying():
                with st.status(i18n.t("stage.retry"), state="complete"):
                    st.write(event.retry_context.model_dump())
            case Failed():
                st.status(i18n.t("ask.failed") + f": {i18n.value(event.stage)}", state="error")

    def on_progress(self, event: StreamProgress) -> None:
        if self.streaming is None:
            self.streaming = st.empty()
        self.streaming.caption(markup.md(ask_view.progress_text(event, i18n.lang())))

    def on_session(self, event: SessionOpened) -> None:
        st.caption(markup.md(i18n.t("common.session") + f" {event.session_id} · {event.world or '-'} · "
                             f"{i18n.value(event.provider)} · {i18n.value(event.shape)}"))

    def on_planner(self, event: Planned) -> None:
        plan = event.plan
        with st.status(i18n.t("stage.planner") + " · " + i18n.t("stage.skill") + f" {markup.md(plan.skill)}",
                       state="complete"):
            markup.html_block('<ol class="wb-list">' + "".join(f"<li>{markup.esc(s)}</li>" for s in plan.steps)
                          + "</ol>")
            st.dataframe([{"tool": c.tool_name, "arguments": str(c.arguments), "purpose": c.purpose}
                          for c in plan.tool_calls], hide_index=True,
                         column_config=widgets.headers("tool", "arguments", "purpose"))

    def on_tool(self, event: ToolCalled) -> None:
        if self.tools is None:
            self.tools = st.status(i18n.t("stage.collector"), state="running", expanded=True)
        self.calls.append(event.status)
        # The call's arguments and a backend's error are data, as the model and the backend wrote them.
        err = f" — <span class='wb-data'>{markup.esc(event.error)}</span>" if event.error else ""
        with self.tools:
            markup.html_block(f"<div>{i18n.pill(event.status)} #{markup.esc(event.id)} <b>{markup.esc(event.tool)}</b> "
                          f"<span class='wb-muted wb-data'>{markup.esc(event.arguments)}</span> · "
                          f"{markup.esc(event.latency_ms)} ms{err}</div>")

    def on_collector(self, event: Collected) -> None:
        # The label counts in the page's words; the summary is the Collector's own output
        # (`collection_summary`), in the question's language or the model's, so it is shown as its text.
        summary = event.summary.collection_summary
        if self.tools is None:
            self.tools = st.status(i18n.t("stage.collector"))
        counts = i18n.t("stage.calls", calls=len(self.calls), ok=self.calls.count("ok"))
        self.tools.update(label=i18n.t("stage.collector") + f" · {counts}", state="complete", expanded=False)
        if summary:
            with self.tools:
                st.caption(i18n.t("stage.collector_said"))
                markup.text_block(summary)
        self.tools, self.calls = None, []

    def on_digest(self, event: Digested) -> None:
        with st.status(i18n.t("stage.digest") + f" · {len(event.digests)}", state="complete"):
            st.dataframe([{"digest_id": d.digest_id, "tool": d.tool, "sources": str(d.source_invocation_ids),
                           "summary": d.summary} for d in event.digests], hide_index=True,
                         column_config=widgets.headers("digest_id", "tool", "sources", "summary"))

    def on_verification(self, event: Verified) -> None:
        gate = event.gatekeeper_result
        label = (i18n.t("stage.verification") + " · " + i18n.t("common.gatekeeper") + f" {i18n.value(gate.status)} · "
                 + i18n.t("common.verdict") + f" {markup.md(event.verdict)}")
        with st.status(label, state="complete"):
            st.write(i18n.t("common.parse") + f": {i18n.value(event.parse_status)}")
            if gate.failed_rules:
                st.write(i18n.t("common.failed_rules") + f": {markup.md(', '.join(gate.failed_rules))}")
            if gate.warnings:
                st.write(i18n.t("common.warnings") + f": {markup.md(', '.join(gate.warnings))}")
            for e in gate.errors[:20]:
                markup.html_block(f"<div class='wb-muted'>{markup.esc(e.rule_id)} @ {markup.esc(e.target)}: "
                              f"{markup.esc(i18n.say(e.message, e.msg))}</div>")


def run(question: str) -> None:
    """Queue the session; it runs on a worker, not in this script, so closing the tab stops nothing."""
    s = reads.settings()
    try:
        sid = submit_session(reads.queue(), s, reads.store(), question)
    except WorkbenchError as exc:
        st.warning(markup.md(exc))
        return
    st.session_state["ask_session"] = sid
    reads.refresh_session_reads(sid)


def follow(session_id: str) -> None:
    """Draw a queued or running session's stage events from the store as workers write them;
    a reload or another browser following the same session sees the same progress."""
    store, progress, seen = reads.store(), Progress(), 0
    while True:
        row = store.get_session(session_id)
        for event_id, event in ask_view.stored_events(store, session_id, after=seen):
            progress(event)
            seen = event_id
            # Each new box is brought into view as it is drawn (the boxes grow below the fold), unless
            # the answer is drawn: the last boxes and the answer can reach the browser together.
            markup.scroll_here(f"wb-progress-{event_id}", f"{session_id} {event_id}", block="end",
                               unless=_answer_once(session_id))
        if row is None or row["status"] not in ("queued", "running"):
            break
        time.sleep(FOLLOW_POLL_S)
    reads.refresh_session_reads(session_id)


def _answer_once(session_id: str) -> str:
    return f"answer {session_id}"


def interrupted(session_id: str, error: str) -> None:
    st.warning(i18n.t("ask.interrupted") + f": {markup.md(error)}")
    if st.button(i18n.t("ask.rerun"), key=f"ask_rerun_{session_id}"):
        st.session_state["ask_session"] = submit_rerun(reads.queue(), reads.store(), session_id)
        st.rerun()


def _items(title: str, items: list[str]) -> None:
    st.markdown(f"**{title}**")
    if not items:
        st.caption(i18n.t("ask.none"))
        return
    markup.html_block('<ul class="wb-list">' + "".join(f"<li>{markup.esc(i)}</li>" for i in items) + "</ul>")


def answer(session_id: str) -> None:
    r = reads.record(reads.settings().db_url, session_id)
    if r is None:
        return
    view = ask_view.answer_view(r)
    st.divider()
    markup.scroll_here("wb-answer", _answer_once(session_id))
    head, link = st.columns([3, 2])
    with head:
        st.subheader(i18n.t("ask.answer"))
        widgets.verdict_badge(view.verdict, r.marks)
    with link:
        widgets.trace_link(session_id, i18n.t("ask.open_trace"))
    if r.status == "failed":
        st.error(i18n.t("ask.failed") + f": {markup.md(r.error)}")
    markup.text_block(view.lead)
    with st.expander(i18n.t("ask.full_answer")):
        markup.text_block(view.final_answer)
    # Why it is not PASS, in the verdict policy's own words for the reader (the rule id a detail).
    reasons = trace_view.verdict_reasons(r.evaluation, i18n.lang()) if r.evaluation else []
    if reasons and view.verdict:
        _items(i18n.t("ask.why", verdict=view.verdict), reasons)
    # Where the evidence came from is a notice under the answer, never in front of it.
    if r.world:
        st.info(render(sample_notice(world_by_id(reads.settings().incidents_dir, r.world)), i18n.lang()))
    widgets.scope_block(r)

    st.markdown("**" + i18n.t("ask.confirmed") + "**")
    if not view.confirmed:
        st.caption(i18n.t("ask.none"))
    facts = []
    for fact in view.confirmed:
        evidence = "".join(
            f"<div class='wb-ev'>↳ {markup.esc(e.tool_name)} #{markup.esc(', #'.join(map(str, e.source_invocation_ids)))}"
            + (f" · {markup.esc(e.digest_id)}" if e.digest_id else "")
            + f" · “{markup.esc(e.evidence_excerpt)}”</div>"
            for e in fact.evidence
        )
        facts.append(f"<li>{markup.esc(fact.claim_text)} <span class='wb-muted'>[{markup.esc(fact.claim_id)} · "
                     f"{markup.esc(i18n.value(fact.claim_type))}]</span>{evidence}</li>")
    if facts:
        markup.html_block('<ul class="wb-list">' + "".join(facts) + "</ul>")
    left, right = st.columns(2)
    with left:
        _items(i18n.t("ask.hypotheses"), [h.hypothesis_text + (
            " — " + i18n.t("ask.gaps").lower() + f": {'; '.join(h.needed_evidence)}" if h.needed_evidence else "")
            for h in view.hypotheses])
        _items(i18n.t("ask.gaps"), view.missing_info)
    with right:
        _items(i18n.t("ask.actions"), [a.action_text + (f" — {a.reason}" if a.reason else "") for a in view.actions])
        if view.rationale:
            st.markdown("**" + i18n.t("ask.rationale") + "**")
            markup.text_block(view.rationale)
    if view.elsewhere:
        with st.expander(i18n.t("ask.elsewhere") + f" ({len(view.elsewhere)})"):
            markup.html_block('<ul class="wb-list">' + "".join(f"<li>{markup.esc(x)}</li>" for x in view.elsewhere) + "</ul>")


def body() -> None:
    st.title(i18n.t("ask.title"))
    st.caption(widgets.engine_caption())
    with st.form("ask_form", border=False):
        st.text_area(i18n.t("ask.question"), key="ask_question", placeholder=i18n.t("ask.placeholder"), height=80)
        submitted = st.form_submit_button(i18n.t("ask.submit"), type="primary")
    if submitted or st.session_state.pop("ask_go", False):
        question = st.session_state["ask_question"]
        if not question.strip():
            st.warning(i18n.t("ask.empty"))
        else:
            run(question)
    # The answer is drawn above the live stage boxes, which stand above the samples: what was
    # asked and answered is on the first screen, the stages and other questions below it.
    answer_slot, progress_slot = st.container(), st.container()
    samples()
    sid = st.session_state.get("ask_session")
    if sid:
        # Set on every run that shows an answer, not only after the run that made it: a rerun
        # racing the first one (a second click) could otherwise leave the URL at "/".
        st.query_params["session"] = sid
        row = reads.store().get_session(sid)
        if row and row["status"] in ("queued", "running"):
            with progress_slot:
                follow(sid)
            row = reads.store().get_session(sid)
        with answer_slot:
            if row and row["status"] == "interrupted":
                interrupted(sid, row.get("error") or "")
            answer(sid)


frame.page_start()
init_state()
sidebar()
body()
