"""OTLP/JSON OpenInference traces read into a foreign session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.bundles.trace_import import read_trace
from pipeline.core.errors import BundleError

TRACE = (Path(__file__).parent / "data" / "otlp_agent_trace.json").read_text(encoding="utf-8")
BIG = 10**7


def test_agent_loop_becomes_question_tool_calls_and_answer() -> None:
    trace = read_trace(TRACE, BIG, BIG)
    assert trace.trace_id == "5b8efff798038103d269b633813fc60c"
    assert trace.service_name == "checkout-agent"
    assert trace.question.startswith("Why is checkout returning errors")
    # The root has no output.value, so the answer is the last LLM span's flattened message.
    assert trace.answer.startswith("Checkout errors come from payment-gateway timeouts")
    assert [c.name for c in trace.tool_calls] == ["query_logs", "query_metrics"]
    assert json.loads(trace.tool_calls[0].arguments) == {"service": "checkout", "level": "error"}
    assert "rate(http_errors_total" in trace.tool_calls[1].arguments  # input.value, the call's own input
    assert trace.tool_calls[0].output is not None and "E504" in trace.tool_calls[0].output
    assert trace.tool_calls[0].ended_ns - trace.tool_calls[0].started_ns == 10**9


def test_outputs_capped_and_missing_output_kept_as_none() -> None:
    doc = json.loads(TRACE)
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[2]["attributes"] = [a for a in spans[2]["attributes"] if a["key"] != "output.value"]
    trace = read_trace(json.dumps(doc), BIG, 40)
    assert trace.tool_calls[0].output is not None and len(trace.tool_calls[0].output.encode()) <= 40
    assert trace.tool_calls[0].capped_bytes > 0
    assert trace.tool_calls[1].output is None


def test_a_span_field_of_another_type_reads_as_absent() -> None:
    """A foreign exporter's odd span is judged by what it holds, never a traceback."""
    doc = json.loads(TRACE)
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[2] |= {"status": "ERROR", "startTimeUnixNano": "soon", "spanId": 12}
    trace = read_trace(json.dumps(doc), BIG, BIG)
    call = trace.tool_calls[0]
    assert (call.failed, call.started_ns, call.span_id) == (False, 0, "12")
    assert trace.tool_calls[1].failed is False and trace.tool_calls[1].started_ns > 0


@pytest.mark.parametrize(("text", "reason"), [
    ("not json", "not JSON"),
    ('{"spans": []}', "no resourceSpans"),
    ('{"resourceSpans": []}', "holds no spans"),
    (TRACE.replace('"AGENT"', '"LLM"'), "exactly one AGENT or CHAIN root"),
    (TRACE.replace("eee19b7ec3c1b174\", \"name\": \"agent\"", "x\", \"name\": \"agent\"")
     .replace('"5b8efff798038103d269b633813fc60c", "spanId": "x"', '"00", "spanId": "x"'), "trace ids"),
])
def test_bad_input_one_line_error(text: str, reason: str) -> None:
    with pytest.raises(BundleError, match=reason) as info:
        read_trace(text, BIG, BIG)
    assert "\n" not in str(info.value)


def test_oversized_file_refused_before_parsing() -> None:
    with pytest.raises(BundleError, match="max_bundle_bytes"):
        read_trace(TRACE, 1024, BIG)
