"""What the answer leads with, in code (law 8): the composer input's ranking and first sentence.

- allowed claims are ranked by relevance to the question's scope (asked services, symptom);
  the first N are the key facts, the rest other observations;
- the lead answers the question in its own form (the scope's `form`), from the coverage rows:
  a yes/no question gets yes (an asked symptom shows: the fact about it) or no (every asked
  symptom shows healthy: the figures), or that it cannot be told (no data), each followed by
  what the evidence does show instead; a why/what question gets the cause (a confirmed root
  cause, else the most likely hypothesis about an asked service, or with no service asked the
  most likely one), except that an asked symptom the evidence shows normal, and none shown, is
  said first and the cause found instead after it; then no data for asked pairs, then "no sign
  of a fault", else "cause unknown" with the first key fact;
- a gap that a confirmed fact already closes is dropped ("missing jstack" beside a confirmed
  jstack line), and so is such an item of a hypothesis' needed evidence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Literal

from pipeline.core.contracts import (
    AnswerLead,
    ComposerClaim,
    ComposerHypothesis,
    FormCoverage,
    QuestionScope,
    ServiceCoverage,
    Verdict,
)
from pipeline.core.messages import Message, msg, render, tr
from pipeline.text.primitives import extract_entities, normalize
from pipeline.verdict.answer import pairs_phrase
from pipeline.verdict.form import absent, named, names_in
from pipeline.verdict.scope import ANY, symptom_words

_CORE = {"root_cause": 2.0, "symptom": 1.0, "impact": 1.0}
# Words that describe a gap rather than name the evidence it lacks.
_GAP_FRAME = frozenset(
    "missing lack lacks lacking need needs needed evidence confirm confirmed cannot direction root cause this "
    "that there yet from with more before relying claim something absent gathered unknown whether which".split()
)
_LATIN = re.compile(r"[a-z][a-z0-9_]{3,}")


# Statements whose yes or no a denied suspect turns round ("it can't be X, right?" answered "No, X is the cause").
_DENIABLE = frozenset({"cause_yes", "other_cause", "culprit_yes", "culprit_no", "cause_upstream", "effect_first", "involved",
                       "not_involved"})

def _asked_in(text: str, scope: QuestionScope | None) -> bool:
    if scope is None:
        return False
    norm = normalize(text)
    return any(normalize(s) in norm for s in scope.services)


def _score(c: ComposerClaim, scope: QuestionScope | None) -> float:
    words = [normalize(w) for w in symptom_words(t.strip() for t in (scope.symptom if scope else "").split(","))]
    norm = normalize(c.claim_text)
    return 3.0 * _asked_in(c.claim_text, scope) + _CORE.get(c.claim_type, 0.0) + sum(w in norm for w in words)


def rank_claims(claims: Sequence[ComposerClaim], scope: QuestionScope | None) -> list[ComposerClaim]:
    """Most relevant first: about an asked service, a core type, naming the symptom; stable."""
    return sorted(claims, key=lambda c: -_score(c, scope))


def key_claims(ranked: Sequence[ComposerClaim], scope: QuestionScope | None, limit: int) -> list[str]:
    """The key facts: at most `limit`, and when services were asked only facts about them (another
    service's facts are other observations), unless none is about them."""
    about = [c for c in ranked if _asked_in(c.claim_text, scope)]
    return [c.claim_id for c in (about or list(ranked))[:limit]]


def _distinct_terms(gap: str, services: Sequence[str]) -> list[str]:
    norm = normalize(gap)
    for s in services:
        norm = norm.replace(normalize(s), " ")
    return [t for t in _LATIN.findall(norm) if t not in _GAP_FRAME]


def closed_by(gap: str, claims: Sequence[ComposerClaim], services: Sequence[str]) -> bool:
    """A confirmed claim holds every distinctive term the gap names (terms of 4+ letters that are
    not service names nor gap wording): the evidence the gap asks for is already in hand."""
    terms = _distinct_terms(gap, services)
    return bool(terms) and any(all(t in normalize(c.claim_text) for t in terms) for c in claims)


def drop_closed(
    missing: list[str], hypotheses: list[ComposerHypothesis], claims: Sequence[ComposerClaim], services: Sequence[str]
) -> tuple[list[str], list[ComposerHypothesis], list[str]]:
    """(gaps kept, hypotheses with closed needs removed, gaps dropped)."""
    kept = [g for g in missing if not closed_by(g, claims, services)]
    hyps = [h.model_copy(update={"needed_evidence": [n for n in h.needed_evidence if not closed_by(n, claims, services)]})
            for h in hypotheses]
    return kept, hyps, [g for g in missing if g not in kept]


def tie(text: str, claims: Sequence[ComposerClaim], scope: QuestionScope | None) -> str:
    """The confirmed fact about an asked service that names the text's component, in full or by a
    distinctive part ("redis command timeout" ties cart-service to redis-cart); "" when none does."""
    names = names_in(text, scope.services if scope else []) | _components(text)
    return next((c.claim_text for c in claims
                 if _asked_in(c.claim_text, scope) and any(named(n, c.claim_text) for n in names)), "")


def _components(text: str) -> set[str]:
    return {normalize(e.value) for e in extract_entities(text) if e.kind == "service"}


def _tied(hypothesis: str, claims: Sequence[ComposerClaim], scope: QuestionScope | None) -> bool:
    return bool(tie(hypothesis, claims, scope))


def on_topic(text: str, claims: Sequence[ComposerClaim], scope: QuestionScope | None) -> tuple[bool, str]:
    """(whether the text belongs in the answer, the link that brings it in). It does when it names
    an asked service or no component at all, or when a confirmed fact about an asked service
    links its component; a text about another component only is "elsewhere in the evidence"."""
    if scope is None or not scope.services or _asked_in(text, scope):
        return True, ""
    if not _components(text):
        return True, ""
    link = tie(text, claims, scope)
    return bool(link), link


def _cause(verdict: Verdict, claims: Sequence[ComposerClaim], hypotheses: Sequence[ComposerHypothesis],
           scope: QuestionScope | None) -> tuple[str, Literal["confirmed", "likely"]] | None:
    """The cause the answer may name: a root cause confirmed under PASS about an asked service (any,
    when none was asked), else the most likely hypothesis about one, or tied to one by a confirmed fact."""
    asked = list(scope.services) if scope else []
    roots = [c for c in claims if c.claim_type == "root_cause"] if verdict == "PASS" else []
    root = next((c for c in roots if _asked_in(c.claim_text, scope)), roots[0] if roots and not asked else None)
    if root is not None:
        return root.claim_text, "confirmed"
    if verdict != "REJECT" and hypotheses:
        hyp = next((h for h in hypotheses if _asked_in(h.hypothesis_text, scope)), None if asked else hypotheses[0])
        # A cause in a dependency leads only when a confirmed fact ties it to an asked service
        # ("order-service: payment failed ... from api-gateway"); an unrelated incident never does.
        hyp = hyp or next((h for h in hypotheses if _tied(h.hypothesis_text, claims, scope)), None)
        if hyp is not None:
            return hyp.hypothesis_text, "likely"
    return None


def _item(text: str) -> str:
    return text.strip().rstrip("。.；;")


def _row_text(cov: ServiceCoverage, language: str) -> str:
    m = cov.msg if isinstance(cov.msg, Message) else None
    return render(m, language) if m is not None else cov.detail


def _figures(rows: Sequence[ServiceCoverage], language: str) -> str:
    """What shows the rows healthy: each one's figure, or for a row shown healthy by a quiet log
    how many records were looked at."""
    out = []
    for c in rows:
        if c.figure:
            out.append(c.figure)
        elif isinstance(c.msg, Message) and c.msg.code == "coverage.healthy_quiet":
            out.append(render(msg("coverage.quiet_figure", count=c.msg.params.get("count", 0)), language))
    return _joined(out, language)


def _joined(texts: Sequence[str], language: str) -> str:
    """Several facts as one clause: a "；"/";" would end the lead's first sentence (the guard reads
    the lead up to there) before the second fact."""
    return tr("answer.facts_join", language).join(_item(t) for t in dict.fromkeys(texts) if t)


def _quotes_figure(row: ServiceCoverage, text: str) -> bool:
    """Sort key: False (first) for a claim that quotes the row's figure."""
    return not (row.figure and normalize(row.figure) in normalize(text))


def _form_lead(row: FormCoverage, scope: QuestionScope, claims: Sequence[ComposerClaim],
               hypotheses: Sequence[ComposerHypothesis], coverage: Sequence[ServiceCoverage]) -> AnswerLead | None:
    """The lead the form row decides (pipeline.verdict.form): a why whose cause is not in the
    evidence, or the yes/no of a cause or state proposition; None: the coverage leads below."""
    language, prop = scope.language, scope.proposition
    if prop is not None and prop.measure and not (isinstance(row.msg, Message) and row.msg.code == "form.measured"):
        prop = prop.model_copy(update={"kind": "symptom"})  # no record held what the figure measures
    decided = next((c for c in coverage if c.service == row.service and c.symptom == row.symptom), None)
    rows = [decided] if decided else []
    by_id = {c.claim_id: c.claim_text for c in claims}

    def facts(of: Sequence[ServiceCoverage], per_row: int = 0) -> str:
        """The closest verified facts about the rows: their claims, else their own finding."""
        # The claim quoting the row's figure (the record that decided it) first: a resolved alert
        # beside it does not show the fault.
        texts = [t for c in of for t in sorted((by_id[cid] for cid in c.claim_ids if cid in by_id),
                                               key=lambda text: _quotes_figure(c, text))[:per_row or (2 if len(of) == 1 else 1)]]
        return _joined(texts or [_row_text(c, language) for c in of], language)

    def lead(kind: Literal["proposition", "why_open", "since_open"], text: str, statement: str = "", subject: str = "",
             support: Literal["confirmed", "likely", "unknown"] = "unknown", link: str = "",
             of: Sequence[ServiceCoverage] = rows) -> AnswerLead:
        if prop is not None and prop.denied and statement in _DENIABLE:
            statement = f"denied_{statement}"
        return AnswerLead(kind=kind, form=row.form, answer=row.answer, statement=statement, subject=subject,
                          services=[c.service for c in of], symptoms=[c.symptom for c in of],
                          evidence=[f"#{i}" for i in sorted({i for c in of for i in c.invocation_ids})],
                          text=text, support=support, link=link)

    if isinstance(row.msg, Message) and row.msg.code == "form.shared_cause_open":
        return lead("why_open", facts(rows), "shared_cause")
    if isinstance(row.msg, Message) and row.msg.code == "form.not_shared":
        return lead("proposition", facts(rows), "not_shared", row.service)
    if isinstance(row.msg, Message) and row.msg.code in ("form.actor", "form.no_actor"):
        # Who did it: the record of the doing, which names who or does not.
        return lead("why_open", str(row.msg.params["record"]), row.msg.code.removeprefix("form."))
    if row.form in ("how_long", "since_when"):
        if isinstance(row.msg, Message) and row.msg.code == "form.no_moment":
            return lead("since_open", str(row.msg.params["event"]), "at")
        if row.status == "answered" and row.first is not None and (
                decided is None or (isinstance(row.msg, Message) and row.msg.params.get("symptom") == ANY)):
            return _since_lead(row, None, language)  # a happening named by its own words
        if decided is None or decided.status != "answered":
            return None  # healthy, no data: the coverage leads below
        if row.status == "not_answered":
            return lead("since_open", facts(rows))
        return _since_lead(row, decided, language)
    if row.form == "why":
        if isinstance(row.msg, Message) and row.msg.code == "form.intent":
            # A motive is in no record: say so, then what was done (the first verified facts).
            return lead("why_open", _joined([c.claim_text for c in claims][:2], language) or facts(rows), "intent")
        if isinstance(row.msg, Message) and row.msg.code == "form.event_no_cause":
            # The happening asked about is in a record; what led to it is in none.
            return lead("why_open", str(row.msg.params["event"]), "event")
        if isinstance(row.msg, Message) and row.msg.code == "form.job_fine":
            return lead("why_open", str(row.msg.params["event"]), "job_fine")
        if isinstance(row.msg, Message) and row.msg.code == "form.no_event":
            return lead("why_open", str(row.msg.params["event"]), "no_event")
        if isinstance(row.msg, Message) and row.msg.code == "form.absent_why":
            return lead("why_open", facts(rows), "absent")
        if row.status == "not_answered" and decided is not None and decided.status == "answered":
            # Another asked service's cause, when there is one, is said after the gap: "what is wrong
            # with api-gateway and user-service?" is half answered, not unanswered.
            other = next((h.hypothesis_text for h in hypotheses if _asked_in(h.hypothesis_text, scope)
                          and normalize(row.service) not in normalize(h.hypothesis_text)), "")
            return lead("why_open", facts(rows)).model_copy(
                update={"instead": other, "instead_support": "likely" if other else "unknown"})
        if row.cause and row.link and any(h.hypothesis_text == row.cause for h in hypotheses):
            # A cause in a component the question did not name leads with what links it.
            return AnswerLead(kind="cause", support="likely", form="why", services=list(scope.services),
                              text=row.cause, link=row.link)
        return None
    if isinstance(row.msg, Message) and row.msg.code in ("form.went_on", "form.stopped"):
        # "X stopped at T, right?": the first record of it after T, or its last before.
        return lead("proposition", str(row.msg.params["record"]), row.msg.code.removeprefix("form."), str(row.msg.params["at"]))
    if isinstance(row.msg, Message) and row.msg.code in ("form.not_all", "form.all_open"):
        # "every call failing?": a success of the path says no; failures alone cannot say all fail.
        return lead("proposition", str(row.msg.params["record"]), row.msg.code.removeprefix("form."), "")
    if isinstance(row.msg, Message) and row.msg.code in ("form.repeats", "form.once", "form.not_only", "form.only"):
        # "just a blip?", "only on X?": how often, or where else, the records show it.
        p = row.msg.params
        subject = (tr("answer.times_between", language, count=p["count"], first=p["first"], last=p["last"])
                   if row.msg.code == "form.repeats" else str(p.get("only", "")))
        text = f"{p['others']}: {p['record']}" if row.msg.code == "form.not_only" else str(p["record"])
        return lead("proposition", text, row.msg.code.removeprefix("form."), subject)
    if isinstance(row.msg, Message) and row.msg.code in ("form.alert_firing", "form.alert_resolved", "form.alert_absent"):
        # An alert asked whether it still fires: its own record answers, named with the alert.
        return lead("proposition", str(row.msg.params.get("record", "")),
                    f"{row.msg.code.removeprefix('form.')}_{row.answer}", str(row.msg.params["alert"]))
    if isinstance(row.msg, Message) and row.msg.code in ("form.started_before", "form.started_after"):
        # Its start against the happening named: the first record of it, and the happening's time.
        return lead("proposition", str(row.msg.params["record"]), f"{row.msg.code.removeprefix('form.')}_{row.answer}",
                    str(row.msg.params["mark"]))
    if isinstance(row.msg, Message) and row.msg.code == "form.measured":
        # A figure said of words: the record holding what it measures answers, whatever service it is.
        return lead("proposition", str(row.msg.params["record"]), f"measured_{row.answer}")
    if (row.form == "yes_no" and prop is not None and prop.kind == "cause" and decided is None and row.cause
            and row.answer in ("yes", "no")):
        # A change blamed for what no symptom word names: the evidence's cause, a change or not.
        stated = "cause_yes" if (row.answer == "yes") != prop.denied else "other_cause"
        return AnswerLead(kind="proposition", form=row.form, answer=row.answer,
                          statement=f"denied_{stated}" if prop.denied else stated, subject=prop.subject,
                          services=[""], symptoms=[ANY], text=row.cause, link=row.link,
                          support="confirmed" if any(c.claim_text == row.cause for c in claims) else "likely")
    if (row.form == "yes_no" and decided is None and isinstance(row.msg, Message)
            and row.msg.code in ("form.ids_shown", "form.ids_clear")):
        # Asked of instances with no service named ("what about the -3 box, is it throwing it too?"): the
        # form row's own pair
        return AnswerLead(kind="proposition", form=row.form, answer=row.answer, statement=row.msg.code.removeprefix("form."),
                          subject=str(row.msg.params["ids"]), services=[row.service], symptoms=[row.symptom],
                          text=str(row.msg.params.get("record", "")))
    if row.form != "yes_no" or prop is None or decided is None:
        return None
    if isinstance(row.msg, Message) and row.msg.code in ("form.stray", "form.forecast"):
        # A stray record or a forecast of the asked symptom is not the state asked about (pipeline.verdict.form).
        kind = "stray" if row.msg.code == "form.stray" else "forecast"
        return lead("proposition", facts(rows), f"{kind}_{row.answer}", prop.subject or row.service)
    if isinstance(row.msg, Message) and row.msg.code in ("form.culprit", "form.not_culprit"):
        return lead("proposition", row.cause, "culprit_yes" if (row.answer == "yes") != prop.denied else "culprit_no", prop.subject,
                    row.cause_support)
    if isinstance(row.msg, Message) and row.msg.code in ("form.ids_shown", "form.ids_clear", "form.ids_absent",
                                                         "form.ids_still", "form.ids_moved", "form.ids_open",
                                                         "form.ids_did", "form.ids_not_done"):
        # Asked of ids: their own records answer, named with the ids.
        return lead("proposition", str(row.msg.params.get("record", "")), row.msg.code.removeprefix("form."),
                    str(row.msg.params["ids"]))
    if isinstance(row.msg, Message) and row.msg.code == "form.involved":
        return lead("proposition", row.cause, "involved", prop.subject, row.cause_support)
    if isinstance(row.msg, Message) and row.msg.code == "form.not_involved":
        return lead("proposition", facts(rows), "not_involved", prop.subject)
    if prop.kind == "symptom":
        if prop.expects == "faulty" or row.status != "answered":
            return None  # the coverage leads below say "yes, <figure>" / "no sign of it"
        # It asserts the symptom's absence ("X 是不是没有报错"): the yes/no says which, outright.
        of = [c for c in coverage if c.status == "answered" and (not prop.subject or c.service == prop.subject)] or rows
        if row.answer == "no":
            return lead("proposition", facts(of), "symptom_shown", prop.subject, of=of)
        return lead("proposition", _figures(of, language) or facts(of), "symptom_none", prop.subject, of=of)
    if prop.kind == "state":
        of = [c for c in coverage if not prop.subject or c.service == prop.subject] or rows
        faulty = [c for c in of if c.status == "answered"]
        shown_rows = faulty or of
        # With several services asked, the answer names those it speaks of.
        subject = prop.subject or tr("answer.and", language).join(dict.fromkeys(c.service for c in shown_rows))
        if row.answer == "cannot_tell":
            return lead("proposition", facts(of), "state_open", subject, of=of)
        if isinstance(row.msg, Message) and row.msg.code == "form.degraded":
            return lead("proposition", facts(faulty, per_row=1), "degraded_no", subject, of=faulty)
        # "Not healthy" shows the record that decided it, not a resolved alert beside it.
        shown = facts(faulty, per_row=1) if faulty else _figures(of, language) or facts(of)
        return lead("proposition", shown, f"{prop.expects}_{row.answer}", subject, of=shown_rows)
    if row.answer == "cannot_tell" and prop.subject_kind == "service" and row.service == prop.subject and absent(decided):
        # The data holds nothing about the suspect: say so, then what the evidence points to.
        target = [c for c in coverage if c.service == prop.target] or rows
        if row.cause:
            support: Literal["confirmed", "likely"] = row.cause_support if row.cause_support != "unknown" else "likely"
            return lead("proposition", row.cause, "subject_absent", prop.subject, support, row.link, of=target)
        return lead("proposition", facts(target), "subject_absent_open", prop.subject, of=target)
    if isinstance(row.msg, Message) and row.msg.code == "form.change_unseen":
        # No record of the change the question pins: say so, then what the evidence points to.
        if row.cause:
            support = row.cause_support if row.cause_support != "unknown" else "likely"
            return lead("proposition", row.cause, "change_unseen", prop.subject, support, row.link)
        return lead("proposition", facts(rows), "change_unseen_open", prop.subject)
    if isinstance(row.msg, Message) and row.msg.code == "form.remedy_open" and row.cause:
        # A remedy put forward on the cause's own service: where the cause lies, not that the remedy works.
        support = row.cause_support if row.cause_support != "unknown" else "likely"
        return lead("proposition", row.cause, "remedy_open", prop.subject, support, row.link)
    if row.answer == "cannot_tell":
        return lead("proposition", facts(rows), "cause_open", prop.subject)
    if isinstance(row.msg, Message) and row.msg.code == "form.value":
        return lead("proposition", str(row.msg.params["record"]), f"value_{row.answer}", prop.subject or row.service)
    if isinstance(row.msg, Message) and row.msg.code == "form.own_reason":
        return lead("proposition", str(row.msg.params["record"]), "own_reason", prop.subject)
    if isinstance(row.msg, Message) and row.msg.code == "form.effect_first":
        return lead("proposition", str(row.msg.params["record"]), "effect_first", prop.subject)
    if isinstance(row.msg, Message) and row.msg.code == "form.cause_upstream":
        return lead("proposition", row.cause, "cause_upstream", prop.subject, "likely", row.link)
    if row.cause:
        said = next((c for c in claims if c.claim_text == row.cause), None)
        hyp = next((h for h in hypotheses if h.hypothesis_text == row.cause), None)
        if said is None and hyp is None:
            return lead("proposition", facts(rows), "cause_open", prop.subject)
        support = "confirmed" if said is not None else "likely"
        return lead("proposition", row.cause, "cause_yes" if (row.answer == "yes") != prop.denied else "other_cause",
                    prop.subject,
                    support, row.link)
    return lead("proposition", _figures(rows, language) or facts(rows), "absent", prop.subject)


def _since_lead(row: FormCoverage, decided: ServiceCoverage | None, language: str) -> AnswerLead | None:
    """How long / since when, from the first dated record of the asked symptom, or of the asked
    happening when no symptom was asked (`decided` None) (pipeline.verdict.form)."""
    first, until = row.first, row.until
    if first is None or until is None:
        return None
    with_day = first.at.date() != until.date()
    how_long = row.form == "how_long"
    code = row.msg.code if isinstance(row.msg, Message) else ""
    statement = {"form.in_effect": "in_effect", "form.at": "at", "form.happening": "happening",
                 "form.between": "between"}.get(code, "")
    return AnswerLead(kind="since", form=row.form, statement=statement,
                      services=[(decided.service if decided else "") or first.service],
                      symptoms=[decided.symptom if decided else row.symptom], evidence=[f"#{first.invocation_id}"],
                      text=first.text,
                      since=_clock(first.at, with_day), until=_clock(until, with_day) if how_long else "",
                      span=_span(until - first.at, language) if how_long else "",
                      record=tr("answer.record_at", language, number=first.number, call=first.invocation_id),
                      then=str(row.msg.params["then"]) if statement == "between" and isinstance(row.msg, Message) else "")


def _clock(at: datetime, with_day: bool) -> str:
    """A record's time as its own zone states it ("16:20 UTC", "10:02 UTC+08:00"), with the day when
    the span crosses one."""
    return at.strftime("%Y-%m-%d %H:%M %Z" if with_day else "%H:%M %Z").strip()


def _span(span: timedelta, language: str) -> str:
    minutes = round(span.total_seconds() / 60)
    if minutes < 1:
        return tr("answer.span_instant", language)
    if minutes == 1:
        return tr("answer.span_minute", language)
    if minutes < 120:
        return tr("answer.span_minutes", language, minutes=minutes)
    return tr("answer.span_hours", language, hours=f"{minutes / 60:.1f}".removesuffix(".0"))


def decide_lead(
    verdict: Verdict,
    claims: Sequence[ComposerClaim],
    hypotheses: Sequence[ComposerHypothesis],
    scope: QuestionScope | None,
    coverage: Sequence[ServiceCoverage],
    form_row: FormCoverage | None = None,
) -> AnswerLead:
    decided = _form_lead(form_row, scope, claims, hypotheses, coverage) if form_row and scope else None
    if decided is not None:
        return decided
    asked = list(scope.services) if scope else []
    form = scope.form if scope else "what"
    language = scope.language if scope else "en"
    cause = _cause(verdict, claims, hypotheses, scope)
    pairs = [c for c in coverage if c.symptom != ANY]
    present = [c for c in pairs if c.status == "answered"]
    healthy = [c for c in pairs if c.status == "healthy"]
    missing = [c for c in coverage if c.status in ("no_data", "not_queried")]
    by_id = {c.claim_id: c for c in claims}
    # What the evidence shows beside the asked symptom: the cause, else the first fact about an asked
    # service that is not the asked pairs' own evidence (the lead already quotes that).
    own = {cid for c in coverage for cid in c.claim_ids}
    other = [c for c in claims if c.claim_id not in own]
    first = next((c for c in other if _asked_in(c.claim_text, scope)), other[0] if other else None)
    instead, instead_support = cause or ((first.claim_text, "confirmed") if first else ("", "unknown"))

    def ids(rows: Sequence[ServiceCoverage]) -> list[str]:
        return [f"#{i}" for i in sorted({i for c in rows for i in c.invocation_ids})]

    def lead(kind: Literal["present", "healthy", "no_data"], rows: Sequence[ServiceCoverage], text: str,
             other: str = "", other_support: Literal["confirmed", "likely", "unknown"] = "unknown") -> AnswerLead:
        return AnswerLead(kind=kind, form=form, services=[c.service for c in rows], symptoms=[c.symptom for c in rows],
                          evidence=ids(rows), text=text, instead=other if other != text else "",
                          instead_support=other_support if other and other != text else "unknown")

    if form == "yes_no" and present:
        # One fact per asked pair that shows, the pair's first allowed claim (else its figure).
        facts = [next((by_id[cid].claim_text for cid in c.claim_ids if cid in by_id), c.figure) for c in present]
        if healthy:  # the asked pairs that do not show are answered too: no, with their figures
            facts.append(tr("answer.also_healthy", language,
                   pairs=pairs_phrase([c.service for c in healthy], [c.symptom for c in healthy], language),
                   text=_figures(healthy, language)))
        return lead("present", present, _joined(facts, language),
                    *(cause or ("", "unknown")))
    if (form == "yes_no" or not present) and healthy and not missing:
        return lead("healthy", healthy, _figures(healthy, language), instead, instead_support)
    if missing and form in ("yes_no", "how_long", "since_when"):  # a cause is no time either
        return lead("no_data", missing, _joined([_row_text(c, language) for c in missing], language), instead, instead_support)
    if cause is not None:
        return AnswerLead(kind="cause", support=cause[1], form=form, services=asked, text=cause[0])
    if missing:
        return lead("no_data", missing, _joined([_row_text(c, language) for c in missing], language), instead, instead_support)
    if coverage and all(c.status == "healthy" for c in coverage):
        return AnswerLead(kind="healthy", form=form, services=[c.service for c in coverage],
                          symptoms=[c.symptom for c in coverage], evidence=ids(coverage),
                          text=_figures(coverage, language))
    top = next((c for c in claims if _asked_in(c.claim_text, scope)), claims[0] if claims and not asked else None)
    return AnswerLead(kind="unknown", form=form, services=asked if top else [], text=top.claim_text if top else "")
