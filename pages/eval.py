"""Eval: run the fixture suite with the rules in force or the Rules page's candidate."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import streamlit as st

from pages import _common as ui
from pipeline import views
from pipeline.eval.runner import load_fixtures, run_fixture
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
    fixtures = load_fixtures(s.fixtures_dir)
    bar = st.progress(0.0)
    results = []
    with tempfile.TemporaryDirectory(prefix="wb-eval-") as tmp:
        for n, fixture in enumerate(fixtures, 1):
            bar.progress((n - 1) / len(fixtures), text=ui.t("eval.progress", n=n, total=len(fixtures),
                                                               name=fixture.get("name", "")))
            results.append(run_fixture(fixture, settings=s, store=ui.store(), rules=rules, script_dir=Path(tmp)))
    bar.empty()
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
    # Failures first: they are what a tuner came to see.
    rows = sorted(done["rows"], key=lambda r: (r["passed"], r["name"]))
    passed = sum(r["passed"] for r in rows)
    c1, c2 = st.columns([1, 3])
    c1.metric(ui.t("eval.pass_rate"), f"{passed} / {len(rows)}")
    c2.caption(f"{ui.t('eval.rules')}: {ui.t('eval.rules.' + done['source'])}")
    picked = st.dataframe([{
        "fixture": r["name"],
        "result": "pass" if r["passed"] else "FAIL",
        "verdict": r.get("verdict") or "",
        "failures": "; ".join(r["failures"]),
        "expected": json.dumps(r["expected"], ensure_ascii=False),
        "description": r["description"],
    } for r in rows], hide_index=True, key="eval_table", on_select="rerun", selection_mode=ui.PICK,
        column_config={
            "fixture": st.column_config.TextColumn(width=200),
            "result": st.column_config.TextColumn(width=60),
            "verdict": st.column_config.TextColumn(width=95),
            "failures": st.column_config.TextColumn(width=200),
            "expected": st.column_config.TextColumn(width=120),
            "description": st.column_config.TextColumn(width=150),
        })
    st.caption(ui.t("eval.open_hint"))
    ui.open_picked_trace(picked, [r["session_id"] for r in rows])


ui.page_start()
init_state()
body(sidebar())
