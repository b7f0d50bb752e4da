"""The question's form, answered or not (law 8 extended, law 12): read in code, from the coverage rows.

Coverage (pipeline.verdict.coverage) says, per asked (service, symptom), what the evidence shows.
The form says what must be shown for the question to be answered:
- why      a cause for the asked symptom in the asked service: a verified root-cause claim, or a
           hypothesis the verifier judged reasonable whose basis quotes verified evidence. The cause
           is about the asked service, or about another one the evidence links to it (a verified
           fact about the asked symptom in the asked service names it, or shares its request id).
           An asked symptom shown absent answers the why too: its premise does not hold.
- yes_no   evidence for or against the proposition asked (read here, `read_proposition`): "is X the
           cause of Y", "did <change> break Y", "is X normal / down", "is X leaking memory",
           negated ("isn't X ...", "X 不是...吗") or not, zh or en. A state ("is X down / ok",
           "is X erroring") is shown only by evidence of a state: an alert of a fault severity
           still firing on X, or a run of records of it (STATE_RECORDS); one stray line of a
           healthy service (a transient 500, a reset a retry fixed) or a resolved alert is not
           the state asked about, and the answer says there is no sustained sign of it. Whether
           it ever happened ("has X restarted?") is an event: one record answers that. A record
           that only forecasts the symptom ("expires in 21 days") answers neither. "Down" asks for
           an outage: a sustained fault no record calls unavailability is a degradation. "Is X the
           culprit?" (the effect unsaid) is yes only when the cause found lies in X.
- what     every asked pair answered or shown healthy (coverage already holds this).
- how_long / since_when   the first dated record of the asked symptom in the asked service, once
           a verified claim shows the symptom there (a hypothesis never dates anything): its time is
           the "since", when the symptom was last seen the end of the span. An asked symptom shown
           absent answers them too (the premise does not hold); a symptom shown but never dated does not.
The verdict policy keeps a session whose form is not answered off PASS, and the answer's lead says
what the form row says: the proposition's yes or no, the cause, or "cannot tell why".
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from pipeline.core.contracts import (
    ClaimCheck,
    DatedRecord,
    ExecutorOutput,
    FormCoverage,
    HypothesisCheck,
    Proposition,
    QuestionForm,
    QuestionScope,
    ServiceCoverage,
    ToolInvocation,
)
from pipeline.core.messages import Message, msg, render
from pipeline.text.lexicon import HAPPENING, JOB, STATED_CAUSE, WITHIN_BOUNDS, pattern
from pipeline.text.primitives import (
    Entity,
    clock_times,
    extract_entities,
    find_entities,
    keywords,
    normalize,
    rounds_to,
    synonyms,
)
from pipeline.verdict.coverage import (
    VERIFIED,
    Record,
    alert_words,
    cited_services,
    forecast_only,
    outage_shown,
    records,
    seen_until,
    symptom_records,
)
from pipeline.verdict.proposition import CHANGE, change_names, read_proposition
from pipeline.verdict.scope import ANY, ONE_BOX, asked_symptoms, mentions_symptom

# How many records of a symptom make it a state of the service rather than a stray line.
STATE_RECORDS = 3
_NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)+")
_REQUEST_ID = re.compile(r"\b[a-z_]*(?:id|uid)=[a-z0-9-]+")
_QUOTE = re.compile(r"“([^”]+)”|\"([^\"]+)\"|「([^」]+)」|『([^』]+)』|‘([^’]+)’")

# --- causes and links -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cause:
    text: str
    support: Literal["confirmed", "likely"]
    claim_id: str = ""
    hypothesis_index: int | None = None
    quotes: tuple[str, ...] = ()  # normalised: a claim's excerpts, a hypothesis's quoted basis


@dataclass(frozen=True)
class Evidence:
    """The verified facts of a session (claim id -> its text, normalised, with its quoted excerpts;
    and as written) and the records its tools returned (normalised)."""

    texts: dict[str, str]
    raw: dict[str, str]
    records: tuple[str, ...] = ()

    def quoted_in(self, basis: str) -> bool:
        """The basis quotes verified evidence: a quoted span of it lies in a verified fact or in a
        record the tools returned, or it holds a whole verified fact."""
        norm = normalize(basis)
        spans = [normalize(next(g for g in m.groups() if g)) for m in _QUOTE.finditer(basis)]
        return any(len(s) >= 6 and any(s in t for t in (*self.texts.values(), *self.records)) for s in spans) or any(
            len(t) >= 12 and t in norm for t in self.texts.values())


def verified_evidence(structured: ExecutorOutput | None, checks: Iterable[ClaimCheck],
                      unbacked: Iterable[str], invocations: Iterable[ToolInvocation] = ()) -> Evidence:
    ok = {c.claim_id for c in checks if c.verification in VERIFIED} - set(unbacked)
    texts: dict[str, str] = {}
    raw: dict[str, str] = {}
    for claim in structured.claim_objects() if structured else ():
        if claim.key in ok:
            excerpts = [b.evidence_excerpt or "" for b in claim.evidence_bindings or ()]
            texts[claim.key] = normalize("\n".join([claim.claim_text or "", *excerpts]))
            raw[claim.key] = claim.claim_text or ""
    return Evidence(texts, raw, tuple(r.text for inv in invocations for r in records(inv)))


def causes(structured: ExecutorOutput | None, checks: Iterable[ClaimCheck],
           hypothesis_checks: Iterable[HypothesisCheck], evidence: Evidence) -> list[Cause]:
    """Verified root-cause claims, then the hypotheses judged reasonable whose basis quotes
    verified evidence: what may answer a why."""
    if structured is None:
        return []
    kinds = {c.claim_id: c.verification for c in checks}
    found = [Cause(c.claim_text or "", "confirmed", claim_id=c.key,
                   quotes=tuple(normalize(b.evidence_excerpt or "") for b in c.evidence_bindings or ()))
             for c in structured.claim_objects()
             if c.claim_type == "root_cause" and c.key in evidence.texts and kinds.get(c.key) in VERIFIED]
    judged = {h.hypothesis_index: h.verification for h in hypothesis_checks}
    for i, hyp in enumerate(structured.hypotheses):
        if hyp.written_as_object and judged.get(i) == "reasonable_hypothesis" and evidence.quoted_in(hyp.basis or ""):
            quoted = tuple(normalize(next(g for g in m.groups() if g)) for m in _QUOTE.finditer(hyp.basis or ""))
            found.append(Cause(hyp.hypothesis_text or "", "likely", hypothesis_index=i, quotes=quoted))
    return found


def names_in(text: str, exclude: Iterable[str] = ()) -> set[str]:
    """Component names a text gives, in full ("redis-cart") or by a distinctive part ("redis")."""
    skip = {p for s in exclude for p in normalize(s).split("-")} | {"service"}
    names = set(_NAME.findall(normalize(text)))
    return names | {p for n in names for p in n.split("-") if len(p) >= 4 and p not in skip}


def named(name: str, text: str) -> bool:
    """The text names the component where a name starts: "redis command timeout" and
    "RedisCommandTimeoutException" name redis; "sms-gateway.partner.example" names another
    component, not api-gateway's "gateway"."""
    return bool(re.search(rf"(?<![a-z0-9.-]){re.escape(name)}", normalize(text)))


def link(service: str, row_facts: Sequence[str], cause: str, evidence: Evidence) -> str:
    """How the evidence links a cause naming another component to `service`: a verified fact
    about the asked symptom in it that names the component, else one sharing a request id with a
    fact that names it. "" when nothing links them."""
    names = names_in(cause, [service]) - {normalize(service)}
    names -= {p for p in normalize(service).split("-")}
    for fact in row_facts:
        if any(named(n, fact) for n in names):
            return fact
    ids = {i for fact in row_facts for i in _REQUEST_ID.findall(normalize(fact))}
    for cid, text in evidence.texts.items():
        if ids & set(_REQUEST_ID.findall(text)) and any(named(n, text) for n in names):
            return evidence.raw[cid]
    return ""


def absent(row: ServiceCoverage) -> bool:
    """No tool returned a single record of the row's service: the data holds nothing about it."""
    return row.status in ("no_data", "not_queried") and row.records == 0


def about(text: str, service: str) -> bool:
    return not service or normalize(service) in normalize(text)


def cause_for(row: ServiceCoverage, found: Sequence[Cause], evidence: Evidence) -> tuple[Cause, str] | None:
    """The cause of a present symptom in the row's service, and the link when it lies elsewhere."""
    facts = [evidence.raw[c] for c in row.claim_ids if c in evidence.raw]
    own = next((c for c in found if about(c.text, row.service)), None)
    if own is not None:
        return own, ""
    for cause in found:
        tie = link(row.service, facts, cause.text, evidence)
        if tie:
            return cause, tie
    return None


# --- the form row -----------------------------------------------------------------------------------


def form_coverage(
    scope: QuestionScope | None,
    structured: ExecutorOutput | None,
    claim_checks: Sequence[ClaimCheck],
    hypothesis_checks: Sequence[HypothesisCheck],
    coverage: Sequence[ServiceCoverage],
    unbacked: Iterable[str] = (),
    invocations: Iterable[ToolInvocation] = (),
) -> FormCoverage | None:
    """The form row of a session (None without a scope). `claim_checks` are the checks after the
    gatekeeper's corrections; unbacked claims never count."""
    if scope is None:
        return None
    invs = list(invocations)
    if scope.form in ("how_long", "since_when"):
        return _since(scope, structured, coverage, invs)
    evidence = verified_evidence(structured, claim_checks, unbacked, invs)
    found = causes(structured, claim_checks, hypothesis_checks, evidence)
    if scope.actor:
        return _actor(scope, coverage, invs)
    if scope.form == "why":
        if scope.intent:
            return _row("why", "not_answered", coverage[0] if coverage else None, msg("form.intent"))
        return _event_why(scope, coverage, found, evidence, invs) or _why(scope, coverage, found, evidence)
    if scope.form == "yes_no":
        prop = scope.proposition or read_proposition("", scope.services, asked_nothing=True)
        sustained = [c for c in coverage if c.status == "answered" and state_shown(c, scope, invs)]
        forecasts = [c for c in coverage if c.status == "answered" and forecast_only(c.service, c.symptom, scope, invs)]
        # "Is X down?": a sustained fault whose records never say X is unavailable is a degradation.
        degraded = [c for c in sustained if prop.outage and not outage_shown(c.service, scope, invs)]
        if scope.shared_cause:
            # One of the two a stray record beside the other's sustained fault or the incident's cause: no one cause
            # behind both. Else what each shows the records may say; that one cause lies behind both, none does.
            stray = [c for c in coverage if (c.status == "answered" and c not in sustained) or c.status == "healthy"]
            if stray and (sustained or found):
                return _row("yes_no", "answered", stray[0], msg("form.not_shared", service=stray[0].service), answer="no")
            row = next((c for c in coverage if c.status == "answered"), coverage[0] if coverage else None)
            return _row("yes_no", "not_answered", row, msg("form.shared_cause_open"), answer="cannot_tell")
        if scope.alert and scope.alert_state:
            return _alert_state(scope.alert, scope.alert_state, coverage, invs)
        if scope.order == "sequence":
            return _in_sequence(scope, coverage, invs)
        if scope.order and prop.kind in ("symptom", "state"):
            return _started_against(scope, coverage, invs)
        if scope.stopped_at and prop.kind in ("symptom", "state"):
            return _stopped(scope, coverage, invs)
        if scope.universal and prop.kind in ("symptom", "state"):
            return _universal(scope, coverage, invs) or _yes_no(prop, coverage, found, evidence, sustained, forecasts,
                                                                 degraded, invs)
        if scope.one_off and prop.kind == "symptom":
            return _one_off(scope, coverage, invs)
        # "inv-2 only OOM'd twice": an "only" before a count says how few times, which the count answers
        if scope.only and (prop.kind == "symptom" or prop.kind == "value" and not prop.value.endswith("x")):
            return _only_there(scope.only, scope, coverage, invs)
        if scope.identifiers and scope.status:
            return _status_of_ids(scope.identifiers, scope.status, coverage, invs)
        if scope.identifiers and prop.kind == "symptom" and prop.expects == "faulty":
            return _of_ids(scope.identifiers, coverage, invs, scope.event)
        if scope.identifiers and prop.kind == "state":
            return _ids_open(scope.identifiers, coverage, invs, scope.event)
        if scope.boxes and prop.kind == "symptom" and prop.expects == "faulty" and not prop.event:
            return _of_ids(scope.boxes, coverage, invs)
        return _yes_no(prop, coverage, found, evidence, sustained, forecasts, degraded, invs)
    open_rows = [c for c in coverage if c.status not in ("answered", "healthy")]
    if open_rows:
        return _row("what", "not_answered", open_rows[0], msg("form.pair_open", service=open_rows[0].service,
                                                            symptom=open_rows[0].symptom, status=open_rows[0].status))
    first = coverage[0] if coverage else None
    return _row("what", "answered", first, msg("form.findings"))


def _row(form: QuestionForm, status: Literal["answered", "not_answered"],
         row: ServiceCoverage | None, detail: Message, *, answer: Literal["yes", "no", "cannot_tell", ""] = "",
         cause: tuple[Cause, str] | None = None) -> FormCoverage:
    c, tie = cause if cause else (None, "")
    return FormCoverage(form=form, status=status, answer=answer, service=row.service if row else "",
                        symptom=row.symptom if row else ANY, cause=c.text if c else "",
                        cause_support=c.support if c else "unknown", claim_id=c.claim_id if c else "",
                        hypothesis_index=c.hypothesis_index if c else None, link=tie,
                        detail=render(detail, "en"), msg=detail)


_PATH_SAID = re.compile(r"(?<![\w/])/[a-z0-9_.{}-]+/")


def _since(scope: QuestionScope, structured: ExecutorOutput | None, coverage: Sequence[ServiceCoverage],
           invocations: Sequence[ToolInvocation]) -> FormCoverage:
    """A how-long or since-when: dated by the first record of the symptom in each row it shows in;
    a row about no service in particular, by the records of the services its verified claims cite."""
    form = scope.form
    present = [c for c in coverage if c.status == "answered"]
    if scope.since_event:
        return _between(scope, coverage, invocations)
    if scope.moment:
        return _moment(scope, coverage, invocations)
    if scope.took_effect:
        change = _change_record(scope, invocations)
        if change is not None and change.at is not None:
            row = present[0] if present else (coverage[0] if coverage else None)
            said = msg("form.in_effect", service=change.service, since=change.at.isoformat(), quote=change.raw)
            if form == "how_long":
                # in force from the change to the last record collected: nothing records it undone
                last = max((r.at for inv in invocations for r in records(inv) if r.at is not None), default=change.at)
                return _row(form, "answered", row, said).model_copy(update={"first": _dated(change, change.at),
                                                                            "until": max(last, change.at)})
            return _seen_at(form, row, change, change.at, said)

    # "gw first 500'd a POST /api/orders at what time": not dated by another path's records
    # ("/api/orders/history"); a record naming no path may be the asked one's.
    paths = [re.compile(rf"{re.escape(w)}(?![\w/{{}}-])") for w in scope.event if w.startswith("/")]

    def elsewhere(r: Record) -> bool:
        return bool(paths) and bool(_PATH_SAID.search(r.text)) and not any(p.search(r.text) for p in paths)

    def dated(row: ServiceCoverage) -> list[Record]:
        services = [row.service] if row.service else cited_services(structured, row.claim_ids, invocations)
        found = [r for s in services for r in symptom_records(s, row.symptom, scope, invocations)]
        found = [r for r in found if not elsewhere(r)] or found
        return sorted(found, key=lambda r: (r.at.timestamp() if r.at else 0.0, r.invocation_id, r.number))

    shown = {(c.service, c.symptom): dated(c) for c in present}
    for row in present:
        if not shown[(row.service, row.symptom)]:
            return _row(form, "not_answered", row, msg("form.no_onset", service=row.service, symptom=row.symptom))
    open_rows = [c for c in coverage if c.status not in ("answered", "healthy")]
    if open_rows:
        row = open_rows[0]
        return _row(form, "not_answered", row, msg("form.pair_open", service=row.service, symptom=row.symptom,
                                                   status=row.status))
    if not present:  # every asked symptom shown absent: the premise does not hold
        seen = _event_record(scope, invocations, warnings=True) if coverage and scope.event and not paths else None
        if form == "since_when" and seen is not None and seen.at is not None and (seen.fault or seen.warns):
            # "inventory 健康检查慢到 3 秒多，最早冒头是几点": the named thing's own warning dates it, though the
            # service's rows of the symptom show none
            return _seen_at(form, coverage[0], seen, seen.at, msg("form.onset", service=seen.service, symptom=ANY,
                                                                 since=seen.at.isoformat(), quote=seen.raw))
        if not coverage:
            # A happening named by its own words ("NullPointerException at X - first seen when?"):
            # dated by the first record holding them, whatever its level.
            first_seen = _event_record(scope, invocations, warnings=True) if scope.event else None
            if first_seen is not None and first_seen.at is not None:
                # A fault first seen, or an ordinary happening first recorded ("warmup job started"): no fault to name.
                said = (msg("form.onset", service=first_seen.service, symptom=ANY, since=first_seen.at.isoformat(),
                            quote=first_seen.raw) if first_seen.fault or first_seen.warns else
                        msg("form.happening", service=first_seen.service, since=first_seen.at.isoformat(),
                            quote=first_seen.raw))
                if form == "how_long":
                    # Lasting up to its last record ("warmup job finished"), or, with none after it, up
                    # to the last record collected: nothing records it over.
                    ends = [r.at for r in _event_records(scope, invocations, warnings=True) if r.at is not None]
                    last = max(ends, default=first_seen.at)
                    if last <= first_seen.at:
                        last = max((r.at for inv in invocations for r in records(inv) if r.at is not None),
                                   default=first_seen.at)
                    return _row(form, "answered", None, said).model_copy(
                        update={"first": _dated(first_seen, first_seen.at), "until": max(last, first_seen.at)})
                return _seen_at(form, None, first_seen, first_seen.at, said)
            return _row(form, "not_answered", None, msg("form.no_onset", service="", symptom=ANY))
        row = coverage[0]
        return _row(form, "answered", row, msg("form.absent", service=row.service, symptom=row.symptom))
    row = present[0]
    found = shown[(row.service, row.symptom)]
    first = next(_dated(r, r.at) for r in found if r.at is not None)
    ends = [t for t in (seen_until(r, scope, invocations) for r in found) if t is not None]
    out = _row(form, "answered", row, msg("form.onset", service=first.service, symptom=row.symptom,
                                          since=first.at.isoformat(), quote=first.text))
    return out.model_copy(update={"first": first, "until": max(ends, key=lambda t: t.timestamp())})


def _between(scope: QuestionScope, coverage: Sequence[ServiceCoverage], invocations: Sequence[ToolInvocation]) -> FormCoverage:
    """How long from one happening to the next ("风控规则推上去之后隔了多久开始超时"): from the first record of
    the earlier to the first after it of the later, a record holding its words, else a warning or fault
    of the symptom it names or of the service it names."""
    row = coverage[0] if coverage else None
    # the services named are the later happening's ("warmup start -> redis-cart maxed out")
    earlier = _event_records(scope.model_copy(update={"event": scope.since_event, "services": []}), invocations,
                             warnings=True, need=1)
    start = next((r for r in earlier if r.at is not None), None)
    if start is None or start.at is None:
        return _row("how_long", "not_answered", row, msg("form.no_moment", event=", ".join(scope.since_event)))
    at = start.at
    # "the first timeout": a symptom's word is met by a warning or fault of it, not an ordinary line
    # holding the word ("upstream_timeout=5000ms")
    faulty = any(asked_symptoms(w) for w in scope.event)
    held = [r for r in _event_records(scope, invocations, warnings=True, need=1) if r.at is not None and r.at >= at
            and r.text != start.text and (r.fault or r.warns or not faulty)] if scope.event else []
    symptoms = [t.strip() for t in scope.symptom.split(",") if t.strip()]
    shown = [r for inv in invocations for r in records(inv)
             if r.at is not None and r.at >= at and (r.fault or r.warns) and r.text != start.text
             and (not scope.services or r.service in scope.services)
             and (not symptoms or any(mentions_symptom(r.text, s) for s in symptoms))]
    later = sorted(held or (shown if symptoms or scope.services else []), key=lambda r: r.at.timestamp() if r.at else 0.0)
    if not later or later[0].at is None:
        return _row("how_long", "not_answered", row, msg("form.no_moment", event=", ".join(scope.event or symptoms)))
    then = later[0]
    said = msg("form.between", first=_timed(start), then=then.raw)
    return _row("how_long", "answered", row, said).model_copy(update={"first": _dated(start, at), "until": then.at})


# Who a record says did it: "来源=risk-admin", "by alice", "operator: ops-bot", "triggered by CronJob x".
_DONE_BY = re.compile(r"\bby\s+[\w.@-]+|\b(?:operator|user|actor|author|source|owner|initiator)\s*[=:：]\s*[\w.@-]+"
                      r"|来源\s*[=:：]|操作人|发起人")


def _actor(scope: QuestionScope, coverage: Sequence[ServiceCoverage], invocations: Sequence[ToolInvocation]) -> FormCoverage:
    """Who did something: the record of the doing (holding most of its words) answers when it names
    who; one that names no one shows what was done and when, never by whom."""
    row = coverage[0] if coverage else None
    need = max(1, min(2, len(scope.event)), (len(scope.event) + 1) // 2)
    done = [r for r in _event_records(scope, invocations, warnings=True, need=need) if r.at is not None]
    if not done:
        return _row(scope.form, "not_answered", row, msg("form.no_moment", event=", ".join(scope.event)))
    named = next((r for r in done if _DONE_BY.search(r.raw)), None)
    if named is not None:
        return _row(scope.form, "answered", row, msg("form.actor", record=_timed(named)))
    return _row(scope.form, "not_answered", row, msg("form.no_actor", record=_timed(done[0])))


def _moment(scope: QuestionScope, coverage: Sequence[ServiceCoverage], invocations: Sequence[ToolInvocation]) -> FormCoverage:
    """A when of one happening ("what time did order 123 flip to PAID?"): the record of an asked
    service (of any, when none is named) holding most of its words (or a synonym), at least half
    of them and two, the earliest of those; none holding them leaves the time untold rather than
    answered by a symptom's first record."""
    row = coverage[0] if coverage else None
    need = max(1, min(2, len(scope.event)), (len(scope.event) + 1) // 2)
    held = [(r, r.at) for r in _event_records(scope, invocations, warnings=True, need=need, long_names=True)
            if r.at is not None]
    if scope.peak:
        held = _peak(held, scope.event)
    found = (held[-1] if scope.latest else held[0]) if held else None
    if found is None:
        return _row(scope.form, "not_answered", row, msg("form.no_moment", event=", ".join(scope.event)))
    record, at = found
    return _seen_at(scope.form, row, record, at, msg("form.at", service=record.service, at=at.isoformat(), quote=record.raw))


_FIGURE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(?:%|ms\b|s\b|mb\b|gb\b)")
_DIGITS = re.compile(r"\d+")


def _peak(held: list[tuple[Record, datetime]], words: Sequence[str] = ()) -> list[tuple[Record, datetime]]:
    """The record of a series at its highest: of the records holding a figure (the asked word's own value,
    "queued=813" of "queued", else a measure), those written from the one template most of them share (a
    thread's 98% beside the process's readings is another series), the one with the highest figure."""
    keyed = [re.compile(rf"\b{re.escape(w)}\s*[=:]\s*(\d+(?:\.\d+)?)") for w in words if w.isascii() and not w.isdigit()]

    def figure(text: str) -> re.Match[str] | None:
        return next((m for k in keyed if (m := k.search(text))), None) or _FIGURE.search(text)
    shares = [(r, at, float(m.group(1)), _DIGITS.sub("#", r.text)) for r, at in held if (m := figure(r.text))]
    if not shares:
        return []
    series = Counter(template for *_, template in shares).most_common(1)[0][0]
    record, at, _, _ = max((s for s in shares if s[3] == series), key=lambda s: s[2])
    return [(record, at)]


# A word a record holds only to deny it ("配置中心长轮询返回, 无变更", "no change"): not the happening.
_NEGATED_WORD = re.compile(r"(?:无|没有|未|\bno|\bnot)\s*$")


def _before(text: str, word: str) -> str:
    at = text.find(word)
    return text[max(0, at - 6):at] if at >= 0 else ""


def _dated(r: Record, at: datetime) -> DatedRecord:
    return DatedRecord(invocation_id=r.invocation_id, number=r.number, service=r.service, at=at, text=r.raw)


def _seen_at(form: QuestionForm, row: ServiceCoverage | None, record: Record, at: datetime,
             said: Message) -> FormCoverage:
    """A how-long or since-when answered by one record, at `at`: it starts and ends the span."""
    seen = _dated(record, at)
    return _row(form, "answered", row, said).model_copy(update={"first": seen, "until": seen.at})


def _change_record(scope: QuestionScope, invocations: Sequence[ToolInvocation]) -> Record | None:
    """The first record of a change to an asked service (to any, when none is named): a deploy, a
    config reload, a setting's old and new value ("upstream_timeout=5000ms (was 15000ms)", "15000ms ->
    5000ms")."""
    found = [r for inv in invocations for r in records(inv) if r.at is not None
             and (r.service in scope.services if scope.services else bool(r.service)) and _CHANGE_RECORD.search(r.text)]
    return min(found, key=lambda r: (r.at.timestamp() if r.at else 0.0, r.invocation_id, r.number), default=None)


def _event_record(scope: QuestionScope, invocations: Sequence[ToolInvocation], *, warnings: bool = False) -> Record | None:
    """The record of the happening a why asks about: a line of an asked service (of any, when none
    is named) that warns of nothing (a warning or an alert is a symptom, which the plain why
    reading answers; a since-when of a happening takes them), holding most of the event's words (or
    a synonym), the most, then the earliest."""
    found = _event_records(scope, invocations, warnings=warnings)
    return found[0] if found else None


def _event_records(scope: QuestionScope, invocations: Sequence[ToolInvocation], *, warnings: bool = False,
                   need: int | None = None, long_names: bool = False) -> list[Record]:
    """The records of the happening (see _event_record), those holding the most of its words (at least
    `need`, by default three in five), earliest first. A word a record holds only to deny it ("无变更")
    is not held."""
    need = need or max(1, min(len(scope.event), 2), (len(scope.event) * 3 + 4) // 5)
    # An endpoint asked of ("GET /api/x keeps taking 1.7s, why") is the happening: a line of that path,
    # a warning too ("client closed ... on GET /api/x", "slow request within SLO: ..."), not an alert.
    paths = [w for w in scope.event if w.startswith("/")]
    scored: list[tuple[int, float, Record]] = []
    for inv in invocations:
        for r in records(inv):
            if paths and (r.alert or not any(p in r.text for p in paths)):
                continue
            if paths:
                need = 1
            elif (scope.services and r.service not in scope.services) or (not warnings and (r.warns or r.alert)):
                continue
            # an alert by its name as written ("GatewayUpstreamErrors"), beside its description
            # where it was written counts too: "pay-7d9f-2's cpu" is a line of that host
            said = f"{r.text} {r.topic.replace(' ', '')} alert" if r.alert else f"{r.text} {r.host}"
            # `long_names`: a long name ("RedisCommandTimeoutException") says which happening as two plain words do
            held = sum(1 + (long_names and len(w) >= 12 and w.isascii()) for w in scope.event
                       if any(_holds(said, s) and not _NEGATED_WORD.search(_before(said, s)) for s in synonyms(w)))
            if held >= need:
                scored.append((held, r.at.timestamp() if r.at else float("inf"), r))
    top = max((held for held, _, _ in scored), default=0)
    return [r for held, _, r in sorted(scored, key=lambda s: s[1]) if held == top]


_CHANGE_RECORD = re.compile(r"\b(?:config(?:uration)? (?:reloaded|changed|updated|applied)|deploy(?:ed|ment) (?:finished|completed)"
                            r"|rolled out|released)\b|\d[\w.%]*\s*->\s*v?\d|\(was [^)]+\)|配置变更|变更项|发布完成")


def _holds(text: str, word: str) -> bool:
    """A word in a record's text: whole, for a Latin one ("day" is not in "today"), anywhere for Chinese."""
    return bool(re.search(rf"(?<![a-z0-9]){re.escape(word)}(?![a-z0-9])", text)) if word.isascii() else word in text


def _cause_records(cause: Cause, invocations: Sequence[ToolInvocation]) -> list[Record]:
    """The records a cause quotes (its excerpts or its basis's quotes lie in them)."""
    quoted = [q for q in cause.quotes if len(q) >= 12]
    return [r for inv in invocations for r in records(inv) if any(q in r.text or r.text in q for q in quoted)]


# What a job itself does wrong: it fails, lags or stalls. The memory or the CPU it takes are the
# service's ("why did the full sync blow up the heap" asks what the job did to the service).
_JOB_FAULTS = frozenset({"errors", "latency", "timeout", "stuck_jobs"})


def _event_why(scope: QuestionScope, coverage: Sequence[ServiceCoverage], found: Sequence[Cause], evidence: Evidence,
               invocations: Sequence[ToolInvocation]) -> FormCoverage | None:
    """A why about one happening (scope.event) is answered only by a cause of that happening: not
    by the happening itself ("why did the rules change?" answered "the rules changed"), and not by
    a fault whose records all come after it, nor by one that does not speak of what happened. None:
    no record of it, or no cause to weigh (the plain why reading decides: "why is cart-service
    acting up?" names no happening a record could hold)."""
    if not scope.event:
        return None
    event = _event_record(scope, invocations)
    present = [c for c in coverage if c.status == "answered"]
    row = present[0] if present else (coverage[0] if coverage else None)
    # A why of a thing no symptom word names ("支付宝回调验签一直不过", "仓库心跳一直掉线"): the incident's
    # cause answers it only through records of that thing.
    unnamed = not any(sid != ANY for sids in scope.symptoms.values() for sid in sids)
    said = " ".join(scope.event)
    if (event is None and (HAPPENING.search(said) or JOB.search(said) or scope.halted or unnamed)
            and not _event_records(scope, invocations, warnings=True)):
        # A happening or a job no collected record holds at all ("redis-cart 为啥主从切换了", "why does the
        # nightly backup job keep failing"): the incident's cause is no answer to it, and its absence
        # from what was collected does not show it never happened.
        return _row("why", "not_answered", row, msg("form.no_event", event=", ".join(scope.event)))
    if scope.halted and (ran := _event_records(scope, invocations, warnings=True)):
        # Said to have stopped: what the records hold is when it last ran, and nothing says why it would stop.
        last = max(ran, key=lambda r: r.at.timestamp() if r.at else 0.0)
        return _row("why", "not_answered", row, msg("form.event_no_cause", event=_timed(last)))
    asked = {sid for sids in scope.symptoms.values() for sid in sids if sid != ANY}
    if event is not None and JOB.search(said) and asked <= _JOB_FAULTS and not any(
            r.fault or r.warns for r in _event_records(scope, invocations, warnings=True)):
        # A job said to fail or lag whose records all show it running ("库存同步批次完成", "扫描完成, 关闭 2
        # 单"): no cause of the incident's fault answers why it would.
        return _row("why", "not_answered", row, msg("form.job_fine", event=event.raw))
    given = cause_for(present[0], found, evidence) if present else ((found[0], "") if found else None)
    if event is None:
        # A warning of one thing no asked symptom's cause speaks of ("smtp-relay 那头为啥把连接断了", "why is
        # ICBC itself slow"): the incident's cause is no answer to it.
        warned = _event_records(scope, invocations, warnings=True)
        if given is not None and warned and not warned[0].alert and not _explains(given[0], warned[0], scope, invocations):
            return _row("why", "not_answered", row, msg("form.event_no_cause", event=warned[0].raw))
        return None
    paths = [w for w in scope.event if w.startswith("/")]
    if paths and any((r.fault or r.warns) and not WITHIN_BOUNDS.search(r.text) and any(mentions_symptom(r.text, s) for s in asked)
                     for r in _event_records(scope, invocations, warnings=True)):
        return None  # the path's own records show the asked symptom: its cause answers the why
    if given is None:
        # the endpoint's requests are in a record and nothing says why: "no sign of a fault" would deny them
        return _row("why", "not_answered", row, msg("form.event_no_cause", event=event.raw)) if paths else None
    if _explains(given[0], event, scope, invocations):
        return None
    return _row("why", "not_answered", row, msg("form.event_no_cause", event=event.raw))


def _explains(cause: Cause, event: Record, scope: QuestionScope, invocations: Sequence[ToolInvocation]) -> bool:
    """A cause of the incident explains a happening only when it is not made of the happening's own
    record, does not come after it, and speaks of what happened: eviction explains "rebuilding from
    MySQL" (a cache miss), not "Background saving started"."""
    quoted = _cause_records(cause, invocations)
    dated = [r.at for r in quoted if r.at is not None]
    if any(r.text == event.text for r in quoted) or (event.at is not None and dated and min(dated) > event.at):
        return False
    told = " ".join([normalize(cause.text), *(r.text for r in quoted)])
    paths = [w for w in scope.event if w.startswith("/")]
    own = {p for s in scope.services for p in normalize(s).split("-")} | {normalize(event.service)}
    return (any(p in told for p in paths) if paths else
            any(s in told for w in keywords(event.raw) if w not in own and not w.isdigit() for s in synonyms(w)))


def _why(scope: QuestionScope, coverage: Sequence[ServiceCoverage], found: Sequence[Cause], evidence: Evidence) -> FormCoverage:
    present = [c for c in coverage if c.status == "answered"]
    open_rows = [c for c in coverage if c.status not in ("answered", "healthy")]
    for row in present:
        if cause_for(row, found, evidence) is None:
            return _row("why", "not_answered", row, msg("form.no_cause", service=row.service, symptom=row.symptom))
    if open_rows:
        row = open_rows[0]
        return _row("why", "not_answered", row, msg("form.pair_open", service=row.service, symptom=row.symptom,
                                                    status=row.status))
    if present:
        row = present[0]
        cause = cause_for(row, found, evidence)
        return _row("why", "answered", row, _cause_msg(row, cause), cause=cause)
    # A record of the asked symptom that is no fault (a retried 502, one slow command) still shows
    # the thing asked why of: "no sign of it" would deny what it quotes, and no record says why.
    # A line saying it stayed within bounds ("slow request within SLO") shows no such thing, unless
    # the question grants as much; "what is wrong with X?" names no symptom for a record to show.
    strays = [(c, evidence.raw[cid]) for c in coverage if c.status == "healthy" and (c.symptom != ANY or scope.within_bounds)
              for cid in c.claim_ids if cid in evidence.raw
              and (scope.within_bounds or not WITHIN_BOUNDS.search(normalize(evidence.raw[cid])))]
    # A question granting the figure it finds slow asks of the line saying so, before any other.
    strays.sort(key=lambda s: scope.within_bounds and not WITHIN_BOUNDS.search(normalize(s[1])))
    stray = strays[0] if strays else None
    if stray is not None:
        return _row("why", "not_answered", stray[0], msg("form.event_no_cause", event=stray[1]))
    if coverage:
        row = coverage[0]
        if row.symptom == ANY:  # "what is wrong with X?" of a healthy X: nothing, and that answers it
            return _row("why", "answered", row, msg("form.absent", service=row.service, symptom=row.symptom))
        # No record shows the symptom asked why of: no cause can be given, and an absence in what was
        # collected does not show the premise false (a yes/no is answered "no" on it; a why is not).
        return _row("why", "not_answered", row, msg("form.absent_why", service=row.service, symptom=row.symptom))
    if found:  # nothing asked of a service: any verified cause answers
        return _row("why", "answered", None, msg("form.cause", service="", symptom=ANY, cause=found[0].text),
                    cause=(found[0], ""))
    return _row("why", "not_answered", None, msg("form.no_cause", service="", symptom=ANY))


def _cause_msg(row: ServiceCoverage, cause: tuple[Cause, str] | None) -> Message:
    c, tie = cause if cause else (Cause("", "likely"), "")
    if tie:
        return msg("form.cause_linked", service=row.service, symptom=row.symptom, cause=c.text, link=tie)
    return msg("form.cause", service=row.service, symptom=row.symptom, cause=c.text)


def state_shown(row: ServiceCoverage, scope: QuestionScope, invocations: Sequence[ToolInvocation]) -> bool:
    """The row's symptom is a state of its service, not a stray record: an alert of a fault
    severity about it still fires, or STATE_RECORDS of its records inside the window show it."""
    found = symptom_records(row.service, row.symptom, scope, invocations)
    # Several queries return the same line: it counts once.
    lines = {(r.at, r.text) for r in found if not r.alert}
    return any(r.alert and r.ongoing for r in found) or len(lines) >= STATE_RECORDS


def _yes_no(prop: Proposition, coverage: Sequence[ServiceCoverage], found: Sequence[Cause],
            evidence: Evidence, sustained: Sequence[ServiceCoverage],
            forecasts: Sequence[ServiceCoverage], degraded: Sequence[ServiceCoverage],
            invocations: Sequence[ToolInvocation]) -> FormCoverage:
    """`forecasts`: the rows whose records only forecast the symptom; they answer neither a state
    nor an event ("has the certificate expired?" is not answered yes by "expires in 21 days").
    `degraded`: faulty rows that do not show the outage asked about ("is orders-db down?")."""
    if prop.kind == "cause":
        return _cause_proposition(prop, coverage, found, evidence, sustained, invocations)
    if prop.kind == "value" and prop.measure:
        # No record holds what the figure measures: the question is read as the symptom it names.
        measured = _measured(prop, coverage, invocations)
        if measured is not None:
            return measured
        prop = prop.model_copy(update={"kind": "symptom"})
    if prop.kind == "value":
        return _value(prop, coverage, invocations)
    rows = [c for c in coverage if not prop.subject or c.service == prop.subject] or list(coverage)
    faulty = [c for c in rows if c.status == "answered" and c not in forecasts and (c in sustained or prop.event)]
    stray = [c for c in rows if c.status == "answered" and (c not in sustained or c in forecasts)]
    if stray and not faulty and (not prop.event or all(c in forecasts for c in stray)):
        # What shows is a stray record or a forecast, not the state asked about: no sustained sign of it.
        row = next((c for c in stray if c not in forecasts), stray[0])
        said = (msg("form.forecast", service=row.service, symptom=row.symptom) if row in forecasts
                else msg("form.stray", service=row.service, symptom=row.symptom))
        return _row("yes_no", "answered", row, said, answer="yes" if prop.expects == "healthy" else "no")
    if prop.kind == "state":
        if faulty and all(c in degraded for c in faulty):
            row = faulty[0]
            return _row("yes_no", "answered", row, msg("form.degraded", service=row.service), answer="no")
        if faulty or (rows and all(c.status == "healthy" for c in rows)):
            shown = "faulty" if faulty else "healthy"
            row = (faulty or rows)[0]
            return _row("yes_no", "answered", row, msg("form.state", service=row.service, state=shown),
                        answer="yes" if shown == prop.expects else "no")
    elif faulty or (rows and all(c.status == "healthy" for c in rows)):
        row = (faulty or rows)[0]
        # "X 是不是没有报错" asserts the symptom's absence: errors shown answer it "no".
        return _row("yes_no", "answered", row, msg("form.symptom", service=row.service, symptom=row.symptom,
                                                   status=row.status),
                    answer="yes" if bool(faulty) == (prop.expects == "faulty") else "no")
    open_row = next((c for c in rows if c.status not in ("answered", "healthy")), rows[0] if rows else None)
    return _row("yes_no", "not_answered", open_row, msg("form.proposition_open"), answer="cannot_tell")


def _named_by(ids: Sequence[str], invocations: Sequence[ToolInvocation]) -> list[Record]:
    """The records naming any of the ids ("order_id=123" of "order 123") or endpoints ("/api/pay", not
    "/api/pay/refund"), or written on or naming one of the instances ("inv-84cd-1")."""
    wanted = {Entity(kind, i) for i in ids for kind in ("identifier", "instance")}
    paths = [re.compile(rf"{re.escape(i)}(?![\w/-])") for i in ids if i.startswith("/")]
    return [r for inv in invocations for r in records(inv)
            if r.host in ids or wanted & extract_entities(r.raw) or any(p.search(r.text) for p in paths)]


def _ids_absent(row: ServiceCoverage | None, subject: str) -> FormCoverage:
    return _row("yes_no", "not_answered", row, msg("form.ids_absent", ids=subject), answer="cannot_tell")


def _of_ids(ids: Sequence[str], coverage: Sequence[ServiceCoverage],
            invocations: Sequence[ToolInvocation], done: Sequence[str] = ()) -> FormCoverage:
    """Whether the ids asked of ("did order 87 get ERR_TIMEOUT too?") show the asked symptom: their
    own records say, a warning or an error of it holding one of them; none of their records showing
    it is a no; no record naming them, no answer. Other orders' records of it say nothing of these."""
    named = _named_by(ids, invocations)
    symptoms = [c.symptom for c in coverage] or [ANY]
    # a line saying it stayed within bounds ("slow request within SLO") shows no fault
    shown = sorted((r for r in named if (r.fault or r.warns) and any(mentions_symptom(r.text, s) for s in symptoms)
                    and not WITHIN_BOUNDS.search(r.text)), key=lambda r: not r.fault)  # an error before a warning
    row = coverage[0] if coverage else None
    subject = ", ".join(ids)
    if named and done:
        # A doing said of them beyond the symptom ("the gw retried order 142 after it timed out"): their
        # own records hold it, or nothing shows it was done.
        did = _doing(named, done)
        if did:
            return _row("yes_no", "answered", row, msg("form.ids_did", ids=subject, record=_timed(did[0])), answer="yes")
        return _row("yes_no", "answered", row, msg("form.ids_not_done", ids=subject, done=", ".join(done),
                                                   record=_timed(named[-1])), answer="no")
    if shown:
        return _row("yes_no", "answered", row, msg("form.ids_shown", ids=subject, record=shown[0].raw), answer="yes")
    if named:
        return _row("yes_no", "answered", row, msg("form.ids_clear", ids=subject, record=named[-1].raw), answer="no")
    return _ids_absent(row, subject)


def _stopped(scope: QuestionScope, coverage: Sequence[ServiceCoverage], invocations: Sequence[ToolInvocation]) -> FormCoverage:
    """Whether the symptom stopped at the time the question says: a record of it after then says it
    went on; none after then, with some before, says it stopped; none at all, no answer."""
    # The records holding the question's own words for what stopped ("evictions": "evicting keys"),
    # else those of the asked symptom.
    stems = [w[:5] if w.isascii() else w for w in scope.stopped_words]
    told = [r for inv in invocations for r in records(inv) if r.at is not None
            and (not scope.services or r.service in scope.services)
            and any(s in r.text for w in stems for s in (w, *synonyms(w)))]
    # A warning says it happened; a snapshot's running total ("evicted_keys=48213") only that it had.
    told = [r for r in told if r.warns] or told
    shown = told or [r for c in coverage for r in symptom_records(c.service, c.symptom, scope, invocations)]
    row = coverage[0] if coverage else None
    after = sorted((r for r in shown if r.at is not None and r.at.strftime("%H:%M") > scope.stopped_at),
                   key=lambda r: r.at.timestamp() if r.at else 0.0)
    if after:
        return _row("yes_no", "answered", row, msg("form.went_on", at=scope.stopped_at, record=_timed(after[0])), answer="no")
    if shown:
        last = max(shown, key=lambda r: r.at.timestamp() if r.at else 0.0)
        return _row("yes_no", "answered", row, msg("form.stopped", at=scope.stopped_at, record=_timed(last)), answer="yes")
    return _row("yes_no", "not_answered", row, msg("form.proposition_open"), answer="cannot_tell")


def _symptom_shown(scope: QuestionScope, coverage: Sequence[ServiceCoverage],
                   invocations: Sequence[ToolInvocation], *, anywhere: bool = False) -> list[Record]:
    """Every record of the asked symptoms (in any service with `anywhere`), oldest first, whatever
    window a clock time in the question set: whether it happened once, or only somewhere, is told
    by all of them."""
    rows = [c for c in coverage if c.status == "answered"] or list(coverage)
    asked = [("" if anywhere else c.service, c.symptom) for c in rows] or [("", ANY)]  # nothing asked but the where: any fault
    whole = scope.model_copy(update={"time_window": None})
    # One line fetched by two queries is one record.
    found = {(r.service, r.at, r.raw): r for service, symptom in asked
             for r in symptom_records(service, symptom, whole, invocations)}
    return sorted(found.values(), key=lambda r: (r.at.timestamp() if r.at else 0.0, r.invocation_id, r.number))


def _one_off(scope: QuestionScope, coverage: Sequence[ServiceCoverage], invocations: Sequence[ToolInvocation]) -> FormCoverage:
    """Whether the symptom happened once ("was that 504 just a blip?"): records of it in more than one
    minute say it repeats; those of one minute, that it did not."""
    # The records holding most of the question's own words for it ("that maxmemory hit": "used_memory reached
    # maxmemory"), a warning first; else those of the asked symptom.
    told = [r for r in _event_records(scope, invocations, warnings=True, need=1) if r.at is not None] if scope.event else []
    told = list({(r.service, r.at, r.raw): r for r in [r for r in told if r.warns] or told}.values())
    shown = sorted(told, key=lambda r: r.at.timestamp() if r.at else 0.0) or _symptom_shown(scope, coverage, invocations)
    row = coverage[0] if coverage else None
    minutes = sorted({r.at.strftime("%H:%M") for r in shown if r.at is not None})
    if len(minutes) > 1:
        return _row("yes_no", "answered", row, msg("form.repeats", count=len(shown), first=minutes[0], last=minutes[-1],
                                                   record=_timed(shown[-1])), answer="no")
    if shown:
        return _row("yes_no", "answered", row, msg("form.once", record=_timed(shown[0])), answer="yes")
    return _row("yes_no", "not_answered", row, msg("form.proposition_open"), answer="cannot_tell")


def _universal(scope: QuestionScope, coverage: Sequence[ServiceCoverage],
               invocations: Sequence[ToolInvocation]) -> FormCoverage | None:
    """Whether every request, user or order suffers ("every single /api/pay call failing?"): a record of
    the asked path that is no fault says no; failures alone do not say all fail (None: nothing of the
    symptom shown, the plain yes/no reading answers "no sign of it")."""
    row = coverage[0] if coverage else None
    paths = [w for w in scope.event if w.startswith("/")]
    shown = _symptom_shown(scope, coverage, invocations)
    if not shown:
        return None
    # A success before the failures began says nothing of them ("every call failing now?").
    began = min((r.at for r in shown if r.at is not None), default=None)
    fine = [r for inv in invocations for r in records(inv) if paths and not r.fault and not r.warns and not r.alert
            and any(p in r.text for p in paths) and not _SERVER_ERROR_CODE.search(r.text)
            and (began is None or (r.at is not None and r.at >= began))]
    if fine:
        return _row("yes_no", "answered", row, msg("form.not_all", record=_timed(fine[0])), answer="no")
    return _row("yes_no", "not_answered", row, msg("form.all_open", record=_timed(shown[-1])), answer="cannot_tell")


_SERVER_ERROR_CODE = re.compile(r"(?<!\d)5\d\d(?!\d)|\b(?:error|failed|failure|exception|timeout)\b")


def _only_there(only: str, scope: QuestionScope, coverage: Sequence[ServiceCoverage],
                invocations: Sequence[ToolInvocation]) -> FormCoverage:
    """Whether one instance or service alone shows the symptom ("only checkout-68f0-1 throws it,
    right?"): a record of it on a sibling instance (the same name but its ordinal) or in another
    service says no; records of it there alone, yes."""
    of_service = only in scope.services
    shown = _symptom_shown(scope, coverage, invocations, anywhere=of_service)
    row = coverage[0] if coverage else None
    if only == ONE_BOX:
        # No box named: how many boxes its records were written on says.
        boxes = sorted({r.host for r in shown if r.host})
        if len(boxes) > 1:
            on = next(r for r in shown if r.host and r.host != boxes[0])
            return _row("yes_no", "answered", row, msg("form.not_only", only=boxes[0], others=", ".join(boxes[1:5]),
                                                       record=_timed(on)), answer="no")
        if boxes:
            return _row("yes_no", "answered", row, msg("form.only", only=boxes[0], record=_timed(shown[0])), answer="yes")
        return _row("yes_no", "not_answered", row, msg("form.proposition_open"), answer="cannot_tell")
    family = only.rsplit("-", 1)[0] + "-"

    def where(r: Record) -> set[str]:
        if of_service:
            return {r.service}
        hosts = {r.host} | {e.value for e in extract_entities(r.raw) if e.kind == "instance"}
        return {h for h in hosts if h.startswith(family)}

    mine = [r for r in shown if only in where(r)]
    elsewhere = [r for r in shown if where(r) - {only}]
    if elsewhere:
        others = sorted({w for r in elsewhere for w in where(r)} - {only})
        return _row("yes_no", "answered", row, msg("form.not_only", only=only, others=", ".join(others[:4]),
                                                   record=_timed(elsewhere[0])), answer="no")
    if mine:
        return _row("yes_no", "answered", row, msg("form.only", only=only, record=_timed(mine[0])), answer="yes")
    return _row("yes_no", "not_answered", row, msg("form.proposition_open"), answer="cannot_tell")


def _started_against(scope: QuestionScope, coverage: Sequence[ServiceCoverage],
                     invocations: Sequence[ToolInvocation]) -> FormCoverage:
    """Did the symptom start before the happening named ("支付超时是不是风控规则更新前就有了"), or only after
    it ("只在 13:43 重启之后才冒出来")? Its first record against the happening's time: the clock time said,
    else the first record holding the happening's words."""
    row = coverage[0] if coverage else None
    shown = _symptom_shown(scope, coverage, invocations)
    first = next((r for r in shown if r.at is not None), None)
    if first is None or first.at is None:
        return _row("yes_no", "not_answered", row, msg("form.proposition_open"), answer="cannot_tell")
    clock = next((w for w in scope.since_event if _CLOCK_WORD.fullmatch(w)), "")
    words = [w for w in scope.since_event if w != clock]
    if clock:
        hour, minute = (int(x) for x in clock.split(":")[:2])
        at = first.at.replace(hour=hour, minute=minute, second=0, microsecond=0)
        said = f"{clock} UTC"
    else:
        happened = _event_records(scope.model_copy(update={"event": words, "services": []}), invocations, warnings=True)
        mark = next((r for r in happened if r.at is not None), None)
        if mark is None or mark.at is None:
            return _row("yes_no", "not_answered", row, msg("form.no_moment", event=", ".join(words)), answer="cannot_tell")
        at, said = mark.at, _timed(mark)
    before = first.at < at
    holds = before if scope.order == "before" else not before
    told = (msg("form.started_before", record=_timed(first), mark=said) if before
            else msg("form.started_after", record=_timed(first), mark=said))
    return _row("yes_no", "answered", row, told, answer="yes" if holds else "no")


def _in_sequence(scope: QuestionScope, coverage: Sequence[ServiceCoverage],
                 invocations: Sequence[ToolInvocation]) -> FormCoverage:
    """Did the happening said first come first ("PoolExhausted went off first, then SlowQueries?")?
    The first record of each, by its words."""
    row = coverage[0] if coverage else None

    def first(words: list[str]) -> Record | None:
        found = _event_records(scope.model_copy(update={"event": words, "services": []}), invocations, warnings=True)
        return next((r for r in found if r.at is not None), None)

    said_first, said_then = first(scope.since_event), first(scope.event)
    if said_first is None or said_then is None or said_first.at is None or said_then.at is None:
        missing = scope.since_event if said_first is None else scope.event
        return _row("yes_no", "not_answered", row, msg("form.no_moment", event=", ".join(missing)), answer="cannot_tell")
    came_first = said_first.at <= said_then.at
    told = (msg("form.started_before", record=_timed(said_first), mark=_timed(said_then)) if came_first
            else msg("form.started_after", record=_timed(said_first), mark=_timed(said_then)))
    return _row("yes_no", "answered", row, told, answer="yes" if came_first else "no")


_CLOCK_WORD = re.compile(r"\d{1,2}:\d{2}(?::\d{2})?")


def _timed(r: Record) -> str:
    return f"{r.raw} ({r.at:%H:%M:%S} UTC)" if r.at else r.raw


def _alert_state(alert: str, asked: str, coverage: Sequence[ServiceCoverage],
                 invocations: Sequence[ToolInvocation]) -> FormCoverage:
    """Whether the alert asked of still fires or has resolved: its latest record says (an alert
    without endsAt fires on); no record of it, no answer."""
    name = alert_words(alert)
    held = [r for inv in invocations for r in records(inv) if r.alert and r.topic.startswith(name)]
    row = coverage[0] if coverage else None
    if not held:
        return _row("yes_no", "not_answered", row, msg("form.alert_absent", alert=alert), answer="cannot_tell")
    latest = max(held, key=lambda r: r.at.timestamp() if r.at else 0.0)
    state = "firing" if latest.ongoing else "resolved"
    record = f"{latest.raw} ({state}, startsAt {latest.at.isoformat() if latest.at else '?'}" + (
        f", endsAt {latest.until.isoformat()})" if latest.until else ")")
    said = msg("form.alert_firing", alert=alert, record=record) if latest.ongoing else msg(
        "form.alert_resolved", alert=alert, record=record)
    return _row("yes_no", "answered", row, said, answer="yes" if state == asked else "no")



def _doing(named: Sequence[Record], done: Sequence[str]) -> list[Record]:
    """The records holding every word of a doing, in any of its forms ("retried" of "retry")."""
    def said(text: str, word: str) -> bool:
        return any(_holds(text, s) or (s.isascii() and len(s) > 5 and re.search(rf"(?<![a-z0-9]){re.escape(s[:-2])}[a-z]*", text))
                   for s in synonyms(word))
    return [r for r in named if all(said(r.text, w) for w in done)]


def _ids_open(ids: Sequence[str], coverage: Sequence[ServiceCoverage],
              invocations: Sequence[ToolInvocation], done: Sequence[str] = ()) -> FormCoverage:
    """A state asked of ids in words no record uses ("order 131 - the charge never went thru, right?"):
    their own latest record is what there is to say, not a service's state read from other ids'
    records; the yes or no is the reader's."""
    named = _named_by(ids, invocations)
    row = coverage[0] if coverage else None
    subject = ", ".join(ids)
    if not named:
        return _ids_absent(row, subject)
    if done and (did := _doing(named, done)):
        return _row("yes_no", "answered", row, msg("form.ids_did", ids=subject, record=_timed(did[0])), answer="yes")
    latest = max(named, key=lambda r: r.at.timestamp() if r.at else 0.0)
    return _row("yes_no", "not_answered", row, msg("form.ids_open", ids=subject, record=latest.raw), answer="cannot_tell")


def _status_of_ids(ids: Sequence[str], status: str, coverage: Sequence[ServiceCoverage],
                   invocations: Sequence[ToolInvocation]) -> FormCoverage:
    """Whether the ids still hold the status asked of ("is order 123 still PAY_UNKNOWN?"): the latest
    record naming them that speaks of it says; one moving them on from it ("PAY_UNKNOWN -> PAID") is
    a no. Other ids' records say nothing of these."""
    named = _named_by(ids, invocations)
    row = coverage[0] if coverage else None
    subject = ", ".join(ids)
    if not named:
        return _ids_absent(row, subject)
    moved = re.compile(rf"\b{re.escape(status)}\b\s*(?:->|→|=>|to)\s*\w+", re.IGNORECASE)
    speaking = [r for r in named if re.search(rf"\b{re.escape(status)}\b", r.raw, re.IGNORECASE)]
    if not speaking:
        return _row("yes_no", "answered", row, msg("form.ids_clear", ids=subject, record=named[-1].raw), answer="no")
    latest = max(speaking, key=lambda r: r.at.timestamp() if r.at else 0.0)
    if moved.search(latest.raw):
        return _row("yes_no", "answered", row, msg("form.ids_moved", ids=subject, record=latest.raw), answer="no")
    return _row("yes_no", "answered", row, msg("form.ids_still", ids=subject, record=latest.raw), answer="yes")


def _value(prop: Proposition, coverage: Sequence[ServiceCoverage], invocations: Sequence[ToolInvocation]) -> FormCoverage:
    """Does the subject still have the stated version or setting? The latest record of it holding
    one of that kind (and the key, for a setting) says; a record of a change ("v2.4.0 -> v2.4.1",
    "15000ms -> 5000ms") says the value it ends with."""
    kind = "version" if not prop.key else None
    key = normalize(prop.key)
    keys = {key, key.replace("_", " ")}
    held = []
    for inv in invocations:
        for r in records(inv):
            if prop.subject and r.service != prop.subject and normalize(prop.subject) not in r.text:
                continue
            if not kind and not any(k in r.text for k in keys):
                continue
            values = [e for e in find_entities(r.raw) if (e.kind == kind if kind else e.kind in ("quantity", "number", "percentage"))]
            if values:
                held.append((r.at.timestamp() if r.at else 0.0, r, values[-1].value))
    row = next((c for c in coverage if c.service == prop.subject), coverage[0] if coverage else None)
    if not held:
        return _row("yes_no", "not_answered", row, msg("form.proposition_open"), answer="cannot_tell")
    _, latest, value = max(held, key=lambda h: h[0])
    same = value == prop.value or rounds_to(prop.value, value) or rounds_to(value, prop.value)
    return _row("yes_no", "answered", row, msg("form.value", service=prop.subject, record=latest.raw),
                answer="yes" if same else "no")


# A figure a record once had, not the one it holds: "(was 0%)", "15000ms -> 5000ms".
_FORMER_BEFORE = re.compile(r"(?:\bwas|\bfrom|原来是?|之前是?)\s*$")
_FORMER_AFTER = re.compile(r"^\s*(?:->|→|=>)")
# A window a figure is counted over, not a figure of the thing: "最近5分钟次数", "in the last 5 minutes".
_BAR_BEFORE = re.compile(r"(?:\bthreshold|\bslo|\blimit|阈值|上限)\s*[:=：]?\s*$")
_WINDOW_BEFORE = re.compile(r"(?:最近|过去|\b(?:last|past|per|every))\s*$")


def _figures(r: Record, unit: str, *, readings: bool = False) -> list[float]:
    """The figures of one unit a record holds now (a percent, seconds or megabytes; "" plain numbers);
    with `readings`, not the bar a reading is set against ("GET p99 850ms (threshold 100ms)")."""
    norm = normalize(r.raw)
    held = []
    for e in find_entities(norm):
        of_unit = (e.kind == "percentage" if unit == "%" else e.kind == "number" if not unit
                   else e.kind == "quantity" and e.value.endswith(unit))
        if of_unit and not _FORMER_BEFORE.search(norm[:e.start]) and not _FORMER_AFTER.search(norm[e.end:]) \
                and not _WINDOW_BEFORE.search(norm[:e.start]) and not (readings and _BAR_BEFORE.search(norm[:e.start])):
            held.append(float(e.value.removesuffix(unit)))
    return held


def _meets(figure: float, asked: float, bound: str) -> bool:
    if bound == "at_least":
        return figure >= asked
    if bound == "at_most":
        return figure <= asked
    if bound == "about":  # "like 10%": a loose figure, a quarter either way
        return abs(figure - asked) <= asked / 4
    return abs(figure - asked) <= asked / 100


def _measured(prop: Proposition, coverage: Sequence[ServiceCoverage],
              invocations: Sequence[ToolInvocation]) -> FormCoverage | None:
    """Does what the question measures have the figure it states ("inv's heap is capped at 8g", "gc
    pauses r like 10s+")? The records holding the most of its words and a figure of its unit say:
    one meeting it (within its bound) is a yes, none a no; asked whether it still holds, the latest
    of them says, and an alert that has resolved holds it no longer. None: no such record."""
    unit = next((u for u in ("%", "mb", "s", "x") if prop.value.endswith(u)), "")
    asked = float(prop.value.removesuffix(unit))
    if unit == "x":
        return _counted(prop, asked, coverage, invocations)
    scored: list[tuple[int, Record, list[float]]] = []
    # the subject's own records first; else another's naming it ("库存校验失败率: 8.6%, 依赖: inventory-service",
    # an order-service alert), as a figure of the subject's is often measured by those calling it
    for own in (True, False):
        for inv in invocations:
            for r in records(inv):
                if prop.subject and (r.service != prop.subject if own else normalize(prop.subject) not in r.text):
                    continue
                # "back under 100ms?" asks of a reading: the bar it is set against is no reading
                figures = _figures(r, unit, readings=bool(prop.bound))
                held = sum(1 for w in prop.measure if any(_holds(r.topic, s) for s in synonyms(w)))
                if figures and held:
                    scored.append((held, r, figures))
        if scored or not prop.subject:
            break
    row = next((c for c in coverage if c.service == prop.subject), coverage[0] if coverage else None)
    top = max((held for held, _, _ in scored), default=0)
    best = [(r, figures) for held, r, figures in scored if held == top]
    if not best:
        return None
    if prop.latest:
        best = [max(best, key=lambda b: b[0].at.timestamp() if b[0].at else 0.0)]
    meeting = [(r, figures) for r, figures in best if any(_meets(f, asked, prop.bound) for f in figures)
               and not (prop.latest and r.alert and not r.ongoing)]
    said = min(meeting or best, key=lambda b: min(abs(f - asked) for f in b[1]))[0]
    ended = f", resolved {said.until:%H:%M:%S} UTC" if said.alert and not said.ongoing and said.until else ""
    return _row("yes_no", "answered", row, msg("form.measured", record=_timed(said) + ended),
                answer="yes" if meeting else "no")


def _counted(prop: Proposition, asked: float, coverage: Sequence[ServiceCoverage],
             invocations: Sequence[ToolInvocation]) -> FormCoverage | None:
    """How many times a happening was recorded, against the count said ("就 OOM 了两回吧", "like a dozen
    NPEs"): the warnings and faults holding most of its words, one line fetched twice counted once."""
    def holds(r: Record, w: str) -> bool:
        return any(_holds(r.topic, s) for form in {w, w.removesuffix("s")} for s in synonyms(form))

    scored = {(r.service, r.at, r.raw): (sum(1 for w in prop.measure if holds(r, w)), r)
              for inv in invocations for r in records(inv)
              if (r.fault or r.warns) and not r.alert and (not prop.subject or r.service == prop.subject)}
    top = max((held for held, _ in scored.values()), default=0)
    if not top:
        return None
    found = sorted((r for held, r in scored.values() if held == top), key=lambda r: r.at.timestamp() if r.at else 0.0)
    row = next((c for c in coverage if c.service == prop.subject), coverage[0] if coverage else None)
    meets = _meets(float(len(found)), asked, prop.bound)
    said = f"{len(found)} × {_timed(found[0])}"
    return _row("yes_no", "answered", row, msg("form.measured", record=said), answer="yes" if meets else "no")


def _cause_proposition(prop: Proposition, coverage: Sequence[ServiceCoverage], found: Sequence[Cause],
                       evidence: Evidence, sustained: Sequence[ServiceCoverage],
                       invocations: Sequence[ToolInvocation]) -> FormCoverage:
    """Is the subject the cause? Put as a remedy, a yes says only where the cause lies: whether
    the remedy would work no record tells."""
    judged = _cause_judged(prop, coverage, found, evidence, sustained, invocations)
    if prop.denied and judged.answer in ("yes", "no"):
        # "it can't be X, right?": the yes agrees that X is not the cause
        return judged.model_copy(update={"answer": "no" if judged.answer == "yes" else "yes"})
    if not (prop.remedy and judged.answer == "yes"):
        return judged
    said = msg("form.remedy_open", service=prop.subject, cause=judged.cause)
    return judged.model_copy(update={"status": "not_answered", "answer": "cannot_tell", "detail": render(said, "en"),
                                     "msg": said})


def _cause_judged(prop: Proposition, coverage: Sequence[ServiceCoverage], found: Sequence[Cause],
                  evidence: Evidence, sustained: Sequence[ServiceCoverage],
                  invocations: Sequence[ToolInvocation]) -> FormCoverage:
    """Is the subject (a service or a change) the cause of the target's asked symptom?"""
    if prop.subject_kind == "service" and not prop.target:
        return _involved(prop, coverage, found, sustained)
    if prop.subject_kind == "thing":
        return _thing_blamed(prop, coverage, found, invocations)
    if prop.subject_kind == "change" and not coverage and found:
        return _change_blamed(prop, found[0], invocations)
    target = [c for c in coverage if c.service == (prop.target or prop.subject)] or \
        [c for c in coverage if c.service != prop.subject]
    subject = [c for c in coverage if prop.subject_kind == "service" and c.service == prop.subject]
    present = [c for c in target if c.status == "answered"]
    if subject and all(absent(c) for c in subject):
        # Nothing in the data is about the suspect: it can be neither shown the cause nor cleared;
        # what the evidence points to instead is said beside it.
        return _row("yes_no", "not_answered", subject[0], msg("form.subject_absent", service=prop.subject),
                    answer="cannot_tell", cause=_pointed_to(present, found, evidence))
    if prop.subject_kind == "change" and _change_seen(prop.subject, invocations) is False:
        # "the 09:00 config push" when no change was recorded at 09:00: a deploy the evidence blames at
        # another time is another change, and the one asked of can be neither shown the cause nor cleared.
        rest = present or target or list(coverage)
        return _row("yes_no", "not_answered", rest[0] if rest else None, msg("form.change_unseen", change=prop.subject),
                    answer="cannot_tell", cause=_pointed_to(present, found, evidence))
    for row in present:
        cause = cause_for(row, found, evidence)
        if cause is None:
            continue
        # A change of a named service ("api-gateway 配置改了") is the cause only as a change of that service.
        owners = [c.service for c in coverage if c.service and normalize(c.service) in normalize(prop.subject)]
        named = ((bool(CHANGE.search(normalize(cause[0].text))) or _change_made(cause[0], prop.subject, invocations))
                 and all(about(cause[0].text, s) for s in owners)) \
            if prop.subject_kind == "change" else about(cause[0].text, prop.subject)
        first = _came_first(prop, row, invocations) if named and prop.subject_kind == "service" else None
        if first is not None:
            # The effect shows before anything of the suspect's: it cannot be what brought it about.
            return _row("yes_no", "answered", row, msg("form.effect_first", service=row.service, symptom=row.symptom,
                                                        record=first.raw), answer="no")
        fed = None if named else _feeds(prop, cause[0], invocations)
        if fed is not None:
            # The suspect is upstream of the cause, not the cause: yes through it, and no more than likely.
            return _row("yes_no", "answered", row, msg("form.cause_upstream", service=prop.subject, cause=cause[0].text,
                                                        record=fed.raw),
                        answer="yes", cause=(replace(cause[0], support="likely"), fed.raw))
        return _row("yes_no", "answered", row, _cause_msg(row, cause), answer="yes" if named else "no", cause=cause)
    if target and all(c.status == "healthy" for c in target):
        row = target[0]
        return _row("yes_no", "answered", row, msg("form.absent", service=row.service, symptom=row.symptom), answer="no")
    if subject and all(c.status == "healthy" for c in subject):
        row = subject[0]
        return _row("yes_no", "answered", row, msg("form.absent", service=row.service, symptom=row.symptom), answer="no")
    for row in present:
        # The effect's record gives its own reason ("Pod重启次数: 1, 原因: 节点维护驱逐"), and the suspect
        # is not in it: the record says what brought it about.
        said = next((r for inv in invocations for r in records(inv) if r.service == row.service
                     and mentions_symptom(r.text, row.symptom) and (m := _OWN_REASON.search(r.text))
                     and not about(r.text[m.end():], prop.subject)), None)
        if said is not None:
            return _row("yes_no", "answered", row, msg("form.own_reason", service=row.service, symptom=row.symptom,
                                                        record=said.raw), answer="no")
    rest = present or target or list(coverage)
    return _row("yes_no", "not_answered", rest[0] if rest else None, msg("form.proposition_open"), answer="cannot_tell")


def _pointed_to(present: Sequence[ServiceCoverage], found: Sequence[Cause], evidence: Evidence) -> tuple[Cause, str] | None:
    """What the evidence points to instead of a suspect it can neither show nor clear: the first
    shown row's cause."""
    return next((cause for row in present if (cause := cause_for(row, found, evidence))), None)


# Where a record states why it happened: "原因: 节点维护驱逐", "due to ...", "reason=node drain".
_OWN_REASON = pattern(STATED_CAUSE, extra=r"\breason\s*[:=]")


def _change_blamed(prop: Proposition, cause: Cause, invocations: Sequence[ToolInvocation]) -> FormCoverage:
    """A change blamed for a symptom no service or symptom word names ("should we blame commit 9f3c2ab for
    the applyCoupon NPEs?"): the cause the evidence gives answers it when that cause is a change and the
    change named is in a record of one (else the name is nowhere, and nothing can be said of it)."""
    names = change_names(prop.subject)
    held = [r for inv in invocations for r in records(inv) if any(n in r.text for n in names)]
    if names and not any(_CHANGE_RECORD.search(r.text) or CHANGE.search(r.text) for r in held):
        return _row("yes_no", "not_answered", None, msg("form.proposition_open"), answer="cannot_tell")
    named = bool(CHANGE.search(normalize(cause.text))) or _change_made(cause, prop.subject, invocations)
    return _row("yes_no", "answered", None, msg("form.cause", service="", symptom=ANY, cause=cause.text),
                answer="yes" if named else "no", cause=(cause, ""))


def _change_seen(change: str, invocations: Sequence[ToolInvocation]) -> bool | None:
    """Whether a record of a change holds what the question pins the change by: its version or commit,
    its clock time ("the 14:12 config push", "v2.4.1"). None when it pins it by neither. A version a
    change left ("v2.4.0 -> v2.4.1") is not the one it made."""
    names, times = change_names(change), clock_times(normalize(change))
    if not names and not times:
        return None
    made = [re.compile(rf"{re.escape(n)}(?![\w.])(?!\s*(?:->|→|=>))") for n in names]
    return any((_CHANGE_RECORD.search(r.text) or CHANGE.search(r.text)) and all(m.search(r.text) for m in made)
               and (not times or _near(r, times)) for inv in invocations for r in records(inv))


def _near(r: Record, times: set[str]) -> bool:
    """A record within ten minutes of a clock time the question gives (HH:MM): people round ("the 10:00
    push" for one logged at 09:57:40), and a time further off names another happening."""
    if r.at is None:
        return False
    at = r.at.hour * 60 + r.at.minute
    return any(min(d := abs(at - int(t[:2]) * 60 - int(t[3:])), 1440 - d) <= 10 for t in times)


def _change_made(cause: Cause, change: str, invocations: Sequence[ToolInvocation]) -> bool:
    """The cause is what the change set: a change record ("upstream_timeout=5000ms (was 15000ms)"), near the
    time the question gives the change if it gives one ("the 14:12 config push", _near), holds two of the cause's
    words ("the upstream timeout ... set lower than the real request duration"), services' names aside."""
    said = {w for w in keywords(cause.text) if "-" not in w and not w.isdigit()}
    times = clock_times(normalize(change))
    return any(sum(1 for w in said if any(_holds(r.text, s) for s in synonyms(w))) >= 2
               for inv in invocations for r in records(inv) if _CHANGE_RECORD.search(r.text)
               and (not times or _near(r, times)))


def _inside(norm: str, word: str) -> bool:
    """A word in a normalized text, a long Latin one inside a longer name too ("hikari" in "HikariPool-1")."""
    return word in norm if len(word) >= 5 or not word.isascii() else _holds(norm, word)


def _parts(text: str) -> str:
    """A text normalized with its camel-case names also cut into their words ("fullStockSync" holds "sync")."""
    return f"{normalize(text)} {normalize(re.sub(r'(?<=[a-z])(?=[A-Z])', ' ', text))}"


def _speaks_of(text: str, words: set[str]) -> bool:
    """At least half the words naming a thing (each or a synonym of it) are in the text."""
    norm = _parts(text)
    return 2 * sum(1 for w in words if any(_inside(norm, s) for s in synonyms(w))) >= len(words)


def _touches(text: str, words: set[str]) -> bool:
    """Any word naming a thing is in the text."""
    norm = _parts(text)
    return any(_inside(norm, s) for w in words for s in synonyms(w))


def _thing_blamed(prop: Proposition, coverage: Sequence[ServiceCoverage], found: Sequence[Cause],
                  invocations: Sequence[ToolInvocation]) -> FormCoverage:
    """Is a thing that is no service and no change the cause ("is DNS the cause of the order failures?",
    "is the full stock sync what's filling the cache?")? Yes when the cause the evidence gives, or a
    record it quotes, speaks of it; yes through it when a record of the thing that warns of nothing acts
    where the cause lies before the cause shows (likely, as the cause is); no when the evidence gives a
    cause and no record at all names the thing, or when the effect shows before the thing's first
    warning; else the records cannot tell."""
    words = set(prop.words)
    rows = [c for c in coverage if c.service == prop.target] or [c for c in coverage if c.status == "answered"] \
        or list(coverage)
    row = rows[0] if rows else None
    cause = found[0] if found else None
    if not words:
        return _row("yes_no", "not_answered", row, msg("form.proposition_open"), answer="cannot_tell")
    times = clock_times(normalize(prop.phrase))
    if times and not any(_near(r, times) and _touches(r.text, words) for inv in invocations for r in records(inv)):
        # "the 08:30 risk rules push" when the rules were pushed at 09:57: no record of it at that time
        return _row("yes_no", "not_answered", row, msg("form.change_unseen", change=prop.subject), answer="cannot_tell",
                    cause=(cause, "") if cause is not None else None)
    quoted = _cause_records(cause, invocations) if cause is not None else []
    told = " ".join([cause.text, *(r.text for r in quoted)]) if cause is not None else ""
    # A happening the thing is ("the database migration", "the cache failover") must itself be spoken
    # of: a cause sharing the thing's other word ("database connection pool") is about something else.
    doing = {w for w in words if HAPPENING.search(w)}
    if cause is not None and _speaks_of(told, words) and (not doing or _touches(told, doing)):
        return _row("yes_no", "answered", row, msg("form.cause", service=row.service if row else "",
                                                   symptom=row.symptom if row else ANY, cause=cause.text),
                    answer="yes", cause=(cause, ""))
    named = sorted((r for inv in invocations for r in records(inv) if r.at is not None and _touches(r.text, words)),
                   key=lambda r: r.at or 0)
    if cause is not None and not named:
        return _row("yes_no", "answered", row, msg("form.thing_unseen", thing=prop.phrase, cause=cause.text),
                    answer="no", cause=(cause, ""))
    effect = _first_effect(row, invocations) if row is not None else None
    if cause is not None:
        homes = {c.service for c in coverage if c.service and about(cause.text, c.service)} | \
            {r.service for r in quoted if about(cause.text, r.service)}
        shows = [r.at for r in quoted if r.at is not None] or ([effect.at] if effect is not None and effect.at else [])
        fed = next((r for r in named if not r.warns and not r.alert and shows and r.at and r.at < min(shows)
                    and (r.service in homes or any(normalize(h) in r.text for h in homes))), None)
        if fed is not None:
            return _row("yes_no", "answered", row, msg("form.cause_upstream", service=prop.subject, cause=cause.text,
                                                        record=fed.raw),
                        answer="yes", cause=(replace(cause, support="likely"), fed.raw))
    warned = [r for r in named if r.warns or r.alert]
    if warned and effect is not None and effect.at and warned[0].at and effect.at < warned[0].at:
        return _row("yes_no", "answered", row, msg("form.effect_first", service=row.service if row else "",
                                                   symptom=row.symptom if row else ANY, record=effect.raw), answer="no")
    return _row("yes_no", "not_answered", row, msg("form.proposition_open"), answer="cannot_tell")


def _suspect_words(prop: Proposition) -> set[str]:
    """The question's words for the suspect besides its name ("warmup" of "the promotion-service warmup")."""
    name = normalize(prop.subject)
    return {w for w in keywords(prop.phrase) if w not in name.split("-")} - {name}


def _first_warning(service: str, keep: Callable[[Record], bool], invocations: Sequence[ToolInvocation]) -> Record | None:
    """The service's earliest dated warning that `keep` keeps."""
    shown = [r for inv in invocations for r in records(inv) if r.service == service and r.warns and r.at is not None and keep(r)]
    return min(shown, key=lambda r: r.at or 0) if shown else None


def _first_effect(row: ServiceCoverage, invocations: Sequence[ToolInvocation]) -> Record | None:
    """The row's earliest warning line (no alert) of its symptom: when the effect asked about began."""
    return _first_warning(row.service, lambda r: not r.alert and mentions_symptom(r.text, row.symptom), invocations)


def _came_first(prop: Proposition, row: ServiceCoverage, invocations: Sequence[ToolInvocation]) -> Record | None:
    """The target's first warning of the asked symptom when it comes before the suspect's first
    warning (of what the question names of it: "are the order-service pool timeouts what's making
    the orders-db queries slow?" reads order-service's pool lines); None when the order allows it."""
    words = _suspect_words(prop)
    effect = _first_effect(row, invocations)
    # A doing the question dates ("did the 19:52 bgsave kick off ...") came at that time of the effect's day.
    dated = sorted(effect.at.replace(hour=int(t[:2]), minute=int(t[3:]), second=0, microsecond=0)
                   for t in clock_times(prop.phrase)) if effect and effect.at else []
    if effect and effect.at and dated and effect.at < dated[0]:
        return effect
    suspect = _first_warning(prop.subject, lambda r: not words or any(s in r.text for w in words for s in synonyms(w)),
                             invocations)
    return effect if effect and suspect and effect.at and suspect.at and effect.at < suspect.at else None


def _feeds(prop: Proposition, cause: Cause, invocations: Sequence[ToolInvocation]) -> Record | None:
    """A record of the suspect service that acts on the cause's component before the cause shows:
    a line that warns of nothing (a warning is the suspect suffering), names that component and
    holds a word the question used for the suspect ("did the promotion-service warmup cause ...":
    "warmup ... writing promo:flash:* to redis-cart"). Routine calls to the component hold none."""
    words = _suspect_words(prop)
    quoted = _cause_records(cause, invocations)
    homes = {r.service for r in quoted if r.service != prop.subject and about(cause.text, r.service)}
    dated = [r.at for r in quoted if r.at is not None]
    if not words or not homes or not dated:
        return None
    return next((r for inv in invocations for r in records(inv)
                 if r.service == prop.subject and not r.warns and not r.alert and r.at is not None
                 and r.at < min(dated) and any(normalize(h) in r.text for h in homes)
                 and any(s in r.text for w in words for s in synonyms(w))), None)


def _involved(prop: Proposition, coverage: Sequence[ServiceCoverage], found: Sequence[Cause],
              sustained: Sequence[ServiceCoverage]) -> FormCoverage:
    """Is the subject part of the incident ("X 跟这次故障有关系吗", "is X part of this outage")?
    The effect names no asked service, so it is the incident: yes when a cause the evidence
    gives is about the subject; no when the causes it gives are elsewhere (they stay out of the
    lead: nothing links them to the subject), or when it gives none and the subject shows no
    sustained fault (a stray record links nothing); else cannot tell."""
    rows = [c for c in coverage if c.service == prop.subject] or list(coverage)
    row = rows[0] if rows else None
    own = next((c for c in found if about(c.text, prop.subject)), None)
    if own is not None:
        said = (msg("form.culprit", service=prop.subject, cause=own.text) if prop.culprit
                else msg("form.involved", service=prop.subject, cause=own.text))
        return _row("yes_no", "answered", row, said, answer="yes", cause=(own, ""))
    if prop.culprit and found:
        # "Is X the culprit?" with the cause found elsewhere: no, and where it lies is the answer's point
        # (X may well be part of the incident: a victim of that cause).
        return _row("yes_no", "answered", row, msg("form.not_culprit", service=prop.subject, cause=found[0].text),
                    answer="no", cause=(found[0], ""))
    faulty = [c for c in rows if c in sustained]
    if found or (rows and not faulty):
        # The cause found elsewhere is not named here: nothing links it to the asked service.
        return _row("yes_no", "answered", row, msg("form.not_involved", service=prop.subject), answer="no")
    return _row("yes_no", "not_answered", row, msg("form.proposition_open"), answer="cannot_tell")
