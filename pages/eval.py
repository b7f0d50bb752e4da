"""Eval: run the fixture suite with the rules in force or the Rules page's candidate; every run is
kept (pipeline/eval/history.py), so results survive the browser session and two runs compare."""

from __future__ import annotations

import json
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import streamlit as st

from pages._ui import frame, i18n, identity, markup, reads, widgets
from pipeline.eval import history
from pipeline.eval.history import EvalRun
from pipeline.eval.runner import described, load_fixtures, run_fixture
from pipeline.frontends.views import rules as rules_view

SOURCES = ("force", "candidate")


def _candidate():
    """The Rules page's candidate, when it has one and it is valid."""
    if "rules_index" not in st.session_state:
        return None
    rules, _ = rules_view.check_rules(st.session_state["rules_index"], st.session_state["rules_meta"])
    return rules


def sidebar() -> str:
    with st.sidebar:
        source = st.radio(i18n.t("eval.rules"), SOURCES, key="eval_rules", bind="query-params",
                          format_func=lambda v: i18n.named("eval.rules.", v))
    return source or "force"


def run(source: str, who: str) -> None:
    s = reads.settings()
    candidate = _candidate() if source == "candidate" else None
    if source == "candidate" and candidate is None:
        st.warning(i18n.t("eval.no_candidate"))
    rules, label = history.suite_rules(s, reads.store(), candidate=candidate)
    fixtures = load_fixtures(s.fixtures_dir)
    started = datetime.now(UTC)
    bar = st.progress(0.0)
    results = []
    with tempfile.TemporaryDirectory(prefix="wb-eval-") as tmp:
        for n, fixture in enumerate(fixtures, 1):
            bar.progress((n - 1) / len(fixtures), text=i18n.t("eval.progress", n=n, total=len(fixtures),
                                                               name=markup.md(fixture.get("name", ""))))
            results.append(run_fixture(fixture, settings=s, store=reads.store(), rules=rules, script_dir=Path(tmp)))
    bar.empty()
    # The new run is the one shown; the selectbox below is not drawn yet in this script run.
    st.session_state["eval_shown"] = history.record_run(reads.store(), who=who, rules=label, results=results,
                                                        started_at=started)
    for key in ("eval_after", "eval_before"):  # compare the new run with the one before it
        st.session_state.pop(key, None)
    reads.refresh_session_reads()


def _rules(run: EvalRun) -> str:
    """The stored label in the page's words; a candidate keeps its hash so two runs can be matched."""
    if run.rules.startswith("candidate"):
        return i18n.t("eval.rules.candidate") + f" {run.rules.removeprefix('candidate').strip()}".strip()
    if run.rules == history.SHIPPED:
        return i18n.t("rules.shipped_comment")
    return run.rules or "—"


def _label(run: EvalRun) -> str:
    return i18n.t("eval.run_label", when=f"{run.started_at:%Y-%m-%d %H:%M}", score=run.score,
                rules=_rules(run), who=run.who or "—")


def _outcome(result: dict[str, Any] | None) -> str:
    if result is None:
        return "—"
    return f"{i18n.value('pass' if result.get('passed') else 'fail')} {result.get('verdict') or ''}".strip()


def _expected(expect: dict[str, Any]) -> str:
    """A fixture's expectations as "key: value", each value in the page language and each key as
    the fixture's YAML writes it (beside its label where it has one)."""
    def shown(v: Any) -> str:
        if isinstance(v, list):
            return ", ".join(map(shown, v))
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k}: {shown(x)}" for k, x in v.items()) + "}"
        return i18n.value(v) if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    return "; ".join(f"{i18n.field(k)}: {shown(v)}" for k, v in expect.items())


def _col(name: str, width: int | None) -> Any:
    """A text column headed in the page language (the row keys stay the same in every language)."""
    return st.column_config.TextColumn(i18n.named("eval.col.", name), width=width)


def results(run: EvalRun) -> None:
    # Failures first: they are what a tuner came to see.
    rows = sorted(run.results, key=lambda r: (r["passed"], r["name"]))
    c1, c2 = st.columns([1, 3])
    c1.metric(i18n.t("eval.pass_rate"), run.score)
    c2.caption(i18n.t("eval.rules_of_run", rules=markup.md(_rules(run)), who=markup.md(run.who or "—"),
                    when=f"{run.started_at:%Y-%m-%d %H:%M}"))
    picked = st.dataframe([{
        "fixture": r["name"],
        "result": i18n.value("pass" if r["passed"] else "fail"),
        "verdict": r.get("verdict") or "",
        "failures": "; ".join(r["failures"]),
        "expected": _expected(r["expected"]),
        "description": described(r, i18n.lang()),
    } for r in rows], hide_index=True, key="eval_table", on_select="rerun", selection_mode=widgets.PICK,
        column_config={
            # ~750 px with the pick column: inside the main column at 1280 px, sidebar open.
            "fixture": _col("fixture", 170),
            "result": _col("result", 55),
            "verdict": _col("verdict", 95),
            "failures": _col("failures", 200),
            "expected": _col("expected", 110),
            "description": _col("description", 120),
        })
    st.caption(i18n.t("eval.open_hint"))
    widgets.open_picked_trace(picked, [r["session_id"] for r in rows])


def past_runs(runs: list[EvalRun]) -> None:
    st.subheader(i18n.t("eval.history"))
    st.dataframe([{"when (UTC)": f"{r.started_at:%Y-%m-%d %H:%M}", "score": r.score, "rules": _rules(r),
                   "who": r.who or "—", "run": r.id} for r in runs],
                 hide_index=True, key="eval_history", column_config={
                     "when (UTC)": _col("when (UTC)", 140),
                     "score": _col("score", 70),
                     "rules": _col("rules", 180),
                     "who": _col("who", 140),
                     "run": _col("run", None),
                 })


def comparison(runs: list[EvalRun]) -> None:
    st.subheader(i18n.t("eval.compare"))
    if len(runs) < 2:
        st.caption(i18n.t("eval.one_run"))
        return
    by_id = {r.id: r for r in runs}
    ids = list(by_id)
    c1, c2 = st.columns(2)
    after = c1.selectbox(i18n.t("eval.after"), ids, index=0, placeholder=i18n.t("common.choose_one"), key="eval_after", format_func=lambda i: _label(by_id[i]))
    before = c2.selectbox(i18n.t("eval.before"), ids, index=1, placeholder=i18n.t("common.choose_one"), key="eval_before",
                          format_func=lambda i: _label(by_id[i]))
    changes = history.compare(by_id[before], by_id[after])
    st.caption(i18n.t("eval.changed", n=sum(c.changed for c in changes)))
    st.dataframe([{"fixture": c.name, "changed": "≠" if c.changed else "", "before": _outcome(c.before),
                   "after": _outcome(c.after), "failures after": "; ".join((c.after or {}).get("failures") or [])}
                  for c in changes], hide_index=True, key="eval_diff", column_config={
                      "fixture": _col("fixture", 220),
                      "changed": _col("changed", 70),
                      "before": _col("before", 120),
                      "after": _col("after", 120),
                      "failures after": _col("failures after", 250),
                  })


def body(source: str) -> None:
    st.title(i18n.t("eval.title"))
    st.caption(widgets.engine_caption())
    c1, c2 = st.columns([2, 1], vertical_alignment="bottom")
    with c1:
        who = identity.reviewer_name("reviewer")  # the name the Trace page labels reviews with
    if c2.button(i18n.t("eval.run"), type="primary", key="eval_run"):
        run(source, who)
    runs = history.list_runs(reads.store())
    if not runs:
        st.info(i18n.t("eval.not_run"))
        return
    by_id = {r.id: r for r in runs}
    if st.session_state.get("eval_shown") not in by_id:
        st.session_state["eval_shown"] = runs[0].id
    shown = st.selectbox(i18n.t("eval.shown"), list(by_id), placeholder=i18n.t("common.choose_one"), key="eval_shown", format_func=lambda i: _label(by_id[i]))
    results(by_id[shown])
    past_runs(runs)
    comparison(runs)


frame.page_start()
body(sidebar())
