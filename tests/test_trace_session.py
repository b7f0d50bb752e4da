"""A foreign agent's trace becomes a judged session: from a file, and over OTLP/HTTP from a real
OpenTelemetry exporter (protobuf, spans in two batches, the root last) and as OTLP/JSON."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import stored_sessions, trace_collector
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode

from pipeline.bundles.trace_import import read_trace
from pipeline.bundles.trace_session import import_trace
from pipeline.core.config import Settings
from pipeline.gatekeeper import load_rules
from pipeline.jobs.records import get_job
from pipeline.llm import make_provider
from pipeline.runs.review_queue import QueueFilter, queue_rows
from pipeline.store import Store

TRACE = (Path(__file__).parent / "data" / "otlp_agent_trace.json").read_text(encoding="utf-8")
TOKEN = "trace-token"
LOGS = ("2024-12-05T09:41:02Z checkout ERROR payment-gateway timeout after 3000ms (code E504)\n"
        "2024-12-05T09:41:07Z checkout ERROR payment-gateway timeout after 3000ms (code E504)")


def _import(store: Store, settings: Settings, text: str) -> dict:  # type: ignore[type-arg]
    result = import_trace(store, read_trace(text, 10**7, 10**6), settings=settings,
                          rules=load_rules(settings.rules_dir), provider=make_provider(settings))
    row = store.get_session(result.session_id)
    assert row is not None
    return row


def _answer(text: str) -> str:
    doc = json.loads(TRACE)
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[0]["attributes"].append({"key": "output.value", "value": {"stringValue": text}})
    return json.dumps(doc)


def test_trace_becomes_a_stored_session_with_provenance_in_the_review_queue(settings: Settings, store: Store) -> None:
    row = _import(store, settings, TRACE)
    assert row["question"] == "Why is checkout returning errors since 09:40?"
    assert row["provenance"] == "unverified" and row["stage"] == "imported"
    claimed = row["self_evaluation"]["claimed_by_source"]
    assert claimed["trace"] | {"span_ids": None} == {
        "origin": "imported trace", "service_name": "checkout-agent", "trace_id": "5b8efff798038103d269b633813fc60c",
        "answer_form": "prose", "span_ids": None}
    assert claimed["signature"]["reason"].startswith("imported trace: service.name checkout-agent")
    invs = store.invocations(row["id"])
    assert [(i.tool_name, i.arguments, i.latency_ms) for i in invs][0] == (
        "query_logs", {"service": "checkout", "level": "error"}, 1000.0)
    assert invs[0].output == LOGS
    assert row["id"] in [r.id for r in queue_rows(store, QueueFilter())]


@pytest.mark.parametrize(("answer", "flagged"), [
    ("The checkout error rate rose to 0.37 at 09:45. Checkout logs show payment-gateway timeout after 3000ms "
     "with code E504.", None),
    ("The checkout error rate rose to 0.52 at 09:45.", "external_unknown"),  # a changed number
    ("The logs say \"payment-gateway refused the connection (code E503)\".", "evidence.excerpt_similarity"),
    ("The root cause is a DNS outage in the payment-gateway cluster.", "unsupported"),
    # A fact added in a clause of a faithful sentence is a claim of its own.
    ("The checkout error rate rose to 0.37 at 09:45, and the payment database was down.", "unsupported"),
])
def test_prose_answer_is_judged_claim_by_claim(settings: Settings, store: Store, answer: str,
                                               flagged: str | None) -> None:
    row = _import(store, settings, _answer(answer))
    audit = row["self_evaluation"]["verifier_evaluation"]
    checks = {c["verification"] for c in audit["claim_checks"]}
    failed = set(audit["gatekeeper_result"]["failed_rules"])
    if flagged is None:
        assert checks <= {"direct_observation", "reasonable_inference"} and not failed, (checks, failed)
    else:
        assert flagged in checks | failed, (checks, failed)
        assert row["verdict"] != "PASS"
    # The agent's words are kept as its claim, never shown as the answer (law 1).
    assert row["self_evaluation"]["claimed_by_source"]["final_answer"] == answer


def test_a_prose_statement_nothing_backs_fails_for_want_of_evidence_not_schema(settings: Settings,
                                                                              store: Store) -> None:
    row = _import(store, settings, _answer("Checkout logs show payment-gateway timeout after 3000ms. "
                                           "Quarterly marketing budgets were approved yesterday."))
    audit = row["self_evaluation"]["verifier_evaluation"]
    gate = audit["gatekeeper_result"]
    # The reader wrote the claims' shape, not the agent: the finding is the claim's own cause.
    assert not {"schema.executor_v2", "evidence.invocation_ref"} & set(gate["failed_rules"]), gate
    assert gate["unbacked_claims"] == ["c2"]
    assert {c["claim_id"]: c["verification"] for c in audit["claim_checks"]}["c2"] == "unsupported"
    assert row["verdict"] != "PASS"


def test_tool_span_without_output_is_a_call_that_returned_nothing(settings: Settings, store: Store) -> None:
    doc = json.loads(TRACE)
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[2]["attributes"] = [a for a in spans[2]["attributes"] if a["key"] != "output.value"]
    row = _import(store, settings, json.dumps(doc))
    metrics = store.invocations(row["id"])[1]
    assert metrics.status == "no_data" and "carries no output" in (metrics.error or "")


def test_a_trace_phoenix_exported_replays_as_a_session(settings: Settings, store: Store) -> None:
    # Recorded from Phoenix 20.26 (GET /v1/projects/default/spans/otlpv1) after the openai-SDK agent of
    # test_trace_agent.py ran against the stub, instrumented by openinference-instrumentation-openai:
    # snake_case fields, nulls for absent ones, no resource.
    row = _import(store, settings, (Path(__file__).parent / "data" / "phoenix_agent_spans.json").read_text())
    assert row["question"] == "Why does checkout fail?"
    [inv] = store.invocations(row["id"])
    assert (inv.tool_name, inv.arguments, inv.output) == (
        "query_logs", {"service": "checkout"}, "payment-gateway timeout after 3000ms (code E504)")
    checks = [c["verification"] for c in row["self_evaluation"]["verifier_evaluation"]["claim_checks"]]
    assert checks == ["direct_observation"]
    assert row["self_evaluation"]["claimed_by_source"]["trace"]["service_name"] == "unknown_service"


@pytest.fixture
def collector(settings: Settings, store: Store) -> Iterator[str]:
    with trace_collector(settings, store, TOKEN) as url:
        yield url


def test_otlp_protobuf_export_from_a_real_exporter_becomes_a_session(collector: str, store: Store) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "sre-agent"}))
    exporter = OTLPSpanExporter(endpoint=collector + "/v1/traces", headers={"authorization": f"Bearer {TOKEN}"})
    # One export per ended span: the tool span arrives before its root, as a batching exporter may send it.
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent")
    with tracer.start_as_current_span("agent", attributes={
            "openinference.span.kind": "AGENT", "input.value": "Why is checkout returning errors?",
            "output.value": "Checkout logs show payment-gateway timeout after 3000ms with code E504."}):
        with tracer.start_as_current_span("query_logs", attributes={
                "openinference.span.kind": "TOOL", "tool.name": "query_logs",
                "tool.parameters": '{"service": "checkout"}', "output.value": LOGS}):
            pass
        with tracer.start_as_current_span("query_metrics", attributes={
                "openinference.span.kind": "TOOL", "tool.name": "query_metrics"}) as failed:
            failed.set_status(Status(StatusCode.ERROR))
    provider.shutdown()
    [sid] = stored_sessions(store, 1)
    row = store.get_session(sid)
    assert row is not None and row["self_evaluation"]["claimed_by_source"]["trace"]["service_name"] == "sre-agent"
    assert [(i.tool_name, i.status) for i in store.invocations(sid)] == [("query_logs", "ok"), ("query_metrics", "error")]


def _post(url: str, body: bytes, token: str | None = TOKEN) -> tuple[int, dict]:  # type: ignore[type-arg]
    headers = {"content-type": "application/json", **({"authorization": f"Bearer {token}"} if token else {})}
    req = urllib.request.Request(url + "/v1/traces", data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as err:
        return err.code, json.load(err)


def test_otlp_json_route_keeps_the_token_and_reports_rejected_spans(collector: str, store: Store) -> None:
    assert _post(collector, TRACE.encode(), token=None)[0] == 401
    assert _post(collector, b"{nope")[0] == 400
    status, answer = _post(collector, TRACE.encode())
    assert status == 200 and answer["partialSuccess"] == {} and len(answer["jobs"]) == 1
    [sid] = stored_sessions(store, 1)
    # Sent again (an exporter whose answer was lost): the job finds the session the trace became.
    [again] = _post(collector, TRACE.encode())[1]["jobs"]
    for _ in range(600):
        if (job := get_job(store, again)).status == "completed":
            break
        time.sleep(0.1)
    assert job.result == {"session_id": sid, "duplicate": True} and store.session_ids() == [sid]
    no_question = TRACE.replace('"input.value"', '"input.other"', 1)
    status, answer = _post(collector, no_question.encode())
    assert status == 200 and answer["partialSuccess"]["rejectedSpans"] == "4"
    assert "no input.value" in answer["partialSuccess"]["errorMessage"]
    lone_llm = TRACE.replace('"AGENT"', '"LLM"')
    status, answer = _post(collector, lone_llm.encode())
    assert status == 200 and "exactly one AGENT or CHAIN root" in answer["partialSuccess"]["errorMessage"]
