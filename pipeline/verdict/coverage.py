"""Question coverage: per asked (service, symptom), did the evidence answer the question? Decided in code.

Law 8: a PASS answers the question asked. For each pair of the question's scope
(pipeline.verdict.scope.asked_pairs: "is order-service leaking memory?" asks (order-service, memory)):
- answered     a verified claim is about that symptom of that service (a direct observation or
               a reasonable inference, backed by evidence the gatekeeper accepted) and shows it;
- healthy      verified claims about it show it normal, or a query that could show the symptom
               ran for the service and nothing it returned shows it (no warning, error or firing
               alert about the symptom); the detail gives the figure (a metric's value, the count
               of records looked at);
- no_data      its tools were asked and returned nothing usable for it: the detail says whether
               records came back (and how many) or none did;
- not_queried  no tool call was about the service at all.
A service asked without a symptom (pipeline.verdict.scope.ANY) is answered by any verified claim about it
and healthy only by claims. A claim whose cited records all lie outside the asked time window
does not count: the detail says the evidence is outside the window. The verdict policy
(pipeline.verdict.policy) keeps any session with a pair neither answered nor healthy off PASS, and the
answer's lead and gap sentences are rendered from these rows, so nothing says "no data" for a
service whose records the trace shows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from pipeline.core.contracts import (
    ClaimCheck,
    CoverageStatus,
    ExecutorClaim,
    ExecutorOutput,
    GatekeeperResult,
    QuestionScope,
    ServiceCoverage,
    ToolInvocation,
)
from pipeline.core.messages import msg, render
from pipeline.text.lexicon import FORECAST, OUTAGE, WITHIN_BOUNDS
from pipeline.text.primitives import normalize
from pipeline.tools.results import read_result
from pipeline.verdict.scope import ANY, EVENT_SYMPTOMS, asked_pairs, mentions_symptom, metric_symptoms

VERIFIED = frozenset({"direct_observation", "reasonable_inference"})
_FAULT_LEVELS = frozenset({"ERROR", "FATAL", "CRITICAL"})
_WARN_LEVELS = _FAULT_LEVELS | {"WARN", "WARNING"}
_FAULT_SEVERITIES = frozenset({"warning", "critical", "error", "page"})
# A claim whose cited record cannot be located (e.g. a paraphrasing LLM) reports a fault when its
# own words say so; a warning line does when it names one of the service-failure words below.
_FAULT_WORDS = (
    "error", "exception", "failed", "failure", "timeout", "timed out", "refused", "unavailable", "outofmemory",
    "5xx", "crash", "超时", "失败", "错误", "异常", "故障", "不可用",
)
# "login failed: wrong password" is a user's mistake; "timed out after 2000ms" is the service failing.
_FAILURE_WORDS = ("timeout", "timed out", "refused", "unavailable", "outofmemory", "5xx", "exception", "crash",
                  "超时", "不可用", "异常")
# A warning that its figure is over a limit or a resource is used up ("pool busy: active=200/200
# queued=397", "GET p99 120ms (threshold 100ms)") shows the symptom it is about, as a failure does;
# one that says it stayed within bounds ("slow request within SLO") shows nothing wrong.
_OVER_LIMIT_WORDS = ("busy", "exhausted", "saturated", "backlog", "queued=", "threshold", "exceeded", "over limit",
                     "耗尽", "打满", "饱和", "积压", "阈值")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@dataclass(frozen=True)
class Record:
    """One log line, alert or metric series of a tool output, as coverage needs it."""

    invocation_id: int
    service: str
    text: str  # normalised message / description / "name value"
    fault: bool
    at: datetime | None
    # An alert spans startsAt..endsAt (None while it fires); a log line is one instant.
    until: datetime | None = None
    ongoing: bool = False
    # A warning or worse: a WARN+ line or a firing alert of any severity.
    warns: bool = False
    # What symptom matching reads: the text, with an alert's name split into words.
    topic: str = ""
    # A metric series' name (symptoms are read from it), "" for logs and alerts.
    metric: str = ""
    # The record's own words, as the trace shows them: what a figure quotes.
    raw: str = ""
    alert: bool = False
    number: int = 0  # its record number in the invocation's output
    # An alert of a fault severity, firing or resolved (an "info" config-change notice is not).
    severe: bool = False
    # Where it was written: a log line's host, an alert's pod or instance label ("" when not said).
    host: str = ""


def alert_words(name: str) -> str:
    """An alert's name as the words it is read by ("RedisMemoryHigh" -> "redis memory high")."""
    return normalize(_CAMEL.sub(" ", name))


def records(inv: ToolInvocation) -> list[Record]:
    """The log lines, alerts and series of one successful invocation (runbooks are not evidence of state)."""
    if inv.status != "ok" or inv.tool_name not in ("query_logs", "query_metrics"):
        return []
    out = []
    for r in read_result(inv.output).of_kind("log", "alert", "series"):
        text = normalize(r.text)
        if r.kind == "log":
            out.append(Record(inv.id, r.service, text, r.level in _FAULT_LEVELS, r.at, r.until,
                              warns=r.level in _WARN_LEVELS, topic=text, raw=r.text, number=r.number, host=r.get("host")))
        elif r.kind == "alert":
            firing = (r.status or "firing") == "firing"
            labels = r.fields.get("labels")
            name = r.get("alertname") or (str(labels.get("alertname") or "") if isinstance(labels, Mapping) else "")
            where = next((str(labels[k]) for k in ("pod", "instance") if isinstance(labels, Mapping) and labels.get(k)), "")
            out.append(Record(inv.id, r.service, text, firing and r.severity in _FAULT_SEVERITIES, r.at, r.until,
                              ongoing=firing, warns=firing, topic=normalize(f"{alert_words(name)} {text}"),
                              raw=r.text, alert=True, number=r.number, severe=r.severity in _FAULT_SEVERITIES,
                              host=where))
        else:
            metric = r.fields.get("metric")
            labels = metric if isinstance(metric, Mapping) else {}
            name = str(labels.get("__name__") or "")
            raw = r.text or name
            out.append(Record(inv.id, str(labels.get("service") or ""), normalize(raw), False, None,
                              topic=normalize(name), metric=name, raw=raw))
    return out


def _about_symptom(r: Record, symptom: str) -> bool:
    if symptom == "errors" and r.fault:  # an ERROR line or a firing alert is an error, whatever its words
        return True
    if r.metric:
        return symptom == ANY or symptom in metric_symptoms(r.metric)
    return mentions_symptom(r.topic or r.text, symptom)


def _asks_about(inv: ToolInvocation, service: str) -> bool:
    if inv.tool_name not in ("query_logs", "query_metrics"):
        return False
    if not service:
        return True
    args = inv.arguments
    keywords = args.get("keywords")
    named = [args.get("service"), *(keywords if isinstance(keywords, list) else []), args.get("query"), args.get("promql")]
    return any(isinstance(v, str) and service in normalize(v) for v in named)


def _in_window(r: Record, scope: QuestionScope) -> bool:
    """The record overlaps the asked window (a record without a time is given the benefit)."""
    w = scope.time_window
    if r.at is None or w is None:
        return True
    until = None if r.ongoing else (r.until or r.at)
    return (w.end is None or r.at <= w.end) and (w.start is None or until is None or until >= w.start)


def symptom_records(service: str, symptom: str, scope: QuestionScope,
                    invocations: Iterable[ToolInvocation]) -> list[Record]:
    """The dated records of `service` (any service when "") inside the asked window that show
    `symptom` as a verified claim citing them would (an error, a firing alert, a warning naming a
    failure, an alert about it; for ANY an error or a firing alert), oldest first. Only an alert
    of a fault severity dates a symptom: a config-change notice about "upstream_timeout" is none.
    What a how-long or since-when question is answered from (pipeline.verdict.form)."""
    found = [r for inv in invocations for r in records(inv)
             if r.at is not None and (r.service == service if service else bool(r.service)) and _in_window(r, scope)
             and ((r.fault or r.warns and bool(_SERVER_ERROR.search(r.text))) if symptom == ANY
                  else _about_symptom(r, symptom) and _shows(r, symptom))
             and (r.severe or not r.alert)]
    return sorted(found, key=lambda r: (r.at.timestamp() if r.at else 0.0, r.invocation_id, r.number))


def forecast_only(service: str, symptom: str, scope: QuestionScope, invocations: Iterable[ToolInvocation]) -> bool:
    """Every record of `service` about `symptom` inside the asked window forecasts it ("证书即将过期:
    21天", "expected to fill up within 4 days"): the symptom is to come, neither a state nor an event yet."""
    about = [r for inv in invocations for r in records(inv)
             if r.service == service and _in_window(r, scope) and _about_symptom(r, symptom)]
    return bool(about) and all(FORECAST.search(r.text) for r in about)


def outage_shown(service: str, scope: QuestionScope, invocations: Iterable[ToolInvocation]) -> bool:
    """A warning or worse inside the asked window says `service` is unavailable: its own record, or
    a caller's that names it ("connection refused to orders-db")."""
    name = normalize(service)
    return any(r.warns and OUTAGE.search(r.text) and (r.service == service or name in r.text)
               for inv in invocations for r in records(inv) if _in_window(r, scope))


def seen_until(r: Record, scope: QuestionScope, invocations: Iterable[ToolInvocation]) -> datetime | None:
    """When what a record shows was last seen: a log line at its own time, a resolved alert at its
    end, a firing alert at the latest record of its service inside the window (it still fired then)."""
    if r.at is None or not r.ongoing:
        return max(r.at, r.until) if r.at and r.until else r.at
    later = [o.at for inv in invocations for o in records(inv)
             if o.service == r.service and o.at is not None and _in_window(o, scope)]
    return max([r.at, *later], key=lambda t: t.timestamp())


def cited_services(structured: ExecutorOutput | None, claim_ids: Iterable[str],
                   invocations: Iterable[ToolInvocation]) -> list[str]:
    """The services whose records the given claims cite, in order: whose symptom a row about no
    service in particular has seen."""
    by_id = {inv.id: records(inv) for inv in invocations}
    wanted = set(claim_ids)
    cited = [r.service for c in (structured.claim_objects() if structured else ()) if c.key in wanted
             for r in _claim_records(c, by_id) if r.service]
    return list(dict.fromkeys(cited))


def _claim_records(claim: ExecutorClaim, by_id: Mapping[int, list[Record]]) -> list[Record]:
    found = []
    for binding in claim.evidence_bindings or ():
        excerpt = normalize(binding.evidence_excerpt or "")
        for inv_id in binding.source_invocation_ids:
            found += [r for r in by_id.get(inv_id, []) if excerpt and (excerpt in r.text or r.text in excerpt)]
    return found


@dataclass(frozen=True)
class _Claim:
    claim_id: str
    text: str  # normalised claim_text
    cited: list[Record]
    raw: str


def compute_coverage(
    scope: QuestionScope | None,
    structured: ExecutorOutput | None,
    claim_checks: Sequence[ClaimCheck],
    invocations: Iterable[ToolInvocation],
    gatekeeper_result: GatekeeperResult,
    backends: str = "the configured backends",
) -> list[ServiceCoverage]:
    """One ServiceCoverage per asked (service, symptom), in the scope's order. `claim_checks` should
    be the checks after the gatekeeper's corrections; unbacked claims never count."""
    if scope is None:
        return []
    invs = list(invocations)
    by_id = {inv.id: records(inv) for inv in invs}
    verified = {c.claim_id for c in claim_checks if c.verification in VERIFIED} - set(gatekeeper_result.unbacked_claims)
    claims = [_Claim(c.key, normalize(c.claim_text or ""), _claim_records(c, by_id), c.claim_text or "")
              for c in (structured.claim_objects() if structured else ())]
    return [_pair(service, symptom, scope, invs, by_id, [c for c in claims if c.claim_id in verified], backends)
            for service, symptom in asked_pairs(scope)]


def _pair(service: str, symptom: str, scope: QuestionScope, invs: list[ToolInvocation],
          by_id: Mapping[int, list[Record]], claims: list[_Claim], backends: str) -> ServiceCoverage:
    name = normalize(service)

    def of_service(r: Record) -> bool:
        return r.service == service if service else bool(r.service)

    about: list[_Claim] = []
    outside: list[str] = []
    for claim in claims:
        if service and not (name in claim.text or any(r.service == service for r in claim.cited)):
            continue
        if not (mentions_symptom(claim.text, symptom) or any(_about_symptom(r, symptom) for r in claim.cited)):
            continue
        if claim.cited and not any(_in_window(r, scope) for r in claim.cited):
            outside.append(claim.claim_id)
            continue
        about.append(claim)
    returned = [r for rs in by_id.values() for r in rs if of_service(r)]
    own = [r for r in returned if _in_window(r, scope)]
    # Another service's line about this one ("inventory check failed: inventory-service timed out")
    # shows this one's symptom too: it can keep the pair from "no sign of it".
    said_by_others = [r for rs in by_id.values() for r in rs
                      if service and symptom != ANY and r.service != service and name in r.text and _in_window(r, scope)]
    own_symptom = [r for r in own + said_by_others if _about_symptom(r, symptom)]
    asked = [inv.id for inv in invs if _asks_about(inv, service) or any(of_service(r) for r in by_id[inv.id])]
    ids = sorted({*asked, *(r.invocation_id for c in about for r in c.cited)})
    status: CoverageStatus
    figure = ""
    if about:
        faulty = [c for c in about if _shows_fault(c, symptom)]
        if faulty or any(r.fault for r in own_symptom):
            status, detail = "answered", msg("coverage.answered_symptom", count=len(about), service=service, symptom=symptom)
            figure = _figure(next(iter(faulty or about)))
        else:
            status, figure = "healthy", _figure(about[0])
            detail = msg("coverage.healthy_figure", figure=figure, calls=_calls(ids), service=service, symptom=symptom)
    elif symptom != ANY and own and not any(r.warns for r in own_symptom):
        status = "healthy"
        series = [r for r in own_symptom if r.metric]
        figure = "; ".join(r.raw for r in series[:3])
        detail = (msg("coverage.healthy_figure", figure=figure, calls=_calls(ids), service=service, symptom=symptom) if series
                  else msg("coverage.healthy_quiet", count=len(own), calls=_calls(ids), service=service, symptom=symptom))
    elif asked:
        status = "no_data"
        if own_symptom:
            detail = msg("coverage.unclaimed_symptom", count=len(own_symptom), calls=_calls(asked), service=service, symptom=symptom)
        elif own:
            detail = msg("coverage.unclaimed_records", count=len(own), calls=_calls(asked), service=service, symptom=symptom)
        elif returned:
            detail = msg("coverage.records_outside", count=len(returned), calls=_calls(asked), service=service)
        else:
            detail = msg("coverage.no_records", backends=backends, calls=_calls(asked), service=service)
    else:
        status, detail = "not_queried", msg("coverage.not_queried", service=service)
    if outside:
        detail.then.append(msg("coverage.outside_window", claims=", ".join(outside)))
    return ServiceCoverage(service=service, symptom=symptom, status=status, claim_ids=[c.claim_id for c in about],
                           invocation_ids=ids, records=len(returned), figure=figure, detail=render(detail, "en"),
                           msg=detail)


def _figure(claim: _Claim) -> str:
    """A claim's evidence as a figure: its first cited record, else its own text."""
    return claim.cited[0].raw if claim.cited else claim.raw


def _shows_fault(claim: _Claim, symptom: str) -> bool:
    """An error or firing alert, or a warning that names a failure ("timed out after 2000ms"); a
    warning without one ("slow request within SLO") shows nothing wrong. An alert about the asked
    symptom shows it even once resolved ("登录失败率升高: 3.1%" is never "no sign of errors")."""
    if claim.cited:
        return any(_shows(r, symptom) for r in claim.cited)
    return any(w in claim.text for w in _FAULT_WORDS)


# A server error's status a warning gives ("upstream inventory-service 503 on GET ...", "returned 500 on
# POST"): a failure like any, where it is only relayed too.
_SERVER_ERROR = re.compile(r"(?:\breturned|\bstatus|\bhttp|\bcode|\banswered|\bupstream [\w.-]+)\s*[=:]?\s*5\d\d\b"
                           r"|(?<![\w.=:-])5\d\d\s+(?:on|internal server error|bad gateway|service unavailable|gateway timeout)\b")


def _shows(r: Record, symptom: str) -> bool:
    return (r.fault or (r.warns and (any(w in r.text for w in _FAILURE_WORDS) or bool(_SERVER_ERROR.search(r.text))))
            or (r.warns and symptom != ANY and _about_symptom(r, symptom) and not WITHIN_BOUNDS.search(r.text)
                and any(w in r.text for w in _OVER_LIMIT_WORDS))
            or ((r.alert or symptom in EVENT_SYMPTOMS) and symptom != ANY and r.warns and _about_symptom(r, symptom))
            or (r.alert and symptom != ANY and _about_symptom(r, symptom)))


def _calls(ids: Iterable[int]) -> str:
    return ", ".join(f"#{i}" for i in ids) or "no call"


def backends_label(kinds: Mapping[str, str]) -> str:
    """"bundled logs, bundled alerts" / "loki logs, prometheus alerts": where the answer says it looked."""
    return ", ".join(f"{kind} {what}" for what, kind in kinds.items())
