"""Ask page read model: the answer and the composer input it was written from."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import TypeAdapter, ValidationError

from pipeline.core.contracts import ComposerAction, ComposerGuardResult, ComposerHypothesis, ExecutorBinding, Verdict
from pipeline.core.events import SessionEvent, StreamProgress
from pipeline.core.messages import tr, value_name
from pipeline.eval.demo import sample_questions
from pipeline.store import Store
from pipeline.store.lease import events
from pipeline.store.record import SessionRecord
from pipeline.tools.incidents import World


@dataclass
class ConfirmedFact:
    claim_id: str
    claim_type: str
    claim_text: str
    evidence: list[ExecutorBinding]


@dataclass
class AnswerView:
    verdict: Verdict | None
    final_answer: str
    # The answer's first sentence: what the page shows above the sections, which it does not repeat.
    lead: str
    confirmed: list[ConfirmedFact]
    hypotheses: list[ComposerHypothesis]
    missing_info: list[str]
    actions: list[ComposerAction]
    rationale: str
    guard: ComposerGuardResult | None
    # Facts, causes and steps about components the question did not name and the evidence does
    # not link to it: the page shows them collapsed, apart from the answer.
    elsewhere: list[str]


_EVENT: TypeAdapter[SessionEvent] = TypeAdapter(SessionEvent)


def stored_events(store: Store, session_id: str, after: int = 0) -> list[tuple[int, SessionEvent]]:
    """(event id, event) of `session_id` after event id `after`, oldest first: each `session_event`
    row read back into its model (pipeline/core/events.py keeps the type as the row's stage). A row
    no model reads (written by another version) is left out: progress shown, not judged."""
    out: list[tuple[int, SessionEvent]] = []
    for event_id, stage, data in events(store, session_id, after=after):
        try:
            out.append((event_id, _EVENT.validate_python({**data, "type": stage})))
        except ValidationError:
            continue
    return out


def progress_text(p: StreamProgress, lang: str) -> str:
    """A stage's streaming progress in one line, for the CLI and Ask: a slow model shows it is
    generating, and how far the stage is into its time budget."""
    return tr("stage.progress", lang, stage=value_name(p.stage, lang), tokens=p.tokens, rate=p.tokens_per_s,
              elapsed=p.elapsed_s, budget=p.budget_s)


def answer_view(record: SessionRecord) -> AnswerView:
    """The composer input (what the answer may say), each confirmed fact with the evidence it cites.
    The next steps are the ones the answer gives (a template adds the safe steps when the input has
    none), so the section never says "none" below an answer that lists some."""
    ev = record.evaluation
    ci = ev.composer_input if ev else None
    out = ev.composer_output if ev else None
    bindings = {c.key: c.evidence_bindings or [] for c in record.claims}
    answer = record.final_answer or ""
    return AnswerView(
        verdict=record.verdict,
        final_answer=answer,
        lead=_lead(answer, out.answer_summary if out else ""),
        confirmed=[ConfirmedFact(c.claim_id, c.claim_type, c.claim_text, list(bindings.get(c.claim_id, [])))
                   for c in (ci.allowed_claims if ci else [])],
        hypotheses=list(ci.allowed_hypotheses) if ci else [],
        missing_info=list(ci.missing_info) if ci else [],
        actions=list(out.recommended_actions) if out and out.recommended_actions
        else list(ci.recommended_actions) if ci else [],
        rationale=ci.rationale if ci else "",
        guard=ev.composer_guard if ev else None,
        elsewhere=list(ci.elsewhere) if ci else [],
    )


def _lead(answer: str, summary: str) -> str:
    """The answer's first sentence: the composer's summary, else the answer's first line."""
    return summary.strip() or next((line for line in answer.splitlines() if line.strip()), "")


def samples(world: World, language: str) -> list[str]:
    """The questions the page offers over a bundled world: the sample set's, one per question form
    (pipeline.eval.demo), else the world's own."""
    return [s.question for s in sample_questions(world.id, language)] or list(
        world.questions_zh if language == "zh" else world.questions_en)
