"""Eval: run the fixture suite with the rules in force or the Rules page's candidate, as a job
(pipeline/jobs): it runs on the server's queue, not in this page's script run, so a click, another
page or a reload leaves it running; the page finds it in the store, shows n of N and can stop it.
Every run is kept (pipeline/eval/history.py), so results survive the browser session and two runs
compare."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

import streamlit as st

from pages._ui import frame, i18n, identity, markup, reads, widgets
from pipeline.eval import history
from pipeline.eval.history import ActiveRun, CandidateTexts, EvalArgs, EvalRun
from pipeline.eval.runner import Expectation, StoredResult, described, failure_lines
from pipeline.jobs import submit_job
from pipeline.jobs.records import request_cancel

SOURCES = ("force", "candidate")
FOLLOW_POLL_S = 1.0


def _candidate() -> CandidateTexts | None:
    """The Rules page's candidate texts, when it has one and it is valid."""
    if "rules_index" not in st.session_state:
        return None
    from pipeline.frontends.views import rules as rules_view

    index, meta = st.session_state["rules_index"], st.session_state["rules_meta"]
    rules, _ = rules_view.check_rules(index, meta)
    return None if rules is None else {"index": index, "metadata": meta}


def sidebar() -> str:
    with st.sidebar:
        source = st.radio(i18n.t("eval.rules"), SOURCES, key="eval_rules", bind="query-params",
                          format_func=lambda v: i18n.named("eval.rules.", v))
    return source or "force"


def submit(source: str, who: str) -> None:
    """Queue the run; its job writes each fixture's result as it goes (pipeline.jobs.tasks.run_eval)."""
    candidate = _candidate() if source == "candidate" else None
    if source == "candidate" and candidate is None:
        st.warning(i18n.t("eval.no_candidate"))
    args: EvalArgs = {"who": who, "origin": "page"}
    if candidate is not None:
        args["candidate"] = candidate
    submit_job(reads.queue(), reads.store(), "eval", args)


def _who(who: str, origin: str) -> str:
    """A run's author; an unnamed one is named by where it was asked (not "—")."""
    return who or i18n.named("eval.origin.", origin or "unknown")


@st.fragment(run_every=FOLLOW_POLL_S)
def follow(run_id: str) -> None:
    """The run under way, redrawn from the store every second; once it has ended the whole page
    reruns and shows it. Only this part reruns meanwhile: the page stays usable."""
    now = next((r for r in history.active_runs(reads.store()) if r.id == run_id), None)
    if now is None:
        st.rerun(scope="app")
    who = _who(now.who, now.origin)
    if now.total is None:
        st.progress(0.0, text=i18n.t("eval.queued", who=markup.md(who)))
    else:
        text = i18n.t("eval.progress", n=now.done, total=now.total, who=markup.md(who))
        if now.current:
            text += f" · {markup.md(now.current)}"
        st.progress(now.done / max(1, now.total), text=text)
    if now.stopping:
        st.caption(i18n.t("eval.stopping"))
    else:
        # A callback: it runs before the rerun the click starts, which then draws "stopping".
        def cancel(run_id: str = now.id) -> None:
            request_cancel(reads.store(), run_id)

        st.button(i18n.t("eval.cancel"), key=f"eval_cancel_{now.id}", on_click=cancel)


def _just_ended(active: list[ActiveRun]) -> None:
    """A run this browser session followed that has ended becomes the run shown, compared with
    the one before it. The runs followed are every run under way the page drew, so a reload or
    another tab that finds a run follows it as the tab that started it does."""
    running = [r.id for r in active]
    ended = [i for i in st.session_state.get("eval_following", []) if i not in running]
    st.session_state["eval_following"] = running
    if ended:
        st.session_state["eval_shown"] = ended[-1]
        for key in ("eval_after", "eval_before"):
            st.session_state.pop(key, None)
        reads.refresh_session_reads()


def _rules(run: EvalRun) -> str:
    """The stored label in the page's words; a candidate keeps its hash so two runs can be matched."""
    if run.rules.startswith("candidate"):
        return i18n.t("eval.rules.candidate") + f" {run.rules.removeprefix('candidate').strip()}".strip()
    if run.rules == history.SHIPPED:
        return i18n.t("rules.shipped_comment")
    return run.rules or "—"


def _score(run: EvalRun) -> str:
    """The score, and for a run that did not finish how far it got."""
    if run.complete:
        return run.score
    return run.score + " · " + i18n.named("eval.status.", run.status, n=len(run.results), total=run.total or "?")


def _label(run: EvalRun) -> str:
    return i18n.t("eval.run_label", when=f"{run.started_at:%Y-%m-%d %H:%M}", score=_score(run),
                  rules=_rules(run), who=_who(run.who, run.origin))


def _outcome(result: StoredResult | None) -> str:
    if result is None:
        return "—"
    return f"{i18n.value('pass' if result.get('passed') else 'fail')} {result.get('verdict') or ''}".strip()


def _expected(expect: Expectation) -> str:
    """A fixture's expectations as "key: value", each value in the page language and each key as
    the fixture's YAML writes it (beside its label where it has one)."""
    def shown(v: Any) -> str:
        if isinstance(v, list):
            return ", ".join(map(shown, v))
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k}: {shown(x)}" for k, x in v.items()) + "}"
        return i18n.value(v) if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    return "; ".join(f"{i18n.field(k)}: {shown(v)}" for k, v in expect.items())


def _table(columns: tuple[str, ...], rows: list[list[str]], css: str = "") -> None:
    """An HTML table headed in the page language whose cells wrap: a grid would load Streamlit's
    Arrow code in the browser for a few rows (docs/benchmarks.md), and cut long cells at 1280 px.
    `rows` hold markup already escaped."""
    head = "".join("<th>" + markup.esc(i18n.named("eval.col.", name)) + "</th>" for name in columns)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    markup.html_block(f'<table class="wb-queue {css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>')


def results(run: EvalRun) -> None:
    """The run's fixtures, failures first (what a tuner came to see), as a table whose cells wrap
    at 1280 px; a fixture's name opens its session's trace."""
    rows = sorted(run.results, key=lambda r: (r["passed"], r["name"]))
    c1, c2 = st.columns([1, 3])
    c1.metric(i18n.t("eval.pass_rate"), run.score)
    c2.caption(i18n.t("eval.rules_of_run", rules=markup.md(_rules(run)), who=markup.md(_who(run.who, run.origin)),
                      when=f"{run.started_at:%Y-%m-%d %H:%M}"))
    if not run.complete:
        st.warning(i18n.named("eval.status.", run.status, n=len(run.results), total=run.total or "?"))
    body = []
    for r in rows:
        name = markup.esc(r["name"])
        if r.get("session_id"):
            link = f"trace?{urlencode({'session': r['session_id'], 'lang': i18n.lang()})}"
            name = f'<a href="{markup.esc(link)}" target="_self">{name}</a>'
        body.append([name, markup.esc(i18n.value("pass" if r["passed"] else "fail")), markup.esc(r.get("verdict") or ""),
                     "<br>".join(markup.esc(f) for f in failure_lines(r, i18n.lang())),
                     markup.esc(_expected(r["expected"])), markup.esc(described(r, i18n.lang()))])
    _table(("fixture", "result", "verdict", "failures", "expected", "description"), body, "wb-eval")
    st.caption(i18n.t("eval.open_hint"))


def past_runs(runs: list[EvalRun]) -> None:
    st.subheader(i18n.t("eval.history"))
    _table(("when (UTC)", "score", "rules", "who", "run"),
           [[f"{r.started_at:%Y-%m-%d %H:%M}", markup.esc(_score(r)), markup.esc(_rules(r)),
             markup.esc(_who(r.who, r.origin)), markup.esc(r.id)] for r in runs], "wb-runs")


def comparison(runs: list[EvalRun]) -> None:
    st.subheader(i18n.t("eval.compare"))
    if len(runs) < 2:
        st.caption(i18n.t("eval.one_run"))
        return
    by_id = {r.id: r for r in runs}
    ids = list(by_id)
    c1, c2 = st.columns(2)
    after = c1.selectbox(i18n.t("eval.after"), ids, index=0, placeholder=i18n.t("common.choose_one"), key="eval_after",
                         format_func=lambda i: _label(by_id[i]))
    before = c2.selectbox(i18n.t("eval.before"), ids, index=1, placeholder=i18n.t("common.choose_one"), key="eval_before",
                          format_func=lambda i: _label(by_id[i]))
    changes = history.compare(by_id[before], by_id[after])
    st.caption(i18n.t("eval.changed", n=sum(c.changed for c in changes)))
    _table(("fixture", "changed", "before", "after", "failures after"),
           [[markup.esc(c.name), "≠" if c.changed else "", markup.esc(_outcome(c.before)), markup.esc(_outcome(c.after)),
             "<br>".join(markup.esc(f) for f in (failure_lines(c.after, i18n.lang()) if c.after else []))] for c in changes], "wb-diff")


def body(source: str) -> None:
    st.title(i18n.t("eval.title"))
    st.caption(widgets.engine_caption())
    c1, c2 = st.columns([2, 1], vertical_alignment="bottom")
    with c1:
        who = identity.reviewer_name("reviewer")  # the name the Trace page labels reviews with
    active = history.active_runs(reads.store())
    slot = c2.empty()
    if not active and slot.button(i18n.t("eval.run"), type="primary", key="eval_run"):
        submit(source, who)
        # One run at a time: the button goes in this run (a st.rerun here lost the new run's
        # fragment, whose timer then asked the server for a fragment it no longer had).
        slot.empty()
        active = history.active_runs(reads.store())
    _just_ended(active)
    for run in active:
        follow(run.id)
    runs = history.list_runs(reads.store())
    if not runs:
        if not active:
            st.info(i18n.t("eval.not_run"))
        return
    by_id = {r.id: r for r in runs}
    if st.session_state.get("eval_shown") not in by_id:
        st.session_state["eval_shown"] = runs[0].id
    shown = st.selectbox(i18n.t("eval.shown"), list(by_id), placeholder=i18n.t("common.choose_one"), key="eval_shown",
                         format_func=lambda i: _label(by_id[i]))
    results(by_id[shown])
    past_runs(runs)
    comparison(runs)


frame.page_start()
body(sidebar())
