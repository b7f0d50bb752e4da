"""A writer's lead-in before a colon ("Some arithmetic over the spool queue:", "What it isn't, going by the output:"):
a few words, with a comma or a slash, and no figure, name or speaker in them, frame the line and state nothing; they
had been read into its first claim, which then shared too few of its words with its records. Over the print queue of
tests/test_prose_placed.py; a changed figure after the lead-in, or a link it states, is still refused."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import log_output, refusals
from test_prose_placed import LOGS

from pipeline.core.config import Settings


@pytest.fixture
def refused(settings: Settings) -> Any:
    return refusals(settings, "Why do print jobs stall?", [("query_logs", log_output(LOGS))])


@pytest.mark.parametrize("answer", [
    "Some arithmetic over the spool queue: SpoolPool-2 went from queued=14 at 11:07 to queued=64 at 11:10.",
    "What it isn't, going by the output: the spooler restart at 11:30 kept the queue.",
])
def test_a_lead_in_before_a_colon_states_nothing(refused: Any, answer: str) -> None:
    assert refused(answer) == []


@pytest.mark.parametrize("answer", [
    "Some arithmetic over the spool queue: SpoolPool-2 went from queued=14 at 11:07 to queued=46 at 11:10.",
    "Some arithmetic over the spool queue: print-service stalled because SpoolPool-2 was full.",
])
def test_what_follows_the_lead_in_is_still_judged(refused: Any, answer: str) -> None:
    assert refused(answer)
