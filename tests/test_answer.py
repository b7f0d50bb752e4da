"""A PASS answers the question asked (law 8): the first sentence, coverage, gaps, the meaning guard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.core.config import Settings, load_settings
from pipeline.core.contracts import ClaimCheck, ExecutorOutput, ParseStatus, VerifierOutput
from pipeline.core.messages import render, tr
from pipeline.runs.session import run_session
from pipeline.stages.answer_lead import closed_by
from pipeline.stages.composer import assemble_input, run_composer
from pipeline.store import Store
from pipeline.tools.incidents import load_worlds
from pipeline.verdict.answer import pairs_phrase
from pipeline.verdict.context import StageContext


@pytest.mark.parametrize(("question", "language"), [
    ("为什么 billing-service 返回 503？", "zh"),
    # "payments" names the payment incident, but no world holds billing-service: never its story
    ("Why is billing-service failing payments with 503?", "en"),
])
def test_unknown_service_ends_low_confid_and_names_the_service(
        settings: Settings, store: Store, question: str, language: str) -> None:
    result = run_session(question, settings=settings, store=store)
    ev = result.evaluation
    assert result.verdict == "LOW_CONFID"
    (row,) = [c for c in ev.round_audit.question_coverage if c.service == "billing-service"]
    assert row.status == "no_data" and row.msg is not None and row.msg.code == "coverage.no_records"
    first = ev.composer_output.answer_summary
    # The answer opens with the row's own finding, in the question's language.
    assert render(row.msg, language).rstrip("。.") in first and result.final_answer.startswith(first)
    assert any("billing-service" in gap for gap in ev.composer_input.missing_info)
    runbooks = [a for a in ev.composer_input.recommended_actions if "runbook" in a.action_text or "运维手册" in a.action_text]
    assert not runbooks  # nothing about billing-service was found, so no runbook is suggested


def _opening(language: str, service: str, symptom: str, text: str) -> str:
    """The catalogued "no sign of" sentence for `service` and `symptom`, up to the figure it quotes."""
    sentence = tr("answer.healthy_symptom", language, pairs=pairs_phrase([service], [symptom], language), text=text,
                  evidence="\x00")
    return sentence[:sentence.index(text) + len(text)]


@pytest.mark.parametrize(("question", "service", "opening"), [
    # A wrong password is the user's mistake, not the service failing: no sign of a login failure, with the figure.
    ("user-service 登录失败了吗？", "user-service", _opening("zh", "user-service", "auth", "login failed: wrong password")),
    # "is X healthy?" asks a state: its yes comes first, then the figure.
    ("Is coupon-service healthy?", "coupon-service", "Yes, coupon-service looks healthy: Pod重启次数: 1"),
])
def test_healthy_service_passes_with_a_no_fault_sentence_bound_to_evidence(
        settings: Settings, store: Store, question: str, service: str, opening: str) -> None:
    result = run_session(question, settings=settings, store=store)
    ev = result.evaluation
    assert result.verdict == "PASS" and result.final_answer.startswith(opening)
    (cov,) = ev.round_audit.question_coverage
    assert cov.status == "healthy" and cov.claim_ids and cov.invocation_ids
    claims = {c["claim_id"]: c for c in ev.structured["claims"]}
    stored = {inv.id for inv in store.invocations(result.session_id)}
    for cid in cov.claim_ids:  # the "no fault" sentence rests on claims bound to this session's calls
        assert service in claims[cid]["claim_text"]
        assert all(set(b["source_invocation_ids"]) <= stored for b in claims[cid]["evidence_bindings"])


def test_a_question_about_one_service_leads_with_that_service(settings: Settings, store: Store) -> None:
    result = run_session("Why is search-service returning errors?", settings=settings, store=store)
    first = result.evaluation.composer_output.answer_summary
    assert "search-service" in first and "inventory-service" not in first


def test_every_bundled_question_leads_with_the_root_cause_service_and_lists_no_closed_gap(
        settings: Settings, store: Store) -> None:
    for world in load_worlds(settings.incidents_dir):
        root = world.ground_truth()["root_cause_service"]
        for question in world.questions_zh + world.questions_en:
            ev = run_session(question, settings=settings, store=store).evaluation
            first = ev.composer_output.answer_summary
            assert root in first, (world.id, question, first)
            ci = ev.composer_input
            services = [c.service for c in ev.round_audit.question_coverage]
            assert not [g for g in ci.missing_info if closed_by(g, ci.allowed_claims, services)], (world.id, question)


# --- the meaning guard --------------------------------------------------------------------------

STRUCTURED = {"claims": [
    {"claim_id": "c1", "claim_type": "symptom", "claim_text": "order-service logged: create order failed with HTTP 500.",
     "support_level": "direct", "evidence_bindings": []},
    {"claim_id": "c2", "claim_type": "symptom", "claim_text": "order-service refund failed: card declined by issuer.",
     "support_level": "direct", "evidence_bindings": []},
]}


def _run(text: str):
    checks = [ClaimCheck(claim_id="c1", verification="direct_observation"),
              ClaimCheck(claim_id="c2", verification="unsupported")]
    ci, filtered = assemble_input(question="Why is order-service failing to create orders?", verdict="LOW_CONFID",
                                  structured=ExecutorOutput.read(STRUCTURED), verifier_output=VerifierOutput(
                                      verdict="LOW_CONFID", groundedness_score=0.5, claim_checks=checks))

    class Composer:
        def compose(self, ctx, composer_input):
            return json.dumps({"answer_summary": "order-service logged: create order failed with HTTP 500.",
                               "user_facing_answer": text})

    ctx = StageContext(settings=load_settings(), session_id="s", language="en", record=lambda r: None,
                       run_tool=lambda n, a: None)  # type: ignore[arg-type,return-value]
    return run_composer(ctx, Composer(), ci, enabled=True, parse_status=ParseStatus(status="valid"), filtered=filtered)


@pytest.mark.parametrize(("text", "kind"), [
    # a filtered-out claim restated in other words, as a fact
    ("Confirmed: order-service refunds are failing because the issuer declines the card.", "unconfirmed_as_fact"),
    # an invented "confirmed" sentence with no new number or name
    ("Confirmed: order-service thread pool saturated, requests queued.", "unattributed"),
])
def test_guard_falls_back_on_unlicensed_meaning(text: str, kind: str) -> None:
    out, guard, final = _run(text)
    assert guard.status == "fail" and guard.used_template and kind in {v.kind for v in guard.violations}
    assert "issuer declines" not in final and "thread pool" not in final


def test_guard_passes_a_faithful_answer() -> None:
    out, guard, final = _run("order-service logged: create order failed with HTTP 500. "
                             "Not confirmed yet: the refund failures of order-service.")
    assert guard.status == "pass", guard.violations


# --- runbooks: relevance shown, floor in config --------------------------------------------------


def test_runbooks_below_the_relevance_floor_are_not_returned(tmp_path) -> None:
    from pipeline.tools.knowledge import KnowledgeBase
    from pipeline.tools.queries import KnowledgeQuery, NoData

    (tmp_path / "cpu.md").write_text("# CPU high\n\nJava CPU usage high: take jstack of the hot threads.\n")
    (tmp_path / "redis.md").write_text("# Redis latency\n\nredis maxmemory and key eviction slow the cart.\n")
    kb = KnowledgeBase.from_folder(tmp_path, min_relevance=0.5)
    out = kb.lookup_knowledge(KnowledgeQuery(query="cpu jstack"))
    assert [(b["title"], b["relevance"]) for b in out["evidenceBlocks"]] == [("CPU high", 1.0)]
    with pytest.raises(NoData):  # shares only a generic word with a runbook: nothing relevant
        kb.lookup_knowledge(KnowledgeQuery(query="billing-service slow"))


def test_a_suggested_runbook_matches_the_symptom_and_shows_its_relevance(settings: Settings, store: Store) -> None:
    ev = run_session("支付接口从10点左右开始大量超时，帮我排查一下原因", settings=settings, store=store).evaluation
    runbooks = [a.action_text for a in ev.composer_input.recommended_actions if "运维手册" in a.action_text]
    assert runbooks and all("相关度 0." in a for a in runbooks)


def test_trace_shows_the_scope_and_coverage(settings: Settings, store: Store) -> None:
    from streamlit.testing.v1 import AppTest

    sid = run_session("为什么 billing-service 返回 503？", settings=settings, store=store).session_id
    app = Path(__file__).resolve().parent.parent / "app.py"
    at = AppTest.from_file(str(app), default_timeout=120).run()
    at.switch_page("pages/trace.py")
    at.query_params.update({"session": sid})
    at.run()
    assert not at.exception, at.exception
    html = "\n".join(el.proto.body for el in at.get("html"))
    assert "billing-service <span class='wb-muted'>(no backend knows it)</span>" in html
    assert 'wb-no_data">no_data</span>' in html


def test_an_answer_that_does_not_open_with_the_lead_falls_back() -> None:
    out, guard, final = _run("Next steps: have a person review this session's tool calls and evidence bindings. "
                             "order-service logged: create order failed with HTTP 500.")
    assert guard.used_template and "lead_missing" in {v.kind for v in guard.violations}
    assert final.splitlines()[0] == tr("answer.unknown", "en")


# --- the LLM collector: every asked service is queried, whatever the model chose ------------------


def test_llm_collector_queries_every_asked_service_and_the_prompt_holds_the_scope() -> None:
    from pipeline.core.contracts import PlannerPlan
    from pipeline.llm.openai_provider import OpenAIProvider
    from pipeline.verdict.scope import read_scope
    from tests.stub_openai import StubOpenAI, tool_call
    from tests.test_llm_openai_provider import FakeTools

    with StubOpenAI() as stub:
        settings = load_settings(openai={"base_url": stub.base_url, "model": "stub", "timeout_s": 5.0, "max_retries": 1})
        tools = FakeTools()
        ctx = StageContext(settings=settings, session_id="s-1", language="zh", record=lambda r: None, run_tool=tools,
                           services=["payment-service"],
                           scope=read_scope("payment-service 和 billing-service 都超时了吗？", ["payment-service"]))
        stub.reply_tools(tool_call("queryLogs", {"service": "payment-service"}, "c1"))
        stub.reply("已完成日志查询")
        summary = OpenAIProvider(settings).collect(ctx, "q", PlannerPlan(skill="s"), None)
        system = stub.chat_requests[0].messages[0]["content"]
    assert [i.arguments.get("service") for i in tools.invocations] == ["payment-service", "billing-service"]
    assert "billing-service" in summary.collection_summary and len(summary.tool_invocation_ids) == 2
    assert "Question scope" in system and "billing-service" in system


def test_no_framing_phrase_holds_a_word_that_states_a_fact() -> None:
    """The meaning guard and the prose reader drop the framing phrases' words from every claim; a
    symptom's or an outage's word written into a frame ("is not down") would stop counting in
    every claim that says it ("the payment database was down")."""
    from pipeline.text.lexicon import FORECAST, OUTAGE
    from pipeline.text.primitives import keywords
    from pipeline.verdict.answer import framing_words
    from pipeline.verdict.scope import SYMPTOM_TABLE

    facts: set[str] = set()
    for words in [*(s.evidence for s in SYMPTOM_TABLE), OUTAGE.en, OUTAGE.zh, FORECAST.en, FORECAST.zh]:
        for w in words:
            facts |= keywords(w)
    # Words of a symptom's evidence too general to anchor a fact on their own.
    generic = {"cannot", "service", "unknown", "still", "forecast", "healthy", "无法"}
    assert sorted(framing_words() & facts - generic) == []
