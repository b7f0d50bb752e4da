"""Offline Diagnosis: Executor V2 claims from digests, causes as hypotheses, gaps as missing_info.

A claim restates one digest's verbatim quote, so it is a direct observation of a tool output.
A failure signature found in the quotes becomes a hypothesis with the evidence it still needs;
only a quote that itself states a cause ("caused by", "导致") may become a root_cause claim.
"""

from __future__ import annotations

import json

from pipeline.core.contracts import (
    Claim,
    EvidenceBinding,
    EvidenceDigest,
    ExecutorOutputV2,
    Hypothesis,
    RecommendedAction,
    ToolInvocation,
)
from pipeline.core.messages import catalogue, family, lang_of, tr
from pipeline.llm.offline.signatures import SIGNATURES
from pipeline.text.lexicon import STATED_CAUSE
from pipeline.text.primitives import extract_entities, normalize
from pipeline.tools.registry import model_name
from pipeline.tools.results import read_result
from pipeline.verdict.proposition import CHANGE

MAX_CLAIMS = 6


def _service_of(d: EvidenceDigest, known: list[str]) -> str:
    head = normalize(d.summary)
    services = [s for s in known if s in head] or [e.value for e in extract_entities(d.summary) if e.kind == "service"]
    # The summary starts with the service; prefer the earliest mention.
    return min(services, key=lambda s: head.find(s)) if services else ""


def _ended(d: EvidenceDigest, invocations: list[ToolInvocation]) -> bool:
    """An alert digest whose alert has resolved and reports a state, not a change: a resolved CPU
    alert points at no failure in progress, where a resolved "发布完成" or "配置变更" still shows
    that the change happened."""
    if d.domain != "alerts" or CHANGE.search(normalize(d.source_quote)):
        return False
    return any(a.status == "resolved" and a.text.strip() == d.source_quote.strip()
               for inv in invocations if inv.id in d.source_invocation_ids and inv.status == "ok"
               for a in read_result(inv.output).of_kind("alert"))


def _component_of(d: EvidenceDigest, kind: str, known: list[str]) -> str:
    """The component of `kind` ("redis") a digest is about: its service, else a known service its
    quote names ("redis command timeout ... redis-cart"); "" when it names none."""
    own = _service_of(d, known)
    if kind in own:
        return own
    quote = normalize(d.source_quote)
    return next((s for s in known if kind in s and s in quote), "")


def _runbook_title(summary: str, lang: str) -> str:
    """The runbook title inside a knowledge digest's summary, read around the catalogue text that wrote
    it (offline.digest.runbook)."""
    before, _, rest = catalogue(lang_of(lang))["offline.digest.runbook"].partition("{title}")
    after = rest.partition("{quote}")[0]
    return summary.removeprefix(before).partition(after)[0]


def _claim_text(d: EvidenceDigest, service: str, lang: str) -> str:
    quote = d.source_quote.rstrip("。.")
    if d.domain == "alerts":
        return tr("offline.diagnosis.alert_claim", lang, service=service, quote=quote)
    return tr("offline.diagnosis.log_claim", lang, service=service, quote=quote)


def _binding(d: EvidenceDigest, with_digest: bool) -> EvidenceBinding:
    return EvidenceBinding(
        source_type="evidence_digest" if with_digest else "tool_trace",
        source_id=d.digest_id if with_digest else f"inv-{d.source_invocation_ids[0]}",
        tool_name=d.tool,
        source_invocation_ids=list(d.source_invocation_ids),
        source_record_ids=list(d.source_record_ids) if d.source_record_ids else None,
        evidence_excerpt=d.source_quote,
        digest_id=d.digest_id if with_digest else None,
    )


def _runbook_relevance(d: EvidenceDigest, invocations: list[ToolInvocation]) -> float | None:
    """The relevance the knowledge tool gave the block this digest quotes (None: unknown)."""
    for inv in invocations:
        if inv.id not in d.source_invocation_ids or inv.status != "ok":
            continue
        for block in read_result(inv.output).of_kind("block"):
            if normalize(d.source_quote) in normalize(block.text):
                return block.number_value("relevance")
    return None


def _matches_scope(d: EvidenceDigest, invocations: list[ToolInvocation], asked: list[str], words: list[str]) -> bool:
    """A runbook is suggested only when it names an asked service or the symptom."""
    texts = [normalize(d.summary)]
    for inv in invocations:
        if inv.id in d.source_invocation_ids and inv.status == "ok":
            texts.append(normalize(inv.output))
    text = "\n".join(texts)
    return any(normalize(s) in text for s in asked) or any(normalize(w) in text for w in words)


def diagnose(
    digests: list[EvidenceDigest],
    invocations: list[ToolInvocation],
    focus_services: set[str],
    known_services: list[str],
    lang: str,
    with_digest_ids: bool,
    asked: tuple[str, ...] = (),
    symptom_words: tuple[str, ...] = (),
    asked_pairs: tuple[tuple[str, tuple[str, ...]], ...] = (),
    asked_events: tuple[tuple[str, tuple[str, ...]], ...] = (),
) -> str:
    """Executor V2 JSON. `asked` are the question's services: their evidence is claimed first,
    and a failure mode on one of them is the most likely cause. `asked_pairs`: each asked
    service with the search words of each symptom asked of it; `asked_events` those of them whose
    symptom is an event (a restart)."""
    in_order = [d for d in digests if d.domain != "knowledge"]
    knowledge = [d for d in digests if d.domain == "knowledge"]
    # The asked services' evidence is claimed first, so every asked service that has any gets a
    # claim; failure modes are still read in the digest's order (alerts first).
    # When an asked service's own lines never name a symptom asked of it, one line of another
    # service about it that does ("inventory check failed: inventory-service timed out after
    # 2000ms") comes first: the symptom as seen from outside is the evidence the question asks for.
    told: set[int] = set()
    for service, words in asked_pairs:
        def names(d: EvidenceDigest, words: tuple[str, ...] = words) -> bool:
            return any(normalize(w) in normalize(d.source_quote) for w in words)

        if not words or any(_service_of(d, known_services) == service and names(d) for d in in_order):
            continue
        told.update(next(([i] for i, d in enumerate(in_order) if _service_of(d, known_services) not in asked
                          and normalize(service) in normalize(d.source_quote) and names(d)), []))
    # Within an asked service, its lines that name an event asked of it come first: "did
    # inventory-service crash?" is answered by its "JVM exiting" line, which its heap alerts and
    # OutOfMemoryErrors would otherwise push past MAX_CLAIMS.
    asked_words = dict(asked_events)

    def on_the_question(d: EvidenceDigest) -> bool:
        words = asked_words.get(_service_of(d, known_services), ())
        return any(normalize(w) in normalize(d.source_quote) for w in words)

    evidence = [in_order[i] for i in sorted(range(len(in_order)), key=lambda i: (
        i not in told and _service_of(in_order[i], known_services) not in asked, i not in told,
        not on_the_question(in_order[i])))]
    claims: list[Claim] = []
    hypotheses: list[tuple[float, Hypothesis, RecommendedAction, str]] = []
    actions: list[RecommendedAction] = []
    missing: list[str] = []
    seen_text = normalize("\n".join(d.source_quote for d in evidence))

    for d in evidence[:MAX_CLAIMS]:
        service = _service_of(d, known_services)
        quote = normalize(d.source_quote)
        # Only a line that names a failure mode *and* states causation is a root-cause observation;
        # a stack's "Caused by:" alone explains an exception, not the incident.
        states_cause = STATED_CAUSE.search(quote) and any(
            w in quote for sig in SIGNATURES for w in sig.evidence_words)
        claim_type = "root_cause" if states_cause else (
            "symptom" if d.domain == "alerts" or service in focus_services else "observation")
        claims.append(Claim(claim_id=f"claim-{len(claims) + 1}", claim_type=claim_type,
                            claim_text=_claim_text(d, service, lang), support_level="direct",
                            evidence_bindings=[_binding(d, with_digest_ids)]))

    # Only alerting evidence (alerts, WARN/ERROR lines) can point at a failure mode.
    alarming = [d for d in in_order if d.domain == "alerts" or " WARN" in d.summary or " ERROR" in d.summary]
    for sig in SIGNATURES:
        matching = [d for d in alarming if any(w in normalize(d.source_quote) for w in sig.evidence_words)
                    and not _ended(d, invocations)]
        if not matching:
            continue
        if sig.component:
            matching = [d for d in matching if _component_of(d, sig.component, known_services)]
            if not matching:
                continue
            service = _component_of(matching[0], sig.component, known_services)
        else:
            service = _service_of(matching[0], known_services) or (sorted(focus_services)[0] if focus_services else "")
        quote = matching[0].source_quote
        # Evidence already in hand is never asked for again (a jstack line is the thread dump).
        keep = [i for i in range(sig.needed)
                if i >= len(sig.needed_seen) or not any(w in seen_text for w in sig.needed_seen[i])]
        said = family("offline.signature.", lang)
        hyp = said[f"{sig.category}.hypothesis"].format(service=service)
        needed = [said[f"{sig.category}.needed.{i}"].format(service=service) for i in keep]
        action = said[f"{sig.category}.action"].format(service=service)
        basis = tr("offline.diagnosis.basis", lang, quote=quote)
        reason = tr("offline.diagnosis.confirm", lang, hypothesis=hyp)
        gap = tr("offline.diagnosis.gap", lang, needed=needed[0]) if needed else ""
        # Most likely first: a failure mode on an asked service, then one the monitoring system
        # alerts on, then the one with the most matching evidence.
        likelihood = (4.0 * (service in asked) + 2.0 * any(d.domain == "alerts" for d in matching)
                      + 1.0 * (service in focus_services) + 0.5 * len(matching))
        hypotheses.append((likelihood, Hypothesis(hypothesis_text=hyp, basis=basis, needed_evidence=needed),
                           RecommendedAction(action_text=action, reason=reason,
                                             evidence_bindings=[_binding(matching[0], with_digest_ids)]), gap))
    hypotheses.sort(key=lambda item: -item[0])
    for _, _, action_item, gap in hypotheses:
        actions.append(action_item)
        if gap:
            missing.append(gap)

    # A runbook is suggested only when it names an asked service or the symptom, and only once
    # there is evidence of a problem to check it against.
    for d in [k for k in knowledge if evidence and _matches_scope(k, invocations, list(asked), list(symptom_words))][:1]:
        title = _runbook_title(d.summary, lang)
        relevance = _runbook_relevance(d, invocations)
        shown = f"{relevance:.2f}" if relevance is not None else "?"
        actions.append(RecommendedAction(
            action_text=tr("offline.diagnosis.runbook_action", lang, title=title, relevance=shown),
            reason=tr("offline.diagnosis.runbook_reason", lang),
            evidence_bindings=[_binding(d, with_digest_ids)],
        ))

    for inv in invocations:
        if inv.status == "error":
            missing.append(tr("offline.diagnosis.tool_failed", lang, tool=model_name(inv.tool_name), error=inv.error))
    if not evidence:
        missing.append(tr("offline.diagnosis.no_evidence", lang))

    out = ExecutorOutputV2(claims=claims,
                           hypotheses=[h for _, h, _, _ in hypotheses],
                           recommended_actions=actions, missing_info=missing)
    return json.dumps(out.model_dump(exclude_none=True), ensure_ascii=False)
