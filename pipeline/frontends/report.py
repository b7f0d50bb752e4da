"""The audit chain of one session as readable text (`workbench show`), top down like the Trace page."""

from __future__ import annotations

import json

from pipeline.core.messages import localized, value_name
from pipeline.frontends.views.trace import verdict_reasons
from pipeline.store import Store
from pipeline.store.record import SessionRecord, read_session, verdict_text


def _section(title: str) -> str:
    return f"\n== {title} " + "=" * max(3, 70 - len(title))


def _status(value: str | None, lang: str) -> str:
    """A status id in `lang`'s words with the id beside it where they differ ("未通过 (fail)"): a
    reader reads the word, a script or a search still finds the id."""
    if not value:
        return "-"
    words = value_name(value, lang)
    return value if words == value else f"{words} ({value})"


def render_trace(store: Store, session_id: str, lang: str = "en") -> str:
    """Raises NotFound for an unknown id."""
    return render_record(read_session(store, session_id), lang)


def render_record(r: SessionRecord, lang: str = "en") -> str:
    """The statuses and the engine's messages (reasons, findings, coverage) in `lang`; the layout's
    labels stay English, as the field names a script reads them by."""

    def st(value: str | None) -> str:
        return _status(value, lang)

    lines = [
        f"session {r.id}  ({st(r.status)}, stage {r.stage})",
        f"question: {r.question}",
        f"world: {r.world or '-'}   shape: {r.shape}   provider: {r.provider} / {r.model}",
        f"verdict: {verdict_text(r.verdict, r.marks)}   gatekeeper: {st(r.gatekeeper_status)}   groundedness: {r.groundedness}",
    ]
    if r.error:
        lines.append(f"error: {r.error}")
    source = r.claimed_by_source
    if source is not None:
        sig = source.signature
        lines.append(f"imported: source session {source.session_id!r}, source claimed {source.verdict or '-'}; "
                     f"provenance {r.provenance or '-'}" + (f" ({sig.reason})" if sig and sig.reason else ""))
    lines += [_section("final answer"), r.final_answer or "(none)"]
    ev = r.evaluation
    if ev is None:
        lines.append("(no verification yet: the session stopped before it)")
    else:
        if ev.composer_guard:
            g = ev.composer_guard
            lines.append(f"composer guard: {st(g.status)}" + (" (fixed template used)" if g.used_template else ""))
            lines += [f"  - {v.kind}: {v.token}" for v in g.violations]
        lines.append(_section("composer input"))
        if ev.composer_input:
            ci = ev.composer_input
            lines += [f"  claim {c.claim_id} [{c.claim_type}]: {c.claim_text}" for c in ci.allowed_claims]
            lines += [f"  hypothesis: {h.hypothesis_text}" for h in ci.allowed_hypotheses]
            lines += [f"  missing: {m}" for m in ci.missing_info]
            lines += [f"  action: {a.action_text}" for a in ci.recommended_actions]
        lines += [f"  filtered {f.source}: {localized(f.reason, f.msg, lang)}" for f in ev.composer_filtered]
        lines.append(_section("verifier"))
        lines.append(f"verifier said {ev.verifier_verdict}; final {ev.verdict}; rationale: {ev.rationale}")
        lines += [f"  guard: {reason}" for reason in verdict_reasons(ev, lang)]
        lines += [f"  {c.claim_id}: {st(c.verification)} - {c.detail}" for c in ev.claim_checks]
        lines += [f"  digest {d.digest_id}: {st(d.verification)} {d.detail}" for d in ev.digest_checks]
        lines += [f"  coverage {c.service or '*'}/{c.symptom}: {st(c.status)} {localized(c.detail, c.msg, lang)}"
                  for c in ev.question_coverage]
        if ev.question_form_coverage is not None:
            f = ev.question_form_coverage
            lines.append(f"  form {f.form}: {st(f.status)}{' ' + f.answer if f.answer else ''} (decided by "
                         f"{f.service or '*'}/{f.symptom}) {localized(f.detail, f.msg, lang)}")
        gate = ev.gatekeeper_result
        lines.append(_section("gatekeeper"))
        lines.append(f"status {st(gate.status)}; failed {gate.failed_rules}; warnings {gate.warnings}")
        lines += [f"  {e.rule_id} @ {e.target}: {localized(e.message, e.msg, lang)}" for e in gate.errors]
        lines.append(_section(f"executor output (parse: {st(ev.executor_output_parse_status.status)})"))
    for c in r.claims:
        lines.append(f"  {c.key} [{c.claim_type or ''}/{c.support_level or ''}] {c.claim_text or ''}")
        for b in c.evidence_bindings or ():
            lines.append(f"      <- {b.tool_name or ''} {b.source_invocation_ids} {b.digest_id or ''}: “{b.evidence_excerpt or ''}”")
    for d in r.evidence_digests:
        lines.append(f"  digest {d.digest_id} <- {d.source_invocation_ids}: {d.summary}")
    lines.append(_section("tool invocations"))
    for inv in r.invocations:
        lines.append(f"  #{inv.id} r{inv.round} {inv.model_tool_name} {json.dumps(inv.arguments, ensure_ascii=False)}"
                     f" -> {st(inv.status)} ({inv.output_bytes} bytes, {inv.latency_ms:.1f} ms)"
                     + (f" error: {inv.error}" if inv.error else ""))
    lines.append(_section("llm calls"))
    for call in r.llm_calls:
        lines.append(f"  {call.stage} r{call.round} #{call.attempt} {call.provider}/{call.model} "
                     f"parse={call.parse_status} tokens={call.prompt_tokens}+{call.completion_tokens} "
                     f"{call.latency_ms:.1f} ms" + (f" error: {call.error}" if call.error else ""))
    if r.reviews:
        lines.append(_section("reviews"))
        lines += [f"  {rv.created_at:%Y-%m-%d %H:%M} {rv.reviewer}: {rv.label}"
                  + (f" on {rv.claim_id}" if rv.claim_id else "") + (f" — {rv.note}" if rv.note else "")
                  for rv in r.reviews]
    return "\n".join(lines)
