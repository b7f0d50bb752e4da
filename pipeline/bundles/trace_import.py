"""A foreign agent's trace read from OTLP/JSON with OpenInference conventions.

The file is an ExportTraceServiceRequest as JSON: resourceSpans -> scopeSpans -> spans, each
attribute a {key, value: {stringValue|intValue|...}} pair, trace and span ids in hex. The root
span (kind AGENT or CHAIN, no parent) holds the question (input.value) and the answer
(output.value, else the last LLM span's output); every TOOL span becomes one tool invocation.
Nothing here is trusted: this only reads the trace, the gatekeeper judges what it claims.
Outputs are capped to the same budget as bundle import; a span without output keeps None so the
workbench can say the tool returned nothing rather than invent an empty record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pipeline.core.bounds import cap_text, too_deep
from pipeline.core.errors import BundleError

_KIND = "openinference.span.kind"
_ROOT_KINDS = ("AGENT", "CHAIN")


@dataclass(frozen=True)
class ForeignToolCall:
    name: str
    arguments: str
    output: str | None
    started_ns: int
    ended_ns: int
    span_id: str
    capped_bytes: int


@dataclass(frozen=True)
class ForeignTrace:
    trace_id: str
    service_name: str
    question: str
    answer: str
    tool_calls: list[ForeignToolCall]


def _value(v: Any) -> Any:
    if not isinstance(v, dict):
        return None
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    if "intValue" in v:  # proto3 JSON writes int64 as a string
        return int(v["intValue"])
    if "arrayValue" in v:
        return [_value(x) for x in v["arrayValue"].get("values", [])]
    if "kvlistValue" in v:
        return _attributes(v["kvlistValue"].get("values", []))
    return None


def _attributes(pairs: Any) -> dict[str, Any]:
    if not isinstance(pairs, list):
        raise BundleError("trace: attributes must be a list of {key, value} pairs")
    return {p["key"]: _value(p.get("value")) for p in pairs if isinstance(p, dict) and isinstance(p.get("key"), str)}


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _llm_output(attrs: dict[str, Any]) -> str | None:
    """An LLM span's answer: output.value, else the flattened llm.output_messages.N.message.content."""
    if attrs.get("output.value") is not None:
        return _text(attrs["output.value"])
    contents = sorted((k, v) for k, v in attrs.items()
                      if k.startswith("llm.output_messages.") and k.endswith(".message.content"))
    return "\n".join(str(v) for _, v in contents) or None


def read_trace(text: str, max_bytes: int, max_output_bytes: int) -> ForeignTrace:
    """The one trace an OTLP/JSON export holds; BundleError with a one-line reason otherwise."""
    if len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise BundleError(f"trace: larger than budget.max_bundle_bytes ({max_bytes} bytes)")
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise BundleError(f"trace: not JSON ({exc})") from exc
    if too_deep(doc):
        raise BundleError("trace: JSON nested too deep")
    if not isinstance(doc, dict) or not isinstance(doc.get("resourceSpans"), list):
        raise BundleError("trace: no resourceSpans - not an OTLP/JSON ExportTraceServiceRequest")
    spans: list[tuple[dict[str, Any], dict[str, Any], str]] = []
    for rs in doc["resourceSpans"]:
        resource = _attributes((rs.get("resource") or {}).get("attributes", [])) if isinstance(rs, dict) else {}
        service = str(resource.get("service.name") or "unknown_service")
        for ss in rs.get("scopeSpans", []) if isinstance(rs, dict) else []:
            for span in ss.get("spans", []) if isinstance(ss, dict) else []:
                if isinstance(span, dict):
                    spans.append((span, _attributes(span.get("attributes", [])), service))
    if not spans:
        raise BundleError("trace: holds no spans")
    trace_ids = {str(s.get("traceId", "")) for s, _, _ in spans}
    if len(trace_ids) != 1:
        raise BundleError(f"trace: holds {len(trace_ids)} trace ids; import one trace per file")
    roots = [(s, a, svc) for s, a, svc in spans if not s.get("parentSpanId") and a.get(_KIND) in _ROOT_KINDS]
    if len(roots) != 1:
        raise BundleError(f"trace: needs exactly one AGENT or CHAIN root span, found {len(roots)}")
    root, root_attrs, service = roots[0]
    in_order = sorted(spans, key=lambda t: int(t[0].get("startTimeUnixNano", 0)))
    question = _text(root_attrs.get("input.value"))
    if not question:
        raise BundleError("trace: the root span has no input.value (the question)")
    answer = _llm_output(root_attrs)
    if answer is None:
        llm = [a for _, a, _ in in_order if a.get(_KIND) == "LLM" and _llm_output(a) is not None]
        answer = _llm_output(llm[-1]) if llm else None
    if not answer:
        raise BundleError("trace: no answer - neither the root nor any LLM span has an output")
    calls = []
    for span, attrs, _ in in_order:
        if attrs.get(_KIND) != "TOOL":
            continue
        output = _text(attrs.get("output.value"))
        cut = 0
        if output is not None:
            output, cut = cap_text(output, max_output_bytes)
        calls.append(ForeignToolCall(
            name=str(attrs.get("tool.name") or span.get("name") or "tool"),
            arguments=_text(attrs.get("tool.parameters", attrs.get("input.value"))) or "{}",
            output=output, started_ns=int(span.get("startTimeUnixNano", 0)),
            ended_ns=int(span.get("endTimeUnixNano", 0)), span_id=str(span.get("spanId", "")),
            capped_bytes=cut))
    return ForeignTrace(trace_id=trace_ids.pop(), service_name=service, question=question,
                        answer=answer, tool_calls=calls)
