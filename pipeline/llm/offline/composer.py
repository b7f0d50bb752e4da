"""The offline composer: a prose answer woven only from composer_input text (docs/spec.md#verdict-expression).

Where the fixed templates list, this writes sentences from the same sections (pipeline.verdict.answer):
the first sentence answers the question, connective words add nothing, so its answer passes
the composer guard. Each possible cause carries its own "unconfirmed" marker because the guard
reads sentence by sentence.
"""

from __future__ import annotations

from pipeline.core.contracts import ComposerInput, ComposerOutput
from pipeline.core.messages import tr
from pipeline.verdict.answer import sections


def _item(text: str) -> str:
    return text.strip().rstrip("。.；;")


def compose(composer_input: ComposerInput, language: str) -> ComposerOutput:
    s = sections(composer_input, language)
    end = tr("common.stop", language)

    def sentence(head: str, items: list[str]) -> str:
        return f"{head}{'' if head.endswith('：') else ' '}{tr('answer.sep', language).join(_item(i) for i in items)}{end}" if items else ""

    body = [
        s.lead,
        s.verdict_note,
        sentence(tr("answer.key_facts", language), s.key_facts),
        sentence(tr("answer.other", language), s.other_observations),
        sentence(tr("answer.possible", language), s.possible_causes),
        sentence(tr("answer.gaps", language), s.evidence_gaps),
        sentence(tr("answer.next", language), [a.action_text for a in s.actions]),
    ]
    return ComposerOutput(
        answer_summary=s.lead,
        recommended_actions=s.actions,
        # One paragraph per section, the answer first: never every quote strung into one block.
        user_facing_answer="\n".join(b for b in body if b),
        key_facts=s.key_facts,
        other_observations=s.other_observations,
        possible_causes=s.possible_causes,
        evidence_gaps=s.evidence_gaps,
    )
