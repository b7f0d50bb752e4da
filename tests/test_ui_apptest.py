"""Page logic of the workbench through streamlit.testing (no browser): every page against a real store."""

from __future__ import annotations

import csv
import html
import io
import re
import time
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pages._ui.frame import LANG_SWITCH
from pipeline.bundles.session_bundle import export_bundle
from pipeline.core.config import ROOT, Settings
from pipeline.core.messages import tr
from pipeline.runs import review_queue
from pipeline.runs.session import run_session
from pipeline.store import Store
from pipeline.store.listing import session_list
from pipeline.store.record import read_session

APP = str(ROOT / "app.py")
TIMEOUT = 120


def _app(page: str | None = None, **query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    if page:
        at.switch_page(page)
        at.query_params.update(query)
        at.run()
        assert not at.exception, at.exception
    return at


def _html(at: AppTest) -> str:
    return "\n".join(el.proto.body for el in at.get("html"))


def _rules_page(rule: str = "evidence.excerpt_similarity") -> AppTest:
    """The Rules page with one rule's panel open (a panel's inputs are drawn only while it is)."""
    at = _app("pages/rules.py")
    at.session_state[f"rules_panel_{rule}"] = True
    at.session_state["rules_opened"] = rule  # what opening it by hand records (no callback runs here)
    return at.run()


def _queue(at: AppTest) -> list[dict[str, str]]:
    """The Sessions queue as a person reads it: each row's cells by column heading."""
    body = next(el.proto.body for el in at.get("html") if 'class="wb-queue"' in el.proto.body)
    heads = [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", body)]
    rows = re.findall(r"<tr data-session=.*?</tr>", body)
    return [dict(zip(heads, (html.unescape(re.sub(r"<br>", ", ", re.sub(r"<(?!br>)[^>]+>", "", cell))).strip()
                             for cell in re.findall(r"<td[^>]*>(.*?)</td>", row)), strict=True)) for row in rows]


def _shown(markdown: str) -> str:
    """Markdown source as a person reads it: pages/_ui/markup.md's escapes and word joiners gone."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")


def _texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [e.value for e in at.error] + [w.value for w in at.warning] + [s.value for s in at.success]
    return _shown("\n".join(str(p) for p in parts))


def test_ask_a_sample_question_shows_verdict_answer_and_trace_link(store: Store) -> None:
    at = _app()
    sample = next(b for b in at.button if b.key and b.key.startswith("ask_sample_cpu-saturation"))
    sample.click().run()
    assert not at.exception, at.exception
    sessions, total = store.list_sessions(limit=5)
    assert total == 1
    verdict = sessions[0]["verdict"]
    assert any(f"-badge[{verdict}]" in m.value for m in at.markdown)
    assert "Confirmed facts" in _texts(at)
    links = at.get("page_link")
    assert any(sessions[0]["id"] in str(link.proto.page) + str(link.proto.query_string) for link in links)
    assert any(f"session={sessions[0]['id']}" in link.proto.query_string for link in links)


def test_ask_puts_the_question_box_first_and_the_answer_above_the_stages_and_samples(store: Store) -> None:
    """The SRE's first screen: the box, then (once asked) the answer's lead and why it is not PASS
    in plain words, the stages and the sample questions below, the samples folded away."""
    at = _app()
    top = [el.type for el in at.main.children.values()]
    samples = next(e for e in at.expander if e.label == tr("ask.samples", "en"))
    assert top.index("form") < top.index("expander") and samples.proto.expanded
    assert all(b.help == b.label for b in at.button if b.key and b.key.startswith("ask_sample_"))  # full text on hover
    at.text_area(key="ask_question").input("Is the ledger-service leaking memory since 09:00?")
    next(b for b in at.button if b.label == "Ask").click().run()
    assert not next(e for e in at.expander if e.label == tr("ask.samples", "en")).proto.expanded
    texts, shown = _texts(at), _html(at)
    assert "**Why LOW_CONFID**" in "\n".join(m.value for m in at.markdown)
    assert "No evidence was found for ledger-service" in shown and "(rule schema.executor_v2" in shown
    assert shown.index("Cannot tell about a memory problem in ledger-service") < shown.index("No evidence was found")
    assert "Confirmed facts" in texts


def test_ask_an_empty_question_warns_and_stores_nothing(store: Store) -> None:
    at = _app()
    at.text_area(key="ask_question").input("   ")
    next(b for b in at.button if b.label == "Ask").click().run()  # the form's submit button
    assert "empty" in _texts(at)
    assert store.list_sessions()[1] == 0


def _seed_queue(store: Store) -> None:
    for i, verdict in enumerate(["PASS", "LOW_CONFID", "REJECT", "REJECT"]):
        sid = store.create_session(question=f"question {i} about checkout", world=None, shape="split",
                                   provider="offline", model="m",
                                   created_at=datetime(2026, 3, 1 + i, 9, tzinfo=UTC))
        failed = {"PASS": [], "LOW_CONFID": ["evidence.excerpt_similarity"], "REJECT": ["evidence.invocation_ref"]}
        store.update_session(sid, status="completed", verdict=verdict, failed_rules=failed[verdict],
                             gatekeeper_status="pass" if verdict == "PASS" else "fail", groundedness=0.25 * i,
                             services="checkout-service")
        if i == 3:
            store.add_review(session_id=sid, label="hallucination", reviewer="ann")


def _caption_count(at: AppTest) -> str:
    return next(c.value for c in at.caption if "match" in c.value)


def test_sessions_default_queue_and_filters(store: Store) -> None:
    _seed_queue(store)
    at = _app("pages/sessions.py")
    # Default view: what needs a person (here LOW_CONFID and REJECT) that nobody reviewed yet.
    assert _caption_count(at).startswith("2 sessions match")
    assert sorted(row["Verdict"] for row in _queue(at)) == ["LOW_CONFID", "REJECT"]
    # Each row opens its trace in the page language; the charts are drawn only in their tab.
    queue_html = next(el.proto.body for el in at.get("html") if 'class="wb-queue"' in el.proto.body)
    assert all(f'href="trace?session={row["Session"]}&amp;lang=en"' in queue_html for row in _queue(at))
    assert not at.get("vega_lite_chart")
    at.session_state["sessions_tab"] = tr("sessions.charts_tab", "en")
    at.run()
    assert len(at.get("vega_lite_chart")) == 3
    at.session_state["sessions_tab"] = tr("sessions.queue_tab", "en")
    at.segmented_control(key="sessions_reviewed").set_value("any").run()
    assert _caption_count(at).startswith("3 sessions match")
    at.toggle(key="sessions_needs_person").set_value(False).run()
    at.multiselect(key="sessions_verdicts").set_value(["PASS"]).run()
    assert _caption_count(at).startswith("1 sessions match")
    at.multiselect(key="sessions_verdicts").set_value([]).run()
    at.selectbox(key="sessions_rule").set_value("evidence.invocation_ref").run()
    assert _caption_count(at).startswith("2 sessions match")
    at.selectbox(key="sessions_rule").set_value("").run()
    at.text_input(key="sessions_text").input("question 1").run()
    assert _caption_count(at).startswith("1 sessions match")
    at.text_input(key="sessions_text").input("").run()
    # The days are whole days: asked on 2 and 3 March (the sessions are of 1-4 March, 09:00 UTC).
    at.date_input(key="sessions_since").set_value(date(2026, 3, 2)).run()
    at.date_input(key="sessions_until").set_value(date(2026, 3, 3)).run()
    assert _caption_count(at).startswith("2 sessions match")
    assert sorted(row["Time"] for row in _queue(at)) == ["03-02 09:00", "03-03 09:00"]
    assert not at.exception


def test_sessions_empty_store_runs_a_sample_set_with_work_for_a_reviewer(store: Store) -> None:
    at = _app("pages/sessions.py")
    button = at.button(key="sessions_run_samples")
    assert "sessions of every verdict" in button.label
    button.click().run(timeout=300)
    assert not at.exception, at.exception
    rows, total = store.list_sessions(limit=100)
    assert total >= 14 and {r["verdict"] for r in rows} >= {"PASS", "LOW_CONFID", "REJECT"}
    # The default queue now holds sessions, none of them eval runs, with claims to audit.
    queued = [row["Session"] for row in _queue(at)]
    assert len(queued) >= 8 and all(store.reviews(sid) == [] for sid in queued)
    assert sum(bool(read_session(store, sid).claims) for sid in queued) >= 5


def test_sessions_no_match_offers_to_show_all(store: Store) -> None:
    sid = store.create_session(question="all good?", world=None, shape="split", provider="offline", model="m")
    store.update_session(sid, status="completed", verdict="PASS", gatekeeper_status="pass")
    at = _app("pages/sessions.py")
    assert any("None of the 1 stored sessions" in i.value for i in at.info)
    at.button(key="sessions_show_all_btn").click().run()
    assert _caption_count(at).startswith("1 sessions match")


def test_trace_renders_highlights_and_escapes_tool_output(settings: Settings, store: Store) -> None:
    result = run_session("payment API times out since 10:00, what's going on?", settings=settings, store=store)
    at = _app("pages/trace.py", session=result.session_id)
    html = _html(at)
    assert '<mark class="wb-match">' in html
    assert "Composer input" in "\n".join(h.value for h in at.subheader)
    # "since 10:00" has no date: the scope says which record's day it was read on.
    assert "since 10:00 = 2026-11-28 10:00 – 2026-11-28 11:00 UTC (read on the day of the latest log line of " \
           "payment-service, at 2026-11-28 10:59 UTC)" in html
    # The bundled world holds a log line "<script>alert(1)</script> user-agent probe": search the outputs for it.
    inv_ids = [m["id"] for m in store.invocation_meta(result.session_id)]
    found = False
    for inv_id in inv_ids:
        at.selectbox(key="trace_viewer_inv").set_value(inv_id).run()
        at.text_input(key="trace_viewer_query").input("user-agent probe").run()
        html = _html(at)
        if "&lt;script&gt;alert(1)&lt;/script&gt;" in html:
            found = True
            break
    assert found, "the XSS probe line of cpu-saturation was not shown in any output"
    assert "<script>" not in _html(at)


def test_trace_shows_the_question_form_and_the_coverage_row_that_decided_it(settings: Settings, store: Store) -> None:
    result = run_session("Is pricing-service the cause of the checkout 500s?", settings=settings, store=store,
                         world_id="bad-deploy")
    html = _html(_app("pages/trace.py", session=result.session_id))
    assert "cause: pricing-service -&gt; checkout-service" in html
    assert "question form yes or no" in html and "decided by: checkout-service · errors (answered)" in html


def test_trace_shows_a_time_question_s_form_row_with_its_first_record(settings: Settings, store: Store) -> None:
    result = run_session("Since when has checkout-service been returning errors?", settings=settings, store=store,
                         world_id="bad-deploy")
    html = _html(_app("pages/trace.py", session=result.session_id))
    assert "question form since when" in html and "decided by: checkout-service · errors (answered)" in html
    assert "errors in checkout-service first shows at 2026-11-26T16:20:48.164000+00:00" in html


def test_trace_reviews_claim_by_claim_and_every_view_shows_them_at_once(settings: Settings, store: Store) -> None:
    result = run_session("payment API times out since 10:00, what's going on?", settings=settings, store=store)
    sid = result.session_id
    at = _app("pages/trace.py", session=sid)
    # The panel is drawn on demand: a reader who does not label gets no label form.
    assert not [b for b in at.button if b.key.startswith("trace_label_")]
    at.button(key="trace_review_start").click().run()
    at.button(key="trace_label_correct").click().run()
    assert tr("common.need_name", "en") in _texts(at) and store.reviews(sid) == []

    at.text_input(key="reviewer").input("ann").run()
    claims = [c.key for c in result.evaluation.round_audit.executor_structured_output.claims]
    assert "Claim **1** of" in _texts(at)
    at.text_input(key="trace_note_0").input("wrong service").run()
    at.button(key="trace_label_hallucination").click().run()
    assert not at.exception, at.exception
    assert [(r["label"], r["reviewer"], r["note"], r["claim_id"]) for r in store.reviews(sid)] == [
        ("hallucination", "ann", "wrong service", claims[0])]
    # Same run: the claim's card lists the review and the panel moved on to the next claim.
    assert "hallucination (ann)" in _html(at)
    if len(claims) > 1:
        assert "Claim **2** of" in _texts(at)

    at.button(key="trace_session_label_incorrect").click().run()
    assert any("incorrect" in str(df.value) for df in at.dataframe)
    at.switch_page("pages/sessions.py").run()
    assert not at.exception, at.exception
    rows, _ = store.list_sessions()
    assert rows[0]["review_label"] == "incorrect"


def test_trace_shows_an_imported_trace_with_its_origin_and_claim_checks(settings: Settings, store: Store) -> None:
    from pipeline.bundles.trace_import import read_trace
    from pipeline.bundles.trace_session import import_trace
    from pipeline.gatekeeper import load_rules
    from pipeline.llm import make_provider

    text = (Path(__file__).parent / "data" / "otlp_agent_trace.json").read_text(encoding="utf-8")
    result = import_trace(store, read_trace(text, 10**7, 10**6), settings=settings,
                          rules=load_rules(settings.rules_dir), provider=make_provider(settings))
    at = _app("pages/trace.py", session=result.session_id)
    shown = _html(at) + "\n".join(m.value for m in at.markdown) + "\n".join(e.label for e in at.expander)
    assert "imported trace: service.name checkout-agent, trace id 5b8efff798038103d269b633813fc60c" in shown
    assert "direct_observation" in shown


def test_trace_unknown_session_says_so() -> None:
    at = _app("pages/trace.py", session="s-nope")
    assert tr("trace.not_found", "en", sid="s-nope") in _texts(at)


def test_rules_bad_yaml_shows_validation_errors_inline() -> None:
    at = _app("pages/rules.py")
    meta = next(t for t in at.text_area if t.label == "metadata.yaml")
    meta.input(meta.value.replace("passThreshold: 0.5", "passThreshold: 1.5")).run()
    errors = _shown("\n".join(e.value for e in at.error))
    assert "metadata.yaml: ruleMetadata.evidence.excerpt_similarity.params.passThreshold" in errors
    assert at.button(key="rules_apply").disabled
    meta = next(t for t in at.text_area if t.label == "metadata.yaml")
    meta.input("ruleMetadata: [").run()
    assert "metadata.yaml: line" in _shown("\n".join(e.value for e in at.error))


def test_rules_threshold_preview_and_apply_creates_a_version(settings: Settings, store: Store) -> None:
    run_session("payment API times out since 10:00, what's going on?", settings=settings, store=store)
    at = _rules_page()
    box = next(n for n in at.number_input if n.key.endswith("evidence.excerpt_similarity_passThreshold"))
    box.set_value(1.0).run()
    assert "passThreshold: 1.0" in next(t for t in at.text_area if t.label == "metadata.yaml").value
    at.button(key="rules_preview_btn").click().run()
    assert next(m.value for m in at.metric) == "1"
    at.text_input(key="rules_author").input("tuner").run()
    at.text_input(key="rules_comment").input("stricter excerpts").run()
    at.button(key="rules_apply").click().run()
    assert not at.exception, at.exception
    active = store.active_rule_version()
    assert active is not None and active["author"] == "tuner" and active["comment"] == "stricter excerpts"
    assert "passThreshold: 1.0" in active["metadata_yaml"]
    assert tr("rules.applied", "en", id=active["id"]) in _texts(at)


def test_rules_history_starts_at_version_0_diffs_before_apply_and_rolls_back_to_it(
        settings: Settings, store: Store) -> None:
    at = _rules_page()
    # History draws only while its tab is open.
    assert not any("version" in d.value.columns for d in at.dataframe)
    at.session_state["rules_tab"] = tr("rules.history", "en")
    at.run()
    versions = next(d.value for d in at.dataframe if "version" in d.value.columns)
    assert versions["version"].tolist() == [0] and versions["active"].tolist() == [True]
    # The YAML holds the value of the box, and the box keeps it across reruns.
    key = next(n.key for n in at.number_input if n.key.endswith("evidence.excerpt_similarity_passThreshold"))
    at.number_input(key=key).set_value(0.54).run()
    assert "passThreshold: 0.54" in next(t for t in at.text_area if t.label == "metadata.yaml").value
    at.number_input(key=key).set_value(0.7).run()
    assert at.number_input(key=key).value == 0.7
    # Before Apply: the difference against the rules in force.
    diff = "\n".join(c.value for c in at.code)
    assert "-      passThreshold: 0.5" in diff and "+      passThreshold: 0.7" in diff
    at.text_input(key="rules_author").input("tuner").run()
    at.button(key="rules_apply").click().run()
    assert store.active_rule_version()["id"] == 1
    # Roll back to the shipped rules: version 0 is offered, the author is asked beside the button.
    # (Streamlit 1.59's AppTest sends no tab state of its own: each run names the tab.)
    at.session_state["rules_tab"] = tr("rules.history", "en")
    at.run()
    assert at.selectbox(key="rules_rollback_pick").options == ["version 0"]
    assert at.text_input(key="rules_rollback_author").value == "tuner"
    at.session_state["rules_tab"] = tr("rules.history", "en")
    at.button(key="rules_rollback").click().run()
    assert not at.exception, at.exception
    active = store.active_rule_version()
    shipped = (settings.rules_dir / "metadata.yaml").read_text(encoding="utf-8")
    assert active["id"] == 2 and active["comment"] == "roll back to version 0" and active["metadata_yaml"] == shipped
    assert "Version 0 re-applied as version 2." in _texts(at)


def test_rules_apply_on_a_stale_base_is_refused(store: Store, repo_root: Path) -> None:
    at = _rules_page()
    # Another tuner applies while this editor is open.
    index, meta = (repo_root / "rules" / "index.yaml").read_text(), (repo_root / "rules" / "metadata.yaml").read_text()
    other = store.apply_rule_version(index_yaml=index, metadata_yaml=meta, author="bob", comment="", based_on=None)
    box = next(n for n in at.number_input if n.key.endswith("evidence.excerpt_similarity_warnThreshold"))
    box.set_value(0.1).run()
    at.text_input(key="rules_author").input("ann").run()
    at.button(key="rules_apply").click().run()
    assert "Refused" in _texts(at)
    assert store.active_rule_version()["id"] == other
    at.button(key="rules_rebase").click().run()
    at.button(key="rules_apply").click().run()
    assert store.active_rule_version()["author"] == "ann"


def test_rules_editors_only_when_configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "editors.yaml"
    config.write_text("ui:\n  editors: [lead@example.com]\n", encoding="utf-8")
    monkeypatch.setenv("WORKBENCH_CONFIG", str(config))
    at = _rules_page()
    box = next(n for n in at.number_input if n.key.endswith("evidence.excerpt_similarity_passThreshold"))
    box.set_value(0.6).run()
    assert at.button(key="rules_apply").disabled
    assert "Only these editors may apply rules: lead@example.com" in _texts(at)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.user = {"is_logged_in": True, "email": "lead@example.com", "name": "Lead"}
    at.run()
    at.switch_page("pages/rules.py")
    at.session_state["rules_panel_evidence.excerpt_similarity"] = True
    at.session_state["rules_opened"] = "evidence.excerpt_similarity"
    at.run()
    box = next(n for n in at.number_input if n.key.endswith("evidence.excerpt_similarity_passThreshold"))
    box.set_value(0.6).run()
    assert not at.button(key="rules_apply").disabled


def test_language_switch_changes_labels() -> None:
    at = _app()
    at.segmented_control(key=LANG_SWITCH).set_value("zh").run()
    assert any(t.value == tr("ask.title", "zh") for t in at.title)


def _eval_done(at: AppTest, store: Store) -> dict[str, tuple[str, str]]:
    """Wait for the queued eval run to end, rerun the page as its poll would, and read its result
    table: fixture -> (result, failures), in the table's order."""
    from pipeline.eval import history

    for _ in range(3000):
        if not history.active_runs(store):
            break
        time.sleep(0.1)
    at.run()
    assert not at.exception, at.exception
    table = next(h.value for h in at.get("html") if "wb-eval" in h.value)
    rows = re.findall(r"<tr><td>(?:<a [^>]*>)?([^<]+)(?:</a>)?</td><td>(pass|fail)</td><td>[^<]*</td><td>(.*?)</td>", table)
    return {html.unescape(name): (result, html.unescape(failures)) for name, result, failures in rows}


@pytest.mark.slow  # the whole eval suite through the page: test_eval_suite runs it, test_eval_history the page on two fixtures
def test_eval_runs_the_suite_with_the_rules_in_force(store: Store) -> None:
    at = _app("pages/eval.py")
    assert "Not run yet." in "\n".join(i.value for i in at.info)
    at.button(key="eval_run").click().run()
    assert not at.exception, at.exception
    table = _eval_done(at, store)
    results = [result for result, _ in table.values()]
    assert len(table) >= 1 and set(results) <= {"pass", "fail"}
    assert at.metric[0].value == f"{results.count('pass')} / {len(table)}"  # a plain ratio, no percentage badge
    assert results == sorted(results, key=lambda r: r == "pass")  # failures first
    assert store.list_sessions()[1] == len(table)


@pytest.mark.slow  # the whole eval suite through the page; test_eval_history runs the candidate path on two fixtures
def test_eval_uses_the_rules_page_candidate(store: Store) -> None:
    at = _rules_page("evidence.invocation_ref")
    toggle = next(t for t in at.toggle if t.key.endswith("evidence.invocation_ref_enabled"))
    toggle.set_value(False).run()
    at.switch_page("pages/eval.py").run()
    at.radio(key="eval_rules").set_value("candidate").run()
    at.button(key="eval_run").click().run()
    assert not at.exception, at.exception
    table = _eval_done(at, store)
    assert "candidate rules from the Rules page" in _texts(at)
    assert "evidence.invocation_ref" in table["01-fabricated-invocation-id"][1]


def test_rules_warn_before_an_ungated_version_goes_into_force(store: Store) -> None:
    at = _rules_page()
    toggle = next(t for t in at.toggle if t.key.endswith("evidence.excerpt_similarity_enabled"))
    toggle.set_value(False).run()
    at.text_input(key="rules_author").input("tuner").run()
    assert "evidence.excerpt_similarity" in "\n".join(w.value for w in at.warning)
    assert at.button(key="rules_apply").disabled  # until the tuner says so
    at.checkbox(key="rules_ungated_confirm").check().run()
    at.button(key="rules_apply").click().run()
    assert not at.exception, at.exception
    assert store.active_rule_version() is not None


def test_sessions_and_trace_show_the_verdict_in_force_beside_the_one_at_ask(settings: Settings, store: Store) -> None:
    from pipeline.frontends.views import rules_yaml
    from pipeline.frontends.views import trace as trace_view
    from pipeline.runs import rulebook

    sid = run_session("payment API times out since 10:00, what's going on?", settings=settings, store=store).session_id
    index, meta = rulebook.text_in_force(settings, store).texts
    # Every similarity below 1.0 fails as a blocking reject, and missing keywords too: the verdict moves.
    for rule, field, value in (("evidence.excerpt_similarity", "verdictImpact", "reject_on_fail"),
                               ("evidence.excerpt_similarity", "params.passThreshold", 1.0),
                               ("evidence.excerpt_similarity", "params.warnThreshold", 1.0),
                               ("claim.evidence_utilization", "severity", "error"),
                               ("claim.evidence_utilization", "verdictImpact", "reject_on_fail"),
                               ("claim.evidence_utilization", "params.minKeywordCoverage", 1.0),
                               ("claim.evidence_utilization", "enabled", True)):
        index, meta = rules_yaml.set_rule_field(index, meta, rule, field, value)
    version = rulebook.apply_rules(settings, store, (index, meta), author="ana", comment="", based_on=0)
    rulebook.rejudge(settings, store)
    at_ask = read_session(store, sid).verdict
    change = trace_view.verdict_change(settings, store, sid)
    assert change is not None and (change.at_ask, change.in_force, change.version_in_force) == (at_ask, "REJECT",
                                                                                                 version)
    assert change.added and {e.rule_id for e in change.added} <= {"evidence.excerpt_similarity",
                                                                   "claim.evidence_utilization"}
    at = _app("pages/trace.py", session=sid)
    assert f"Verdict in force REJECT (rules version {version}); at ask {at_ask} (rules version 0)" in _texts(at)
    assert tr("trace.findings_added", "en") in _html(at)
    # One verdict badge, the one in force, with the verdict at ask and both versions beside it.
    assert [m.value for m in at.markdown if "-badge[" in m.value and "badge[fail" not in m.value][:1] == [
        ":red-badge[REJECT]"]
    assert f"at ask {at_ask} (rules v0) · in force under rules v{version}" in _texts(at)
    shown = f"REJECT · rules v{version} (at ask {at_ask} · rules v0)"
    picker = at.sidebar.selectbox[0]  # the session picker
    assert picker.format_func(sid).startswith(f"{sid} · {shown}")
    at = _app("pages/sessions.py")
    assert [row["Verdict"] for row in _queue(at)] == [shown]
    # The exports carry both verdicts and both versions.
    everything = review_queue.QueueFilter(needs_person=False, reviewed=None)
    [row] = list(csv.DictReader(io.StringIO(review_queue.export_csv(store, everything).decode("utf-8-sig"))))
    assert (row["verdict"], row["rules_version"], row["verdict_at_ask"], row["rules_version_at_ask"]) == (
        "REJECT", str(version), at_ask, "0")
    bundle = export_bundle(store, sid)["session"]
    assert (bundle["verdict_in_force"], bundle["rules_version_in_force"], bundle["verdict_at_ask"],
            bundle["rules_version_at_ask"]) == ("REJECT", version, at_ask, 0)
    [listed] = session_list(store)  # `workbench sessions --json`
    assert (listed["verdict"], listed["rules_version"], listed["verdict_at_ask"], listed["rules_version_at_ask"]) == (
        "REJECT", version, at_ask, 0)


def test_sessions_and_trace_mark_ungated_and_unverified_verdicts(settings: Settings, store: Store) -> None:
    ungated = settings.model_copy(update={"gatekeeper": settings.gatekeeper.model_copy(update={"enabled": False})})
    sid = run_session("payment API times out since 10:00, what's going on?", settings=ungated, store=store).session_id
    store.update_session(sid, provenance="unverified")  # as an import no trusted key signed
    at = _app("pages/sessions.py")
    assert _caption_count(at).startswith("1 sessions match")  # an unverified PASS waits for a person
    assert [row["Verdict"] for row in _queue(at)] == ["PASS · ungated · unverified"]
    at = _app("pages/trace.py", session=sid)
    badges = [m.value for m in at.markdown if "-badge[" in m.value]
    assert any("badge[ungated]" in b for b in badges) and any("badge[unverified]" in b for b in badges)


def test_with_editors_configured_reviews_are_saved_as_the_signed_in_editor_only(
        settings: Settings, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sid = run_session("payment API times out since 10:00, what's going on?", settings=settings, store=store).session_id
    config = tmp_path / "editors.yaml"
    config.write_text("ui:\n  editors: [lead@example.com]\n", encoding="utf-8")
    monkeypatch.setenv("WORKBENCH_CONFIG", str(config))
    for user, saved in ((None, []), ({"is_logged_in": True, "email": "guest@example.com"}, []),
                        ({"is_logged_in": True, "email": "lead@example.com"}, [("correct", "lead@example.com")])):
        at = AppTest.from_file(APP, default_timeout=TIMEOUT)
        if user:
            at.user = user
        at.run()
        at.switch_page("pages/trace.py")
        at.query_params.update(session=sid, reviewer="lead@example.com")  # a typed name counts for nothing
        at.run()
        assert not [w for w in at.text_input if w.key == "reviewer"]
        at.button(key="trace_review_start").click().run()
        at.button(key="trace_label_correct").click().run()
        assert not at.exception, at.exception
        assert [(r["label"], r["reviewer"]) for r in store.reviews(sid)] == saved
    assert "lead@example.com" in _texts(at)


def test_labelling_the_last_flagged_claim_offers_the_sessions_own_label(settings: Settings, store: Store) -> None:
    from pipeline.eval.demo import run_demo
    from pipeline.frontends.views import trace as trace_view
    from pipeline.store.record import read_session

    flagged: tuple[str, list[str]] | None = None
    for sid in run_demo(settings, store):
        if store.get_session(sid)["status"] != "completed":
            continue
        cards = trace_view.claim_cards(read_session(store, sid))
        ids = [c.claim.claim_id for c in cards if c.has_findings]
        if len(ids) >= 1 and len(ids) == len({*ids}):
            flagged = sid, ids
            break
    assert flagged, "the sample set holds a session with flagged claims"
    sid, ids = flagged
    at = _app("pages/trace.py", session=sid)
    at.text_input(key="reviewer").input("ann").run()
    at.button(key="trace_review_start").click().run()
    offer = "Every flagged claim has a label"
    for _ in ids:  # each label moves the panel on to the next flagged claim
        assert offer not in "\n".join(i.value for i in at.info)
        at.button(key="trace_label_correct").click().run()
    assert not at.exception, at.exception
    assert sorted(r["claim_id"] for r in store.reviews(sid)) == sorted(ids)
    assert offer in "\n".join(i.value for i in at.info)
    at.button(key="trace_session_offer_correct").click().run()
    assert [r["label"] for r in store.reviews(sid) if r["claim_id"] is None] == ["correct"]
    assert offer not in "\n".join(i.value for i in at.info)


def test_first_page_run_imports_what_the_other_pages_import() -> None:
    """The first open of Rules, Eval or Trace in a server process pays no imports of its own: the
    first page drawn (here Ask) imports them after it is drawn. In a fresh interpreter, since this
    one has imported everything already."""
    import os
    import subprocess
    import sys

    later = ["pandas", "pipeline.replay.history", "pipeline.eval.runner", "pipeline.frontends.views.trace"]
    code = (f"import sys\nfrom streamlit.testing.v1 import AppTest\nlater = {later!r}\n"
            "before = [m for m in later if m in sys.modules]\n"
            f"at = AppTest.from_file({APP!r}, default_timeout={TIMEOUT}).run()\n"
            "assert not at.exception, at.exception\n"
            "print(before, [m for m in later if m not in sys.modules])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT,
                          env=os.environ.copy())
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[] []"


def test_every_status_a_pill_shows_has_a_colour() -> None:
    """A pill is white words on its colour: a status without a colour rule is an empty-looking gap
    (the question form's not_answered was one)."""
    from typing import get_args

    from pages._ui.markup import CSS
    from pipeline.core.contracts import CoverageStatus, FormCoverage, ToolStatus
    from pipeline.store.record import SessionRecord

    shown = {*get_args(CoverageStatus), *get_args(ToolStatus),
             *get_args(FormCoverage.model_fields["status"].annotation),
             *get_args(get_args(SessionRecord.model_fields["provenance"].annotation)[0]),
             "pass", "warn", "fail", "skipped", "PASS", "LOW_CONFID", "REJECT", "none"}
    coloured = set(re.findall(r"\.wb-([A-Za-z_]+)(?=[,{])", CSS.split(".wb-pill{", 1)[1]))
    assert shown - coloured == set()
