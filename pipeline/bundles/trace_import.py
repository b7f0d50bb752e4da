"""A foreign agent's trace read from OTLP/JSON with OpenInference conventions.

The file is an ExportTraceServiceRequest as JSON: resourceSpans -> scopeSpans -> spans, each
attribute a {key, value: {stringValue|intValue|...}} pair, trace and span ids in hex (field names
in lowerCamelCase or the proto's snake_case), or Phoenix's span export ({"data": [spans]}). The root
span (kind AGENT or CHAIN, no parent) holds the question (input.value) and the answer
(output.value, else the last LLM span's output); every TOOL span becomes one tool invocation.
Nothing here is trusted: this only reads the trace, the gatekeeper judges what it claims.
Outputs are capped to the same budget as bundle import; a span without output keeps None so the
workbench can say the tool returned nothing rather than invent an empty record.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, TypedDict

from pydantic import (
    AliasPath,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
)

from pipeline.core.errors import BundleError
from pipeline.text.bounds import cap_text, too_deep

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
    failed: bool = False  # the span's status is ERROR


# An attribute's value as OTLP's AnyValue holds it: a scalar, an array or a key-value list.
AttributeValue: TypeAlias = "str | bool | int | float | list[AttributeValue] | dict[str, AttributeValue] | None"


class OtlpSpan(BaseModel):
    """The fields of an OTLP/JSON span this reader uses. One of another type reads as absent:
    nothing here is trusted, and a span is judged by what it holds, not refused for its form."""

    model_config = ConfigDict(extra="ignore", frozen=True, coerce_numbers_to_str=True)
    traceId: str = ""
    spanId: str = ""
    parentSpanId: str = ""
    name: str = ""
    startTimeUnixNano: int = 0  # proto3 JSON writes int64 as a string
    endTimeUnixNano: int = 0
    status_code: int | str | None = Field(default=None, validation_alias=AliasPath("status", "code"))

    @field_validator("*", mode="wrap")
    @classmethod
    def _absent_when_unreadable(cls, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
        try:
            return handler(value)
        except ValidationError:
            return cls.model_fields[str(info.field_name)].default

    @property
    def failed(self) -> bool:
        return self.status_code in (2, "STATUS_CODE_ERROR")


@dataclass(frozen=True)
class Span:
    span: OtlpSpan
    attrs: dict[str, AttributeValue]
    service: str  # its resource's service.name


class TraceOrigin(TypedDict):
    """What an imported trace's session was built from, kept under claimed_by_source.trace."""

    origin: str
    service_name: str
    trace_id: str
    answer_form: Literal["executor_v2", "prose"]
    span_ids: list[str]


@dataclass(frozen=True)
class ForeignTrace:
    trace_id: str
    service_name: str
    question: str
    answer: str
    tool_calls: list[ForeignToolCall]
    started_ns: int = 0


def _value(v: Any) -> AttributeValue:
    if not isinstance(v, dict):
        return None
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            written: AttributeValue = v[key]  # decoded JSON: a value of this shape whatever it holds
            return written
    if "intValue" in v:  # proto3 JSON writes int64 as a string
        return int(v["intValue"])
    if "arrayValue" in v:
        return [_value(x) for x in v["arrayValue"].get("values", [])]
    if "kvlistValue" in v:
        return _attributes(v["kvlistValue"].get("values", []))
    return None


def _attributes(pairs: Any) -> dict[str, AttributeValue]:
    if not isinstance(pairs, list):
        raise BundleError("trace: attributes must be a list of {key, value} pairs")
    return {p["key"]: _value(p.get("value")) for p in pairs if isinstance(p, dict) and isinstance(p.get("key"), str)}


def _text(value: AttributeValue) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _llm_output(attrs: dict[str, AttributeValue]) -> str | None:
    """An LLM span's answer: output.value, else the flattened llm.output_messages.N.message.content."""
    if attrs.get("output.value") is not None:
        return _text(attrs["output.value"])
    contents = sorted((k, v) for k, v in attrs.items()
                      if k.startswith("llm.output_messages.") and k.endswith(".message.content"))
    return "\n".join(str(v) for _, v in contents) or None


def decode_protobuf(body: bytes) -> dict[str, Any]:
    """An OTLP/HTTP protobuf ExportTraceServiceRequest as the OTLP/JSON document it stands for
    (ids in hex, as OTLP/JSON writes them, not the base64 of protobuf's generic JSON mapping)."""
    from google.protobuf.json_format import MessageToDict
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError) as exc:
        raise BundleError(f"trace: not an OTLP protobuf ExportTraceServiceRequest ({exc})") from exc
    doc: dict[str, Any] = MessageToDict(request)
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = base64.b64decode(span[key]).hex()
    return doc


def load_json(text: str, max_bytes: int) -> dict[str, Any]:
    """An OTLP/JSON document, bounded in size and depth; BundleError with a one-line reason otherwise."""
    if len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise BundleError(f"trace: larger than budget.max_bundle_bytes ({max_bytes} bytes)")
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise BundleError(f"trace: not JSON ({exc})") from exc
    if too_deep(doc):
        raise BundleError("trace: JSON nested too deep")
    doc = _lower_camel(doc)
    if isinstance(doc, dict) and "resourceSpans" not in doc and isinstance(doc.get("data"), list):
        # Phoenix's span export (GET /v1/projects/{project}/spans/otlpv1): OTLP spans without
        # their resource, so without a service.name.
        doc = {"resourceSpans": [{"scopeSpans": [{"spans": doc["data"]}]}]}
    if not isinstance(doc, dict) or not isinstance(doc.get("resourceSpans"), list):
        raise BundleError("trace: no resourceSpans - not an OTLP/JSON ExportTraceServiceRequest "
                          "or a Phoenix span export")
    return doc


def _lower_camel(value: Any) -> Any:
    """JSON in OTLP's lowerCamelCase field names, null fields left out: proto3 JSON readers take the
    proto's own snake_case names too, and Phoenix writes those, with every absent field as null."""
    if isinstance(value, list):
        return [_lower_camel(v) for v in value]
    if not isinstance(value, dict):
        return value
    return {re.sub(r"_([a-z])", lambda m: m[1].upper(), k) if isinstance(k, str) else k: _lower_camel(v)
            for k, v in value.items() if v is not None}


def spans_by_trace(doc: dict[str, Any]) -> dict[str, list[Span]]:
    """Every span of an export, with its attributes and its resource's service.name, by trace id.
    An exporter batches spans as they end, so one export may hold several traces, or part of one."""
    out: dict[str, list[Span]] = {}
    for rs in doc.get("resourceSpans") or []:
        resource = _attributes((rs.get("resource") or {}).get("attributes", [])) if isinstance(rs, dict) else {}
        service = str(resource.get("service.name") or "unknown_service")
        for ss in rs.get("scopeSpans", []) if isinstance(rs, dict) else []:
            for span in ss.get("spans", []) if isinstance(ss, dict) else []:
                if isinstance(span, dict):
                    read = OtlpSpan.model_validate(span)
                    out.setdefault(read.traceId, []).append(Span(read, _attributes(span.get("attributes", [])), service))
    return out


def is_root(span: Span) -> bool:
    return not span.span.parentSpanId and span.attrs.get(_KIND) in _ROOT_KINDS


def read_trace(text: str, max_bytes: int, max_output_bytes: int) -> ForeignTrace:
    """The one trace an OTLP/JSON export holds; BundleError with a one-line reason otherwise."""
    traces = spans_by_trace(load_json(text, max_bytes))
    if not traces:
        raise BundleError("trace: holds no spans")
    if len(traces) != 1:
        raise BundleError(f"trace: holds {len(traces)} trace ids; import one trace per file")
    trace_id, spans = traces.popitem()
    return foreign_trace(trace_id, spans, max_output_bytes)


def foreign_trace(trace_id: str, spans: list[Span], max_output_bytes: int) -> ForeignTrace:
    """One trace's spans read as question, tool calls and answer."""
    roots = [s for s in spans if is_root(s)]
    if len(roots) != 1:
        raise BundleError(f"trace: needs exactly one AGENT or CHAIN root span, found {len(roots)}")
    root = roots[0]
    in_order = sorted(spans, key=lambda s: s.span.startTimeUnixNano)
    question = _text(root.attrs.get("input.value"))
    if not question:
        raise BundleError("trace: the root span has no input.value (the question)")
    answer = _llm_output(root.attrs)
    if answer is None:
        llm = [s.attrs for s in in_order if s.attrs.get(_KIND) == "LLM" and _llm_output(s.attrs) is not None]
        answer = _llm_output(llm[-1]) if llm else None
    if not answer:
        raise BundleError("trace: no answer - neither the root nor any LLM span has an output")
    calls = [_tool_call(s, max_output_bytes) for s in in_order if s.attrs.get(_KIND) == "TOOL"]
    return ForeignTrace(trace_id=trace_id, service_name=root.service, question=question, answer=answer,
                        tool_calls=calls, started_ns=root.span.startTimeUnixNano)


def _tool_call(s: Span, max_output_bytes: int) -> ForeignToolCall:
    output = _text(s.attrs.get("output.value"))
    cut = 0
    if output is not None:
        output, cut = cap_text(output, max_output_bytes)
    return ForeignToolCall(
        name=str(s.attrs.get("tool.name") or s.span.name or "tool"),
        # OpenInference: input.value is the call's input; tool.parameters the tool's parameter schema,
        # which some producers (this workbench's own export among them) fill with the arguments.
        arguments=_text(s.attrs.get("input.value", s.attrs.get("tool.parameters"))) or "{}",
        output=output, started_ns=s.span.startTimeUnixNano, ended_ns=s.span.endTimeUnixNano, span_id=s.span.spanId,
        capped_bytes=cut, failed=s.span.failed)
