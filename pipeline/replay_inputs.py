"""Stored sessions -> gatekeeper ReplayInputs, read in bulk so a preview over 10,000 sessions is quick.

The verifier side of a projected verdict is the §17 matrix over the stored claim_checks with the
gatekeeper taken as passing; the replay then adds the candidate rules' gatekeeper floor. (An
LLM verifier that saw the old gatekeeper result may have judged claims by it; that influence
cannot be undone without re-running the verifier, so relaxing a rule lifts no claim check.)
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from pipeline.contracts import ClaimCheck, EvidenceDigest
from pipeline.gatekeeper import ReplayInput, cited_invocation_ids
from pipeline.stages.verdict import matrix_verdict
from pipeline.store import Store
from pipeline.store.schema import ToolInvocationRow


def _input(row: dict[str, Any], owners: dict[int, tuple[str, str]]) -> ReplayInput | None:
    evaluation = (row.get("self_evaluation") or {}).get("verifier_evaluation")
    if not evaluation:
        return None
    structured = evaluation.get("executor_structured_output")
    parse_status = (evaluation.get("executor_output_parse_status") or {}).get("status", "missing")
    digests = [EvidenceDigest.model_validate(d) for d in row.get("evidence_digests") or []] \
        if row.get("shape") == "split" else None
    checks = [ClaimCheck.model_validate(c) for c in evaluation.get("claim_checks", [])]
    verifier_side, _ = matrix_verdict(structured=structured, claim_checks=checks, parse_status=parse_status,
                                      gatekeeper_status="pass")
    gate = evaluation.get("gatekeeper_result") or {}
    cited = cited_invocation_ids(structured, digests)
    return ReplayInput(
        session_id=row["id"], structured=structured, parse_status=parse_status,
        invocations={i: owners[i] for i in cited if i in owners}, features=row.get("gatekeeper_features") or {},
        digests=digests, old_status=gate.get("status", "pass"), old_verdict=row.get("verdict") or "LOW_CONFID",
        verifier_verdict=verifier_side, old_failed_rules=list(gate.get("failed_rules", [])),
        old_warnings=list(gate.get("warnings", [])),
    )


def replay_inputs(store: Store) -> list[ReplayInput]:
    with store.engine.connect() as conn:
        owners = {i: (s, t) for i, s, t in conn.execute(
            select(ToolInvocationRow.id, ToolInvocationRow.session_id, ToolInvocationRow.tool_name))}
    items = (_input(row, owners) for row in store.iter_sessions())
    return [item for item in items if item is not None]
