"""A foreign agent's trace becomes a stored session (`workbench import-trace`, POST /v1/traces).

The trace (pipeline/bundles/trace_import.py) is written as a session bundle: each TOOL span one
tool invocation (its name, arguments, output and timing), the root's input the question, the
agent's answer its executor output: as written when it is Executor V2 JSON, else its prose read
into claims bound to records (pipeline/bundles/prose.py). The bundle is then imported like any
other (pipeline/bundles/importer.py): judged by this workbench's gatekeeper, verifier and verdict
policy, the agent's own answer kept under `claimed_by_source.final_answer`. A trace carries no
signature, so its provenance is "unverified", with "imported trace", the service.name and the
trace id as the reason: it is held in the review queue whatever its verdict.

A TOOL span without an output is stored as a call that returned nothing (`no_data`, with a note),
and one whose span status is ERROR as a failed call; the verdict policy reads both as it reads
a tool failure of its own.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Literal

from pydantic import JsonValue, TypeAdapter

# pydantic validates a job's args against this where it starts; on Python 3.11 only
# typing_extensions' TypedDict carries what it needs for that.
from typing_extensions import TypedDict

from pipeline.bundles.importer import ImportResult, import_bundle
from pipeline.bundles.prose import prose_output
from pipeline.bundles.provenance import SignatureCheck
from pipeline.bundles.session_bundle import EARLIEST, BundleSession, SessionBundle
from pipeline.bundles.trace_import import ForeignToolCall, ForeignTrace, TraceOrigin
from pipeline.core.config import Settings
from pipeline.core.contracts import ExecutorOutputV2, ToolArguments, ToolInvocation, ToolStatus, Trigger
from pipeline.gatekeeper import RuleSet
from pipeline.stages.parse import parse_executor_output
from pipeline.store import Store
from pipeline.store.listing import recent_trigger
from pipeline.text.bounds import loads_bounded
from pipeline.text.replies import strip_wrappers
from pipeline.tools.registry import model_name, persisted_name
from pipeline.verdict.provider import Provider

ORIGIN = "imported trace"
NO_OUTPUT = "the trace's TOOL span carries no output.value: what the tool returned is unknown"


def _arguments(text: str) -> ToolArguments:
    try:
        value = json.loads(text)
    except ValueError:
        return {"input": text}
    return value if isinstance(value, dict) else {"input": value}


def _invocation(i: int, call: ForeignToolCall, session_id: str) -> ToolInvocation:
    name = persisted_name(call.name) or call.name
    status: ToolStatus = "error" if call.failed else ("no_data" if call.output is None else "ok")
    return ToolInvocation(
        id=i, session_id=session_id, tool_name=name, model_tool_name=model_name(call.name),
        arguments=_arguments(call.arguments), status=status, output=call.output or "",
        error=NO_OUTPUT if call.output is None else ("the span's status is ERROR" if call.failed else None),
        latency_ms=max(0, call.ended_ns - call.started_ns) / 1e6)


# What an answer says of itself rather than of the incident ("confidence": "medium"): no statement to check.
_ABOUT_ITSELF = re.compile(r"confiden|certaint|置信|可信|把握")


def _fields_as_prose(value: JsonValue, label: str = "") -> list[str]:
    """An answer written as JSON of the agent's own shape, as the lines it states: each string or number
    under its key ("root_cause" -> "root cause: ..."), lists item by item, what it says of itself left out."""
    if isinstance(value, dict):
        return [line for key, item in value.items() if not _ABOUT_ITSELF.search(key)
                for line in _fields_as_prose(item, key.replace("_", " "))]
    if isinstance(value, list):
        return [line for item in value for line in _fields_as_prose(item, label)]
    if value is None or isinstance(value, bool):
        return []
    return [f"{label}: {value}" if label else str(value)]


def _answer_form(answer: str) -> tuple[Literal["executor_v2", "prose"], str]:
    """The form an agent's answer came in, and its text: JSON is the Executor V2 contract only when it
    holds one of the contract's fields; JSON of another shape ({"root_cause": ..., "evidence": [...]}) is
    prose in fields, read as its lines."""
    status, _ = parse_executor_output(answer)
    if status.status != "valid":
        return "prose", answer
    data = loads_bounded(strip_wrappers(answer))
    if isinstance(data, dict) and not data.keys() & ExecutorOutputV2.model_fields.keys():
        return "prose", "\n".join(_fields_as_prose(data))
    return "executor_v2", answer


def trace_bundle(trace: ForeignTrace) -> tuple[SessionBundle, Literal["executor_v2", "prose"]]:
    """The trace as a session bundle, and the form its answer came in ("executor_v2" or "prose")."""
    invocations = [_invocation(i, call, trace.trace_id) for i, call in enumerate(trace.tool_calls, start=1)]
    form, text = _answer_form(trace.answer)
    raw = trace.answer if form == "executor_v2" else prose_output(text, invocations)
    started = datetime.fromtimestamp(trace.started_ns / 1e9, UTC) if trace.started_ns else None
    session = BundleSession(id=trace.trace_id or "trace", question=trace.question, shape="single",
                            provider=ORIGIN, model=trace.service_name, created_at=started)
    return SessionBundle(bundle_version=1, session=session, tool_invocations=invocations,
                         executor_raw_output=raw, final_answer=trace.answer), form


# A trace as a job carries it: plain JSON in the job's row, validated when the job reads it back.
_AS_JOB: TypeAdapter[ForeignTrace] = TypeAdapter(ForeignTrace)


class TraceArgs(TypedDict):
    """An import_trace job's args: the trace as plain JSON."""

    trace: dict[str, JsonValue]


def trace_args(trace: ForeignTrace) -> TraceArgs:
    """The trace as a job's arguments, read back by `trace_of`."""
    return {"trace": _AS_JOB.dump_python(trace, mode="json")}


def trace_of(args: TraceArgs) -> ForeignTrace:
    return _AS_JOB.validate_python(args["trace"])


def import_trace(store: Store, trace: ForeignTrace, *, settings: Settings, rules: RuleSet,
                 provider: Provider) -> ImportResult:
    bundle, form = trace_bundle(trace)
    origin = SignatureCheck("unverified", f"{ORIGIN}: service.name {trace.service_name}, trace id {trace.trace_id}",
                            None)
    source: TraceOrigin = {"origin": ORIGIN, "service_name": trace.service_name, "trace_id": trace.trace_id,
                           "answer_form": form, "span_ids": [c.span_id for c in trace.tool_calls]}
    trigger: Trigger = {"kind": "otlp_trace", "service_name": trace.service_name, "trace_id": trace.trace_id}
    return import_bundle(store, bundle, settings=settings, rules=rules, provider=provider, origin=origin, trace=source,
                         trigger=trigger, trigger_key=_trace_key(trace.trace_id))


def _trace_key(trace_id: str) -> str:
    return f"otlp-trace:{trace_id}"


def imported_as(store: Store, trace_id: str) -> str | None:
    """The session a trace was already stored as: an exporter whose answer was lost sends the
    trace again, and a trace id names one run."""
    return recent_trigger(store, _trace_key(trace_id), EARLIEST)
