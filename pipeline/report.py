"""The audit chain of one session as readable text (`workbench show`), top down like the Trace page."""

from __future__ import annotations

import json
from typing import Any

from pipeline.errors import NotFound
from pipeline.store import Store


def _section(title: str) -> str:
    return f"\n== {title} " + "=" * max(3, 70 - len(title))


def render_trace(store: Store, session_id: str) -> str:
    row = store.get_session(session_id)
    if row is None:
        raise NotFound(f"no session {session_id}")
    ev: dict[str, Any] = (row.get("self_evaluation") or {}).get("verifier_evaluation") or {}
    lines = [
        f"session {row['id']}  ({row['status']}, stage {row['stage']})",
        f"question: {row['question']}",
        f"world: {row.get('world') or '-'}   shape: {row['shape']}   provider: {row['provider']} / {row['model']}",
        f"verdict: {row.get('verdict') or '-'}   gatekeeper: {row.get('gatekeeper_status') or '-'}   "
        f"groundedness: {row.get('groundedness')}",
    ]
    if row.get("error"):
        lines.append(f"error: {row['error']}")
    lines += [_section("final answer"), row.get("final_answer") or "(none)"]
    guard = ev.get("composer_guard") or {}
    if guard:
        lines.append(f"composer guard: {guard.get('status')}" + (" (fixed template used)" if guard.get("used_template") else ""))
        lines += [f"  - {v['kind']}: {v['token']}" for v in guard.get("violations", [])]
    ci = ev.get("composer_input") or {}
    lines.append(_section("composer input"))
    lines += [f"  claim {c['claim_id']} [{c['claim_type']}]: {c['claim_text']}" for c in ci.get("allowed_claims", [])]
    lines += [f"  hypothesis: {h['hypothesis_text']}" for h in ci.get("allowed_hypotheses", [])]
    lines += [f"  missing: {m}" for m in ci.get("missing_info", [])]
    lines += [f"  action: {a['action_text']}" for a in ci.get("recommended_actions", [])]
    lines += [f"  filtered {f['source']}: {f['reason']}" for f in ev.get("composer_filtered", [])]
    lines.append(_section("verifier"))
    lines.append(f"verifier said {ev.get('verifier_verdict')}; final {ev.get('verdict')}; rationale: {ev.get('rationale', '')}")
    lines += [f"  guard: {r}" for r in ev.get("verdict_guard_reasons", [])]
    lines += [f"  {c['claim_id']}: {c['verification']} - {c.get('detail', '')}" for c in ev.get("claim_checks", [])]
    lines += [f"  digest {d['digest_id']}: {d['verification']} {d.get('detail', '')}" for d in ev.get("digest_checks", [])]
    gate = ev.get("gatekeeper_result") or {}
    lines.append(_section("gatekeeper"))
    lines.append(f"status {gate.get('status')}; failed {gate.get('failed_rules')}; warnings {gate.get('warnings')}")
    lines += [f"  {e['rule_id']} @ {e['target']}: {e['message']}" for e in gate.get("errors", [])]
    structured = ev.get("executor_structured_output") or {}
    lines.append(_section(f"executor output (parse: {(ev.get('executor_output_parse_status') or {}).get('status')})"))
    for c in structured.get("claims", []) if isinstance(structured.get("claims"), list) else []:
        lines.append(f"  {c.get('claim_id')} [{c.get('claim_type')}/{c.get('support_level')}] {c.get('claim_text')}")
        for b in c.get("evidence_bindings") or []:
            lines.append(f"      <- {b.get('tool_name')} {b.get('source_invocation_ids')} "
                         f"{b.get('digest_id') or ''}: “{b.get('evidence_excerpt')}”")
    for d in row.get("evidence_digests") or []:
        lines.append(f"  digest {d['digest_id']} <- {d['source_invocation_ids']}: {d['summary']}")
    lines.append(_section("tool invocations"))
    for inv in store.invocation_meta(session_id):
        lines.append(f"  #{inv['id']} r{inv['round']} {inv['model_tool_name']} {json.dumps(inv['arguments'], ensure_ascii=False)}"
                     f" -> {inv['status']} ({inv['output_bytes']} bytes, {inv['latency_ms']:.1f} ms)"
                     + (f" error: {inv['error']}" if inv["error"] else ""))
    lines.append(_section("llm calls"))
    for call in store.llm_calls(session_id):
        lines.append(f"  {call['stage']} r{call['round']} #{call['attempt']} {call['provider']}/{call['model']} "
                     f"parse={call['parse_status']} tokens={call['prompt_tokens']}+{call['completion_tokens']} "
                     f"{call['latency_ms']:.1f} ms" + (f" error: {call['error']}" if call["error"] else ""))
    return "\n".join(lines)
