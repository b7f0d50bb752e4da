"""Eval: run the fixture suite with the rules in force or the Rules page's candidate."""

from __future__ import annotations

import json

import streamlit as st

from pages import _common as ui
from pipeline import views
from pipeline.eval.runner import run_suite
from pipeline.session import rules_in_force

SOURCES = ("force", "candidate")


def init_state() -> None:
    st.session_state.setdefault("eval_results", None)


def _candidate():
    """The Rules page's candidate, when it has one and it is valid."""
    if "rules_index" not in st.session_state:
        return None
    rules, _ = views.check_rules(st.session_state["rules_index"], st.session_state["rules_meta"])
    return rules


def sidebar() -> str:
    with st.sidebar:
        source = st.radio(ui.t("eval.rules"), SOURCES, key="eval_rules", bind="query-params",
                          format_func=lambda v: ui.t(f"eval.rules.{v}"))
    return source or "force"


def run(source: str) -> None:
    s = ui.settings()
    rules = _candidate() if source == "candidate" else None
    if source == "candidate" and rules is None:
        st.warning(ui.t("eval.no_candidate"))
    if rules is None:
        rules, _ = rules_in_force(s, ui.store())
    with st.spinner(ui.t("eval.run")):
        results = run_suite(s, rules=rules, store=ui.store())
    st.session_state["eval_results"] = {"source": source, "rows": [r.as_dict() for r in results]}
    ui.refresh_session_reads()


def body(source: str) -> None:
    st.title(ui.t("eval.title"))
    st.caption(ui.engine_caption())
    if st.button(ui.t("eval.run"), type="primary", key="eval_run"):
        run(source)
    done = st.session_state.get("eval_results")
    if not done:
        st.info(ui.t("eval.not_run"))
        return
    rows = done["rows"]
    passed = sum(r["passed"] for r in rows)
    c1, c2 = st.columns([1, 3])
    c1.metric(ui.t("eval.pass_rate"), f"{passed}/{len(rows)}", f"{passed / len(rows):.0%}" if rows else None,
              delta_color="off")
    c2.caption(f"{ui.t('eval.rules')}: {ui.t('eval.rules.' + done['source'])}")
    st.dataframe([{
        "fixture": r["name"],
        "result": "pass" if r["passed"] else "FAIL",
        "verdict": r.get("verdict") or "",
        "expected": json.dumps(r.get("expected") or {}, ensure_ascii=False),
        "failures": "; ".join(r.get("failures") or []),
        "trace": f"trace?session={r['session_id']}" if r.get("session_id") else None,
        "description": r.get("description", ""),
    } for r in rows], hide_index=True, key="eval_table", column_config={
        "trace": st.column_config.LinkColumn(ui.t("nav.trace"), display_text=r"session=(.*)$"),
        "expected": st.column_config.TextColumn(width="large"),
    })


ui.page_start()
init_state()
body(sidebar())
