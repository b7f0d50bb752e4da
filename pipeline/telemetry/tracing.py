"""Each session as one OpenTelemetry trace, in the OpenInference conventions that Arize Phoenix,
Langfuse and other OTLP backends read (docs/deploy.md#traces).

The trace is built from the stored record, not from live hooks in the stages: the export at the
end of a session and `workbench export --otlp SESSION` send the same spans, and a stage never
waits on a collector. Start times are laid out from the session's start and the recorded
durations (stage timings, tool and LLM latencies), so the waterfall shows real durations.

    session (AGENT)                       question, verdict, groundedness, failed rules, trigger
      planner_r1 (CHAIN)
        LLM planner                       model, tokens, attempt, parse status
      collector_r1 (CHAIN)
        TOOL query_logs #12               arguments, output size, status
      digest_r1 / diagnosis_r1 (CHAIN)    their LLM calls
      verification_r1 (GUARDRAIL)         events: gatekeeper findings, claim_checks
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from openinference.semconv.resource import ResourceAttributes
from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind
from openinference.semconv.trace import SpanAttributes as A
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Status, StatusCode

from pipeline.core.config import Settings
from pipeline.core.contracts import Trigger
from pipeline.store import Store
from pipeline.store.record import SessionRecord, read_session
from pipeline.text.redact import safe_url

log = logging.getLogger(__name__)

# Attribute values are capped: a 10 MB tool output or prompt must not become a 10 MB span.
_MAX_VALUE = 4_000
_NS = 1_000_000  # per millisecond


class _OneLineExporter(SpanExporter):
    """Logs one line when the collector stops taking spans (and one when it is back), instead of
    the OTLP exporter's line per retry: a collector that is down is news once, not per session."""

    def __init__(self, inner: SpanExporter, endpoint: str):
        self.inner, self.endpoint, self.failing = inner, endpoint, False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception:  # noqa: BLE001 - a collector's failure never reaches a session
            result = SpanExportResult.FAILURE
        if result is SpanExportResult.FAILURE and not self.failing:
            log.warning("the OTLP collector at %s does not take spans; sessions go on, their traces are dropped",
                        self.endpoint)
        elif result is SpanExportResult.SUCCESS and self.failing:
            log.warning("the OTLP collector at %s takes spans again", self.endpoint)
        self.failing = result is SpanExportResult.FAILURE
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


_providers: dict[tuple[str, str], tuple[TracerProvider, _OneLineExporter]] = {}
_lock = threading.Lock()
# The LLM calls of the verifier and the composer run inside the verification stage.
_STAGE_OF_CALL = {"verifier": "verification", "composer": "verification"}


def _provider(settings: Settings) -> tuple[TracerProvider, _OneLineExporter] | None:
    """The process's provider for the configured endpoint (None when tracing is off)."""
    t = settings.telemetry
    if not t.otlp_endpoint:
        return None
    key = (t.otlp_endpoint, t.project)
    with _lock:
        if key not in _providers:
            # The exporter's own per-retry log lines are replaced by _OneLineExporter's.
            logging.getLogger("opentelemetry.exporter.otlp.proto.http").setLevel(logging.CRITICAL)
            url = t.otlp_endpoint.rstrip("/")
            url = url if url.endswith("/v1/traces") else url + "/v1/traces"
            exporter = _OneLineExporter(OTLPSpanExporter(endpoint=url, timeout=t.timeout_s), safe_url(url))
            provider = TracerProvider(resource=Resource.create({
                SERVICE_NAME: "evidence-workbench", ResourceAttributes.PROJECT_NAME: t.project}))
            # Bounded: a collector that is down costs at most this queue, never the session.
            provider.add_span_processor(BatchSpanProcessor(
                exporter, max_queue_size=t.max_queue_spans, export_timeout_millis=int(t.timeout_s * 1000)))
            _providers[key] = provider, exporter
        return _providers[key]


def _cap(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _MAX_VALUE else text[:_MAX_VALUE] + f"… [{len(text) - _MAX_VALUE} more characters]"


def _ns(at: datetime) -> int:
    return int(at.timestamp() * 1e9)


def trace_session(provider: TracerProvider, rec: SessionRecord, trigger: Trigger | None = None,
                  rules_version: int | None = None) -> None:
    """Emit `rec` as one trace through `provider` (exported in the background)."""
    tracer = provider.get_tracer("evidence-workbench")
    start = _ns(rec.created_at)
    stages = list(rec.timings_ms.items())
    total_ms = sum(ms for _, ms in stages)
    ev = rec.evaluation
    root_attrs: dict[str, Any] = {
        A.OPENINFERENCE_SPAN_KIND: Kind.AGENT.value, A.SESSION_ID: rec.id, A.INPUT_VALUE: _cap(rec.question),
        A.OUTPUT_VALUE: _cap(rec.final_answer or ""), "workbench.status": rec.status,
        "workbench.verdict": rec.verdict or "", "workbench.groundedness": rec.groundedness or 0.0,
        "workbench.failed_rules": rec.failed_rules, "workbench.provider": rec.provider,
        "workbench.model": rec.model, "workbench.rounds": rec.rounds,
        "workbench.trigger": trigger["kind"] if trigger else "manual",
        A.LLM_TOKEN_COUNT_PROMPT: rec.prompt_tokens, A.LLM_TOKEN_COUNT_COMPLETION: rec.completion_tokens,
    }
    if rules_version is not None:
        root_attrs["workbench.rules_version"] = rules_version
    if rec.world:
        root_attrs["workbench.sample_incident"] = rec.world
    root = tracer.start_span("diagnosis session", start_time=start, attributes=root_attrs)
    if rec.status == "failed":
        root.set_status(Status(StatusCode.ERROR, rec.error or "failed"))
    root_ctx = trace.set_span_in_context(root)

    at = start
    for key, ms in stages:
        stage, _, rnd = key.rpartition("_r")
        kind = Kind.GUARDRAIL if stage == "verification" else Kind.CHAIN
        span = tracer.start_span(key, context=root_ctx, start_time=at,
                                 attributes={A.OPENINFERENCE_SPAN_KIND: kind.value, "workbench.stage": stage,
                                             "workbench.round": int(rnd) if rnd.isdigit() else 1})
        ctx = trace.set_span_in_context(span)
        child_at = at
        for call in rec.llm_calls:
            if _STAGE_OF_CALL.get(call.stage, call.stage) == stage and str(call.round) == rnd:
                end = child_at + int(call.latency_ms * _NS)
                llm = tracer.start_span(f"LLM {call.stage}", context=ctx, start_time=child_at, attributes={
                    A.OPENINFERENCE_SPAN_KIND: Kind.LLM.value, A.LLM_MODEL_NAME: call.model,
                    A.LLM_PROVIDER: call.provider, A.LLM_TOKEN_COUNT_PROMPT: call.prompt_tokens,
                    A.LLM_TOKEN_COUNT_COMPLETION: call.completion_tokens,
                    A.LLM_TOKEN_COUNT_TOTAL: call.prompt_tokens + call.completion_tokens,
                    A.INPUT_VALUE: _cap(call.messages), A.OUTPUT_VALUE: _cap(call.raw_response),
                    A.LLM_PROMPT_TEMPLATE_VERSION: call.prompt_version,
                    "workbench.attempt": call.attempt, "workbench.parse_status": call.parse_status})
                if call.error:
                    llm.set_status(Status(StatusCode.ERROR, call.error[:_MAX_VALUE]))
                llm.end(end_time=end)
                child_at = end
        if stage == "collector":
            for inv in rec.invocations:
                if str(inv.round) != rnd:
                    continue
                end = child_at + int(inv.latency_ms * _NS)
                tool = tracer.start_span(f"TOOL {inv.tool_name} #{inv.id}", context=ctx, start_time=child_at,
                                         attributes={
                    A.OPENINFERENCE_SPAN_KIND: Kind.TOOL.value, A.TOOL_NAME: inv.model_tool_name,
                    A.TOOL_PARAMETERS: _cap(inv.arguments), A.INPUT_VALUE: _cap(inv.arguments),
                    A.OUTPUT_VALUE: _cap(inv.output_preview), "workbench.invocation_id": inv.id,
                    "workbench.output_bytes": inv.output_bytes, "workbench.tool_status": str(inv.status)})
                if inv.error:
                    tool.set_status(Status(StatusCode.ERROR, inv.error[:_MAX_VALUE]))
                tool.end(end_time=end)
                child_at = end
        if stage == "verification" and ev is not None and str(ev.round) == rnd:
            for err in ev.gatekeeper_result.errors:
                span.add_event("gatekeeper.finding", {"rule_id": err.rule_id, "target": err.target,
                                                      "message": _cap(err.message)}, timestamp=at)
            for check in ev.claim_checks:
                span.add_event("claim_check", {"claim_id": check.claim_id, "verification": str(check.verification),
                                               "detail": _cap(check.detail)}, timestamp=at)
            span.set_attribute("workbench.gatekeeper_status", ev.gatekeeper_result.status)
        at += int(ms * _NS)
        span.end(end_time=max(at, child_at))
    root.end(end_time=max(at, start + int(total_ms * _NS)))


def export_session(settings: Settings, store: Store, session_id: str, *, flush: bool = False) -> bool:
    """Send session `session_id` as a trace to the configured collector. False when tracing is off;
    with `flush`, waits for the export (the CLI's resend) and says whether the collector took it."""
    found = _provider(settings)
    if found is None:
        return False
    provider, exporter = found
    row = store.get_session(session_id)
    trace_session(provider, read_session(store, session_id), trigger=row["trigger"] if row else None,
                  rules_version=row["rules_version"] if row else None)
    if not flush:
        return True
    return provider.force_flush(int(settings.telemetry.timeout_s * 2000)) and not exporter.failing
