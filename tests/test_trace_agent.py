"""An agent the workbench did not write: a small tool loop on the `openai` SDK, instrumented by
OpenInference's own instrumentor and tracer (from the package index), against the stub endpoint,
exporting over OTLP/HTTP to the workbench's /v1/traces. Its run becomes a judged session."""

from __future__ import annotations

import json
from collections.abc import Iterator

import openai
import pytest
from helpers import stored_sessions, trace_collector
from openinference.instrumentation import TracerProvider
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from stub_openai import StubOpenAI, tool_call

from pipeline.core.config import Settings
from pipeline.store import Store

TOKEN = "agent-token"
LOGS = json.dumps({"logs": [
    {"timestamp": "2026-12-01T09:41:02Z", "service": "checkout-service", "level": "ERROR",
     "message": "payment-gateway timeout after 3000ms (code E504) order_id=7781"},
    {"timestamp": "2026-12-01T09:41:07Z", "service": "checkout-service", "level": "ERROR",
     "message": "payment-gateway timeout after 3000ms (code E504) order_id=7790"}], "total": 2, "truncated": False})
TOOLS = [{"type": "function", "function": {"name": "query_logs", "description": "search the service's logs",
                                           "parameters": {"type": "object",
                                                          "properties": {"service": {"type": "string"}}}}}]


@pytest.fixture
def collector(settings: Settings, store: Store) -> Iterator[str]:
    with trace_collector(settings, store, TOKEN) as url:
        yield url


def _run_agent(base_url: str, collector: str, question: str) -> str:
    provider = TracerProvider(resource=Resource.create({"service.name": "checkout-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(
        endpoint=collector + "/v1/traces", headers={"authorization": f"Bearer {TOKEN}"})))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    tracer = provider.get_tracer("checkout-agent")

    @tracer.tool
    def query_logs(service: str) -> str:
        return LOGS

    @tracer.agent
    def agent(question: str) -> str:
        client = openai.OpenAI(base_url=base_url, api_key="stub", max_retries=0)
        messages: list[dict[str, object]] = [{"role": "user", "content": question}]
        while True:
            reply = client.chat.completions.create(model="stub-model", messages=messages, tools=TOOLS)  # type: ignore[arg-type]
            message = reply.choices[0].message
            if not message.tool_calls:
                return message.content or ""
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                output = query_logs(**json.loads(call.function.arguments))  # type: ignore[union-attr]
                messages.append({"role": "tool", "tool_call_id": call.id, "content": output})

    try:
        return agent(question)
    finally:
        OpenAIInstrumentor().uninstrument()
        provider.shutdown()


@pytest.mark.parametrize(("answer", "verified"), [
    ("Checkout-service logs show payment-gateway timeout after 3000ms with code E504.", True),
    ("Checkout-service logs show payment-gateway timeout after 8000ms with code E504.", False),
])
def test_an_instrumented_openai_agent_run_becomes_a_judged_session(collector: str, store: Store, answer: str,
                                                                   verified: bool) -> None:
    with StubOpenAI() as stub:
        stub.reply_tools(tool_call("query_logs", {"service": "checkout-service"})).reply(answer)
        assert _run_agent(stub.base_url, collector, "Why does checkout fail?") == answer
    [sid] = stored_sessions(store, 1)
    row = store.get_session(sid)
    assert row is not None and row["question"] == "Why does checkout fail?"
    assert row["self_evaluation"]["claimed_by_source"]["trace"]["service_name"] == "checkout-agent"
    [inv] = store.invocations(sid)
    assert (inv.tool_name, inv.arguments, inv.output) == ("query_logs", {"service": "checkout-service"}, LOGS)
    checks = [c["verification"] for c in row["self_evaluation"]["verifier_evaluation"]["claim_checks"]]
    assert (set(checks) == {"direct_observation"}) is verified, checks
    assert (row["verdict"] == "REJECT") is not verified
