"""The answer's shape, shared by the fixed templates (pipeline.stages.templates) and the offline
composer, which must not import a stage.

Law 8: the first sentence answers the question (the AnswerLead decided in code), then at most N
key facts, other observations, possible causes, evidence gaps, next steps. Every word here is
framing: it carries no fact, so the composer guard subtracts this vocabulary before it asks
whether a sentence's content comes from the composer input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from pipeline.core.contracts import AnswerLead, ComposerAction, ComposerInput
from pipeline.core.messages import LANGS, family, symptom_name, tr
from pipeline.text.primitives import keywords
from pipeline.verdict.safe_actions import fixed_actions


@lru_cache(maxsize=1)
def framing_words() -> frozenset[str]:
    """Content words of every framing phrase (the catalogue's answer.* texts), both languages: they
    say nothing about the incident. So a frame avoids fact words ("down", "expired"): one written
    there stops counting in every claim."""
    words: set[str] = set()
    for lang in LANGS:
        for text in [*family("answer.", lang).values(), tr("common.any_service", lang)]:
            words |= keywords(text.replace("{", " ").replace("}", " "))
    return frozenset(words)


def _item(text: str) -> str:
    return text.strip().rstrip("。.；;")


def pairs_phrase(services: Sequence[str], symptoms: Sequence[str], language: str) -> str:
    """"a memory problem in order-service, high latency in user-service": asked pairs in a sentence."""
    pairs = [tr("answer.pair", language, service=service or tr("common.any_service", language),
                symptom=symptom_name(symptom, language))
             for service, symptom in dict.fromkeys(zip(services, symptoms, strict=False))]
    return tr("answer.and", language).join(pairs)


def lead_sentence(lead: AnswerLead | None, language: str, needed: Sequence[str] = ()) -> str:
    """The first sentence; `needed` is what the hypothesis it names still needs (the possible
    causes section then leaves that hypothesis out rather than say it twice)."""
    needs = tr("answer.needed", language, items=tr("answer.sep", language).join(needed)) if needed else ""
    if lead is None:
        return tr("answer.unknown", language)
    end = tr("common.stop", language)
    services = tr("answer.and", language).join(lead.services)
    evidence = tr("answer.and", language).join(lead.evidence) or "-"
    if lead.kind in ("proposition", "why_open", "since", "since_open"):
        return _form_sentence(lead, language) + end
    if lead.kind == "cause":
        cause = (tr("answer.cause_confirmed", language, text=_item(lead.text)) if lead.support == "confirmed"
                 else tr("answer.cause_likely", language, text=_item(lead.text)))
        return cause + needs + (tr("answer.linked_by", language, text=_item(lead.link)) if lead.link else "") + end
    if lead.symptoms and lead.kind in ("present", "healthy", "no_data"):
        pairs, text = pairs_phrase(lead.services, lead.symptoms, language), _item(lead.text)
        head = (tr("answer.healthy_symptom", language, pairs=pairs, text=text, evidence=evidence)
                if lead.kind == "healthy" else tr("answer.present", language, pairs=pairs, text=text)
                if lead.kind == "present" else tr("answer.no_data", language, pairs=pairs, text=text))
        if lead.instead:
            instead, likely = _item(lead.instead), lead.instead_support == "likely"
            if lead.kind == "present":
                head += (tr("answer.also_likely", language, text=instead) if likely
                         else tr("answer.also_confirmed", language, text=instead))
            else:
                head += (tr("answer.instead_likely", language, text=instead) if likely
                         else tr("answer.instead_confirmed", language, text=instead))
            head += needs if likely else ""
        return head + end
    if lead.kind == "healthy":
        return tr("answer.healthy", language, services=services, evidence=evidence)
    if lead.kind == "no_data":
        return tr("answer.no_data_any", language, services=services, text=_item(lead.text)) + end
    if lead.text and services:
        return tr("answer.unknown_fact", language, services=services, text=_item(lead.text)) + end
    return tr("answer.unknown", language)


def _form_sentence(lead: AnswerLead, language: str) -> str:
    """The yes/no of a cause or state proposition, "cannot tell why", or since when / how long,
    stating what it answers outright (pipeline.verdict.form): a negated question's "yes" cannot be
    read two ways."""
    pairs = pairs_phrase(lead.services, lead.symptoms, language)
    if lead.kind == "why_open" and lead.statement == "intent":
        return tr("answer.why_intent", language, text=_item(lead.text))
    # "absent": no record shows what the why asks of, so no cause to give, and the absence no answer to a why
    if lead.kind == "why_open" and lead.statement in ("event", "job_fine", "no_event", "actor", "no_actor", "shared_cause",
                                                         "absent"):
        return tr(f"answer.why_{lead.statement}", language, text=_item(lead.text))
    if lead.kind == "why_open":
        other = tr("answer.instead_likely", language, text=_item(lead.instead)) if lead.instead else ""
        return tr("answer.why_open", language, pairs=pairs, text=_item(lead.text)) + other
    if lead.kind == "since_open":
        if lead.statement == "at":
            return tr("answer.at_open", language, text=_item(lead.text))
        if lead.form == "how_long":
            return tr("answer.how_long_open", language, pairs=pairs, text=_item(lead.text))
        return tr("answer.since_open", language, pairs=pairs, text=_item(lead.text))
    if lead.kind == "since":
        said = {"service": lead.services[0] if lead.services and lead.services[0] else tr("common.any_service", language),
                "symptom": symptom_name(lead.symptoms[0] if lead.symptoms else "any", language),
                "since": lead.since, "record": lead.record, "text": lead.text.strip()}
        if lead.form == "how_long":
            kind = (f"answer.how_long_{lead.statement}" if lead.statement in ("in_effect", "happening", "between")
                    else "answer.how_long")
            return tr(kind, language, **said, until=lead.until, span=lead.span, then=lead.then)
        if lead.statement in ("in_effect", "at", "happening"):
            return tr(f"answer.{lead.statement}", language, **said)
        return tr("answer.since", language, **said)
    support = tr("answer.support_confirmed", language) if lead.support == "confirmed" else tr("answer.support_likely", language)
    template = family("answer.prop.", language)[lead.statement]
    head = template.format(subject=lead.subject, pairs=pairs, support=support, text=_item(lead.text))
    return head + (tr("answer.linked_by", language, text=_item(lead.link)) if lead.link else "")


@dataclass
class AnswerSections:
    lead: str
    verdict_note: str = ""
    key_facts: list[str] = field(default_factory=list)
    other_observations: list[str] = field(default_factory=list)
    possible_causes: list[str] = field(default_factory=list)
    evidence_gaps: list[str] = field(default_factory=list)
    actions: list[ComposerAction] = field(default_factory=list)
    # About components outside the question and not linked to it: shown collapsed, apart.
    elsewhere: list[str] = field(default_factory=list)


def sections(ci: ComposerInput, language: str) -> AnswerSections:
    """The answer's sections from the composer input alone (it is already filtered in code)."""
    claims = ci.allowed_claims
    if ci.verdict == "REJECT":  # docs/spec.md#verdict-expression: REJECT states no root cause, whatever reached the input
        claims = [c for c in claims if c.claim_type != "root_cause"]
    key_ids = set(ci.key_claim_ids) if ci.key_claim_ids else {c.claim_id for c in claims}
    actions = list(ci.recommended_actions)
    if ci.verdict != "PASS" and not actions:
        actions = fixed_actions(language)
    # The hypothesis the lead names is said there, with what it needs, and not again below.
    lead = ci.answer_lead
    named = (lead.text if lead.kind == "cause" and lead.support == "likely" else
             lead.instead if lead.instead_support == "likely" else "") if lead else ""
    in_lead = next((h for h in ci.allowed_hypotheses if named and h.hypothesis_text == named), None)
    # One hedge per cause, on the item itself: the guard reads each item alone, and a heading
    # that hedged again read "Possible causes (unconfirmed): Possibly (unconfirmed): ...".
    causes = [] if ci.verdict == "REJECT" else [
        tr("answer.hypothesis", language, text=_item(h.hypothesis_text))
        + (tr("answer.needed", language, items=tr("answer.sep", language).join(h.needed_evidence)) if h.needed_evidence else "")
        + (tr("answer.linked_by", language, text=_item(h.link)) if h.link else "")
        for h in ci.allowed_hypotheses if h is not in_lead
    ]
    note = (tr("answer.low_note", language) if ci.verdict == "LOW_CONFID"
            else tr("answer.reject_note", language) if ci.verdict == "REJECT" else "")
    return AnswerSections(
        lead=lead_sentence(lead, language, in_lead.needed_evidence if in_lead else ())
        if ci.verdict != "REJECT" else tr("answer.reject_note", language),
        verdict_note=note if ci.verdict != "REJECT" else "",
        key_facts=[c.claim_text for c in claims if c.claim_id in key_ids],
        other_observations=[c.claim_text for c in claims if c.claim_id not in key_ids],
        possible_causes=causes,
        evidence_gaps=list(ci.missing_info),
        actions=actions,
        elsewhere=list(ci.elsewhere),
    )
