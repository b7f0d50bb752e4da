"""`workbench import`: a bundle becomes a stored session, re-verified here, never trusted (law 9).

The bundle's executor output and tool outputs are evidence to check; its verdict, checks and
answer are what the source *claims*. Import re-runs parse -> gatekeeper -> verifier -> verdict
policy -> composer through `check_bundle` (the path `workbench check` uses) on the invocations
as they will be stored (capped, redacted), keeps the bundle's own verdict, checks and answer
under `self_evaluation.claimed_by_source`, and stores the whole session in one transaction.

The stored session gets an id of the workbench's own; the bundle's id is kept, as text, under
`claimed_by_source.session_id`. The bundle's signature decides its provenance
(pipeline/bundles/provenance.py): an unverified import is held in the review queue whatever its verdict.

Invocation ids are global in a store, so the bundle's ids are renumbered and every reference
rewritten. A reference to an id the bundle does not hold has nothing to be renumbered to: it
becomes that id negated, which no row can have, so it never lands on another session's call
(and evidence.invocation_ref fails on it now and in every replay).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

from pydantic import JsonValue

from pipeline.bundles.check import check_bundle
from pipeline.bundles.provenance import Provenance, SignatureCheck, check_signature, own_key, ran_in_store, trusted_keys
from pipeline.bundles.session_bundle import SessionBundle
from pipeline.bundles.trace_import import TraceOrigin
from pipeline.core.config import Settings
from pipeline.core.contracts import LlmCallRecord, Trigger
from pipeline.core.messages import localized
from pipeline.gatekeeper import RuleSet
from pipeline.stages.parse import parse_executor_output
from pipeline.store import Store
from pipeline.store.repo import new_session_id
from pipeline.text.bounds import cap_text
from pipeline.text.redact import redact, redact_value
from pipeline.verdict.provider import Provider


@dataclass
class ImportResult:
    session_id: str
    id_map: dict[int, int]  # bundle id -> stored id, for every invocation the bundle holds
    verdict: str
    claimed_verdict: str | None
    capped: list[int]  # bundle ids of outputs cut to budget.max_stored_output_bytes
    signature: SignatureCheck
    ungated_by: list[str]  # RuleSet.ungated_by of the rules it was judged under


class SignatureFound(TypedDict):
    provenance: Provenance
    reason: str
    key: str | None


class Claimed(TypedDict):
    """What the bundle says of itself, stored as self_evaluation.claimed_by_source (read back by
    pipeline/store/record.py): shown beside our judgement, never used as it (law 9)."""

    signature: SignatureFound
    verdict: str | None  # text whatever the source wrote there
    verifier_output: dict[str, JsonValue] | None
    verifier_evaluation: dict[str, JsonValue] | None
    composer_output: dict[str, JsonValue] | str | None
    final_answer: str | None
    provider: str
    model: str
    session_id: str
    trace: NotRequired[TraceOrigin]  # what an imported trace's bundle was built from


_RECORD = re.compile(r"(inv-)?(\d+)(#\d+)?")


def _remap(value: Any, id_map: dict[int, int]) -> Any:
    """Every invocation reference in a JSON value rewritten: `*invocation_ids` lists,
    `invocation_id`, `*record_ids` entries ("12#3", "inv-12#3") and an "inv-12" source_id."""
    def one(i: Any) -> Any:
        if not isinstance(i, int) or isinstance(i, bool):
            return i
        return id_map.get(i, -abs(i) if i else i)

    def in_text(text: Any) -> Any:
        match = _RECORD.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            return text
        return f"{match[1] or ''}{one(int(match[2]))}{match[3] or ''}"

    if isinstance(value, dict):
        if isinstance(value.get("code"), str) and isinstance(value.get("params"), dict):
            return _remap_message(value, id_map)
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if isinstance(key, str) and key.endswith("invocation_ids") and isinstance(item, list):
                out[key] = [one(i) for i in item]
            elif key == "invocation_id":
                out[key] = one(item)
            elif isinstance(key, str) and key.endswith("record_ids") and isinstance(item, list):
                out[key] = [in_text(i) if isinstance(i, str) and "#" in i else i for i in item]
            elif key == "source_id" and isinstance(item, str) and item.startswith("inv-"):
                out[key] = in_text(item)
            else:
                out[key] = _remap(item, id_map)
        if isinstance(out.get("msg"), dict):
            # The English text beside a renumbered message (a finding's message, a check's detail,
            # a filter's reason) says what the message says.
            for text in ("message", "detail", "reason"):
                if isinstance(out.get(text), str) and out[text]:
                    out[text] = localized(out[text], out["msg"], "en")
        return out
    if isinstance(value, list):
        return [_remap(v, id_map) for v in value]
    return value


_ID_IN_TEXT = re.compile(r"(?<![\w#-])(\d+)(?=#|\b)")


def _remap_message(message: dict[str, JsonValue], id_map: dict[int, int]) -> dict[str, JsonValue]:
    """A finding's message (code + parameters) citing the stored ids: `invocation` and the ids
    inside `cited` ("58#3, 61#2") and `ids` ("[58, 61]"). An id the bundle does not hold keeps the
    number the bundle wrote: the finding is about that citation."""
    written = message["params"]
    params = dict(written) if isinstance(written, dict) else {}
    inv = params.get("invocation")
    if isinstance(inv, int) and not isinstance(inv, bool):
        params["invocation"] = id_map.get(inv, inv)
    for key in ("cited", "ids"):
        text = params.get(key)
        if isinstance(text, str):
            params[key] = _ID_IN_TEXT.sub(lambda m: str(id_map.get(int(m[1]), m[1])), text)
    parts = message.get("then")
    then = [_remap(m, id_map) for m in parts] if isinstance(parts, list) else []
    return {**message, "params": params, **({"then": then} if "then" in message else {})}


def _as_stored(bundle: SessionBundle, max_bytes: int) -> tuple[SessionBundle, dict[int, int]]:
    """The bundle with each invocation as it will be stored (output capped, secrets redacted),
    and the bytes cut from each output."""
    invocations, cuts = [], {}
    for inv in bundle.tool_invocations:
        output, cuts[inv.id] = cap_text(inv.output, max_bytes)
        invocations.append(inv.model_copy(update={
            "output": redact(output), "error": redact(inv.error) if inv.error else inv.error,
            "arguments": redact_value(inv.arguments)}))
    return bundle.model_copy(update={"tool_invocations": invocations}), cuts


def _claimed(bundle: SessionBundle, signature: SignatureCheck, trace: TraceOrigin | None) -> Claimed:
    claimed = (bundle.verifier_evaluation or {}).get("verdict")
    out: Claimed = redact_value({
        "signature": {"provenance": signature.provenance, "reason": signature.reason, "key": signature.key},
        "verdict": None if claimed is None else str(claimed),
        "verifier_output": bundle.verifier_output,
        "verifier_evaluation": bundle.verifier_evaluation,
        "composer_output": bundle.composer_output,
        "final_answer": bundle.final_answer,
        "provider": bundle.session.provider,
        "model": bundle.session.model,
        "session_id": bundle.session.id,
        **({"trace": trace} if trace else {}),
    })
    return out


def import_bundle(store: Store, bundle: SessionBundle, *, settings: Settings, rules: RuleSet,
                  provider: Provider, origin: SignatureCheck | None = None,
                  trace: TraceOrigin | None = None, trigger: Trigger | None = None,
                  trigger_key: str | None = None) -> ImportResult:
    """`origin` stands for the signature check where the bundle was built here from what
    another agent sent (pipeline/bundles/trace_session.py); `trace` says what it was built from,
    kept under claimed_by_source; `trigger` and `trigger_key` what brought it, as a session's."""
    signature = origin or check_signature(bundle.document, trusted_keys(settings),
                                          ran_in_store(store.get_session, own_key(settings)))
    stored, cuts = _as_stored(bundle, settings.budget.max_stored_output_bytes)
    calls: list[LlmCallRecord] = []
    # Our verifier and composer, not the bundle's: given outputs would be trusted by check.
    unverified = stored.model_copy(update={"verifier_output": None, "composer_output": None})
    ev = check_bundle(unverified, settings=settings, rules=rules, provider=provider, record=calls.append)
    invocations = [
        {"round": inv.round, "tool_name": inv.tool_name, "model_tool_name": inv.model_tool_name,
         "arguments": inv.arguments, "status": inv.status, "output": inv.output, "error": inv.error,
         "latency_ms": inv.latency_ms, "stored_cut_bytes": cuts[inv.id]}
        for inv in stored.tool_invocations
    ]
    claimed = _claimed(bundle, signature, trace)
    ungated_by = rules.ungated_by(gatekeeper_enabled=settings.gatekeeper.enabled)
    id_map: dict[int, int] = {}

    def finish(new_ids: list[int]) -> dict[str, Any]:
        id_map.update(zip((inv.id for inv in stored.tool_invocations), new_ids, strict=True))
        _, structured = parse_executor_output(stored.executor_raw_output)
        raw = stored.executor_raw_output
        if structured is not None:
            raw = json.dumps(_remap(structured.raw, id_map), ensure_ascii=False)
        evaluation = _remap(ev.round_audit.model_dump(mode="json"), id_map)
        return {
            "status": "completed", "stage": "imported", "planner_plan": redact_value(stored.planner_plan),
            "evidence_digests": _remap([d.model_dump() for d in stored.evidence_digests], id_map),
            "executor_raw_output": redact(raw),
            "verifier_output": _remap(ev.verifier_output.model_dump(mode="json"), id_map),
            "composer_output": ev.composer_output.model_dump(mode="json"),
            "self_evaluation": {"verifier_evaluation": evaluation, "rounds": [], "claimed_by_source": claimed},
            "verdict": ev.verdict, "gatekeeper_status": ev.gatekeeper_result.status,
            "failed_rules": ev.gatekeeper_result.failed_rules, "groundedness": ev.verifier_output.groundedness_score,
            "final_answer": ev.final_answer, "gatekeeper_features": _remap(ev.features, id_map),
            "imported_id_map": {str(k): v for k, v in id_map.items()},
            "provenance": signature.provenance, "ungated": bool(ungated_by),
        }

    sid = new_session_id()
    session: dict[str, Any] = {"id": sid, "question": redact(bundle.session.question), "world": None,
                               "shape": bundle.session.shape, "provider": bundle.session.provider,
                               "model": bundle.session.model}
    if trigger is not None:
        session |= {"trigger": trigger, "trigger_key": trigger_key}
    if bundle.session.created_at is not None:
        session["created_at"] = bundle.session.created_at
    store.add_whole_session(session=session, invocations=invocations,
                            llm_calls=[rec.redacted() for rec in calls], finish=finish)
    return ImportResult(session_id=sid, id_map=dict(id_map), verdict=ev.verdict,
                        claimed_verdict=claimed.get("verdict"), capped=[i for i, cut in cuts.items() if cut],
                        signature=signature, ungated_by=ungated_by)

