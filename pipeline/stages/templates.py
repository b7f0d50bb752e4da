"""Fixed answer templates (docs/spec.md#verdict-expression), in Chinese and English.

Used when the composer is switched off, the executor output is unusable, the composer's JSON is
malformed, or its answer fails the guard. A template only arranges composer_input text under
the fixed headings of pipeline.verdict.answer (which carry no fact), so it can never add a number, a
service or a cause. Its first line answers the question (law 8).
"""

from __future__ import annotations

from pipeline.core.contracts import ComposerInput, ComposerOutput
from pipeline.core.messages import tr
from pipeline.verdict.answer import sections


def _bullets(items: list[str]) -> list[str]:
    return [f"- {item}" for item in items]


def render(composer_input: ComposerInput, language: str) -> ComposerOutput:
    s = sections(composer_input, language)
    lines = [s.lead]
    if s.verdict_note:
        lines.append(s.verdict_note)
    lines += [tr("answer.key_facts", language), *(_bullets(s.key_facts) or [f"- {tr('answer.none_confirmed', language)}"])]
    if s.other_observations:
        lines += [tr("answer.other", language), *_bullets(s.other_observations)]
    if s.possible_causes:
        lines += [tr("answer.possible", language), *_bullets(s.possible_causes)]
    if s.evidence_gaps:
        lines += [tr("answer.gaps", language), *_bullets(s.evidence_gaps)]
    action_lines = [tr("answer.action", language, text=a.action_text, reason=a.reason) if a.reason else a.action_text
                    for a in s.actions]
    if action_lines:
        lines += [tr("answer.next", language), *_bullets(action_lines)]
    return ComposerOutput(answer_summary=s.lead, recommended_actions=s.actions, user_facing_answer="\n".join(lines),
                          key_facts=s.key_facts, other_observations=s.other_observations,
                          possible_causes=s.possible_causes, evidence_gaps=s.evidence_gaps)
