"""Session bundle v1: one session as a JSON file, for export, import and offline checking.

A team can export its own agent's sessions in this shape and run `workbench check` in CI.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.contracts import EvidenceDigest, ToolInvocation
from pipeline.stages.parse import parse_executor_output
from pipeline.store import Store


class BundleError(ValueError):
    """A bundle that cannot be read; the message names the bad field."""


class BundleSession(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str
    question: str
    shape: Literal["split", "single"] = "split"
    provider: str = "unknown"
    model: str = "unknown"
    created_at: datetime | None = None


class SessionBundle(BaseModel):
    model_config = ConfigDict(extra="ignore")
    bundle_version: Literal[1]
    session: BundleSession
    planner_plan: dict[str, Any] | None = None
    tool_invocations: list[ToolInvocation]
    evidence_digests: list[EvidenceDigest] = Field(default_factory=list)
    executor_raw_output: str
    verifier_output: dict[str, Any] | None = None
    composer_output: dict[str, Any] | str | None = None
    verifier_evaluation: dict[str, Any] | None = None
    final_answer: str | None = None


def _field_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def parse_bundle(data: Any) -> SessionBundle:
    try:
        bundle = SessionBundle.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise BundleError(f"bad bundle field {_field_path(first['loc'])}: {first['msg']}{more}") from exc
    foreign = [inv.id for inv in bundle.tool_invocations if inv.session_id != bundle.session.id]
    if foreign:
        raise BundleError(f"bad bundle field tool_invocations: invocations {foreign} belong to another session "
                          f"than session.id {bundle.session.id!r}")
    return bundle


def load_bundle(path: Path) -> SessionBundle:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise BundleError(f"no such bundle file: {path}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleError(f"{path} is not a JSON bundle: {exc}") from exc
    return parse_bundle(data)


def export_bundle(store: Store, session_id: str) -> dict[str, Any]:
    row = store.get_session(session_id)
    if row is None:
        raise KeyError(f"no session {session_id}")
    evaluation = (row.get("self_evaluation") or {}).get("verifier_evaluation")
    return {
        "bundle_version": 1,
        "session": {"id": row["id"], "question": row["question"], "shape": row["shape"],
                    "provider": row["provider"], "model": row["model"],
                    "created_at": row["created_at"].isoformat() if row["created_at"] else None},
        "planner_plan": row.get("planner_plan"),
        "tool_invocations": [inv.model_dump() for inv in store.invocations(session_id)],
        "evidence_digests": row.get("evidence_digests") or [],
        "executor_raw_output": row.get("executor_raw_output") or "",
        "verifier_output": row.get("verifier_output"),
        "composer_output": row.get("composer_output"),
        "verifier_evaluation": evaluation,
        "final_answer": row.get("final_answer"),
    }


def _remap_ids(value: Any, id_map: dict[int, int]) -> Any:
    """Rewrite every source_invocation_ids list in a JSON value with the new ids."""
    if isinstance(value, dict):
        return {k: ([id_map.get(i, i) for i in v] if k == "source_invocation_ids" and isinstance(v, list)
                    else _remap_ids(v, id_map)) for k, v in value.items()}
    if isinstance(value, list):
        return [_remap_ids(v, id_map) for v in value]
    return value


def import_bundle(store: Store, bundle: SessionBundle) -> tuple[str, dict[int, int]]:
    """Store a bundle as a new session. Invocation ids are always renumbered (they are global in
    this store), and every reference is rewritten, so two sessions' calls never merge."""
    sid = bundle.session.id
    if store.session_exists(sid):
        sid = f"{sid}-imp-{len(store.session_ids())}"
    store.create_session(question=bundle.session.question, world=None, shape=bundle.session.shape,
                         provider=bundle.session.provider, model=bundle.session.model, session_id=sid,
                         created_at=bundle.session.created_at)
    id_map: dict[int, int] = {}
    for inv in bundle.tool_invocations:
        new = store.add_invocation(session_id=sid, round=inv.round, tool_name=inv.tool_name,
                                   model_tool_name=inv.model_tool_name, arguments=inv.arguments, status=inv.status,
                                   output=inv.output, error=inv.error, latency_ms=inv.latency_ms)
        id_map[inv.id] = new.id
    raw = bundle.executor_raw_output
    status, structured = parse_executor_output(raw)
    if status.status == "valid" and id_map:
        raw = json.dumps(_remap_ids(structured, id_map), ensure_ascii=False)
    digests = [_remap_ids(d.model_dump(), id_map) for d in bundle.evidence_digests]
    evaluation = _remap_ids(bundle.verifier_evaluation, id_map) if bundle.verifier_evaluation else None
    verdict = (evaluation or {}).get("verdict")
    gate = (evaluation or {}).get("gatekeeper_result") or {}
    store.update_session(
        sid, status="completed" if evaluation else "imported", stage="imported", planner_plan=bundle.planner_plan,
        evidence_digests=digests, executor_raw_output=raw,
        verifier_output=_remap_ids(bundle.verifier_output, id_map) if bundle.verifier_output else None,
        composer_output=bundle.composer_output if isinstance(bundle.composer_output, dict) else None,
        self_evaluation={"verifier_evaluation": evaluation, "rounds": []} if evaluation else None,
        verdict=verdict, gatekeeper_status=gate.get("status"), failed_rules=gate.get("failed_rules", []),
        groundedness=(evaluation or {}).get("groundedness_score"), final_answer=bundle.final_answer,
        imported_id_map={str(k): v for k, v in id_map.items()},
    )
    return sid, id_map
