"""Question coverage: per asked service, did the evidence answer the question? Decided in code.

Law 8: a PASS answers the question asked. For each service of the question's scope:
- answered     a verified claim is about it (a direct observation or a reasonable inference,
               backed by evidence the gatekeeper accepted);
- healthy      verified claims are about it, none of them shows a fault, and nothing its tools
               returned for it is a fault (no ERROR/FATAL line, no firing warning/critical alert);
- no_data      its tools were asked and returned nothing usable for it;
- not_queried  no tool call was about it at all.
A claim whose cited records all lie outside the asked time window does not count: the detail
says the evidence is outside the window. The verdict policy (pipeline.policy) keeps any session
with a service neither answered nor healthy off PASS.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pipeline.contracts import (
    ClaimCheck,
    CoverageStatus,
    GatekeeperResult,
    QuestionScope,
    ServiceCoverage,
    ToolInvocation,
)
from pipeline.messages import msg, render
from pipeline.text import normalize
from pipeline.tools.results import read_result

VERIFIED = frozenset({"direct_observation", "reasonable_inference"})
_FAULT_LEVELS = frozenset({"ERROR", "FATAL", "CRITICAL"})
_FAULT_SEVERITIES = frozenset({"warning", "critical", "error", "page"})
# Used only for a claim whose cited record cannot be located (e.g. a paraphrasing LLM): then its
# own words decide whether it reports a fault.
_FAULT_WORDS = (
    "error", "exception", "failed", "failure", "timeout", "timed out", "refused", "unavailable", "outofmemory",
    "5xx", "crash", "超时", "失败", "错误", "异常", "故障", "不可用",
)


@dataclass(frozen=True)
class Record:
    """One log line or alert of a tool output, as coverage needs it."""

    invocation_id: int
    service: str
    text: str  # normalised message / description
    fault: bool
    at: datetime | None
    # An alert spans startsAt..endsAt (None while it fires); a log line is one instant.
    until: datetime | None = None
    ongoing: bool = False


def records(inv: ToolInvocation) -> list[Record]:
    """The log lines and alerts of one successful invocation (runbooks are not evidence of state)."""
    if inv.status != "ok" or inv.tool_name not in ("query_logs", "query_metrics"):
        return []
    out = []
    for r in read_result(inv.output).of_kind("log", "alert"):
        if r.kind == "log":
            out.append(Record(inv.id, r.service, normalize(r.text), r.level in _FAULT_LEVELS, r.at, r.until))
        else:
            firing = (r.status or "firing") == "firing"
            out.append(Record(inv.id, r.service, normalize(r.text), firing and r.severity in _FAULT_SEVERITIES,
                              r.at, r.until, ongoing=firing))
    return out


def _asks_about(inv: ToolInvocation, service: str) -> bool:
    args = inv.arguments
    named = [args.get("service"), *(args.get("keywords") or []), args.get("query"), args.get("promql")]
    return any(isinstance(v, str) and service in normalize(v) for v in named)


def _in_window(r: Record, scope: QuestionScope) -> bool:
    """The record overlaps the asked window (a record without a time is given the benefit)."""
    w = scope.time_window
    if r.at is None or w is None:
        return True
    until = None if r.ongoing else (r.until or r.at)
    return (w.end is None or r.at <= w.end) and (w.start is None or until is None or until >= w.start)


def _claim_records(claim: Mapping[str, Any], by_id: Mapping[int, list[Record]]) -> list[Record]:
    found = []
    for binding in claim.get("evidence_bindings") or []:
        if not isinstance(binding, dict):
            continue
        excerpt = normalize(str(binding.get("evidence_excerpt", "")))
        for inv_id in binding.get("source_invocation_ids") or []:
            found += [r for r in by_id.get(inv_id, []) if excerpt and (excerpt in r.text or r.text in excerpt)]
    return found


def compute_coverage(
    scope: QuestionScope | None,
    structured: Mapping[str, Any] | None,
    claim_checks: Sequence[ClaimCheck],
    invocations: Iterable[ToolInvocation],
    gatekeeper_result: GatekeeperResult,
    backends: str = "the configured backends",
) -> list[ServiceCoverage]:
    """One ServiceCoverage per asked service, in the scope's order. `claim_checks` should be the
    checks after the gatekeeper's corrections; unbacked claims never count."""
    if scope is None or not scope.services:
        return []
    invs = list(invocations)
    by_id = {inv.id: records(inv) for inv in invs}
    verified = {c.claim_id for c in claim_checks if c.verification in VERIFIED} - set(gatekeeper_result.unbacked_claims)
    claims = [c for c in (structured or {}).get("claims") or [] if isinstance(c, dict)]
    out = []
    for service in scope.services:
        name = normalize(service)
        about: list[tuple[str, list[Record]]] = []
        outside: list[str] = []
        for claim in claims:
            cid = str(claim.get("claim_id", ""))
            cited = _claim_records(claim, by_id)
            if cid not in verified or not (name in normalize(str(claim.get("claim_text", "")))
                                           or any(r.service == service for r in cited)):
                continue
            if cited and not any(_in_window(r, scope) for r in cited):
                outside.append(cid)
                continue
            about.append((cid, cited))
        own = [r for rs in by_id.values() for r in rs if r.service == service and _in_window(r, scope)]
        asked = [inv.id for inv in invs if _asks_about(inv, service) or any(r.service == service for r in by_id[inv.id])]
        ids = sorted({*asked, *(r.invocation_id for _, cited in about for r in cited)})
        claim_ids = [cid for cid, _ in about]
        status: CoverageStatus
        if about:
            faulty = [cid for cid, cited in about if _shows_fault(cid, cited, claims)]
            if not faulty and not any(r.fault for r in own):
                status, detail = "healthy", msg("coverage.healthy", service=service, calls=_calls(ids))
            else:
                status, detail = "answered", msg("coverage.answered", count=len(claim_ids), service=service)
        elif asked:
            status = "no_data"
            detail = (msg("coverage.unclaimed", count=len(own), service=service) if own
                      else msg("coverage.no_records", service=service, backends=backends, calls=_calls(asked)))
        else:
            status, detail = "not_queried", msg("coverage.not_queried", service=service)
        if outside:
            detail.then.append(msg("coverage.outside_window", claims=", ".join(outside)))
        out.append(ServiceCoverage(service=service, status=status, claim_ids=claim_ids, invocation_ids=ids,
                                   detail=render(detail, "en"), msg=detail))
    return out


def _shows_fault(cid: str, cited: list[Record], claims: list[dict[str, Any]]) -> bool:
    if cited:
        return any(r.fault for r in cited)
    text = next((normalize(str(c.get("claim_text", ""))) for c in claims if str(c.get("claim_id")) == cid), "")
    return any(w in text for w in _FAULT_WORDS)


def _calls(ids: Iterable[int]) -> str:
    return ", ".join(f"#{i}" for i in ids) or "no call"


def backends_label(kinds: Mapping[str, str]) -> str:
    """"bundled logs, bundled alerts" / "loki logs, prometheus alerts": where the answer says it looked."""
    return ", ".join(f"{kind} {what}" for what, kind in kinds.items())
