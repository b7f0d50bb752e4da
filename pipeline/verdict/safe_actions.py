"""Next steps that are safe under any verdict: gather more evidence, have a person review.

Shared by the fixed answer templates (pipeline.stages.templates) and the offline composer, which
must not import a stage; they carry no fact, so the composer guard never objects to them.
"""

from __future__ import annotations

from pipeline.core.contracts import ComposerAction
from pipeline.core.messages import tr


def fixed_actions(language: str) -> list[ComposerAction]:
    """Evidence-gathering and manual-review steps, in the question's language (en otherwise)."""
    return [ComposerAction(action_text=tr("action.gather", language), reason=tr("action.gather.reason", language)),
            ComposerAction(action_text=tr("action.review", language), reason=tr("action.review.reason", language))]
