"""A claim's pronouns, auxiliaries, the halves of its contractions and its time zone ("its", "they", "didn't", "since
... UTC") are no content a record words: counted as content, they left a faithful claim too little of its own words in
its records. Over a small world of this file's own (the print queue of tests/test_prose_placed.py); a changed time or
figure is still caught, and a link no record states is still no fact."""

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
    "Since 11:12 UTC, print jobs stall.",
    "The queue at 11:10 isn't draining: its SpoolPool-2 has queued=64.",
])
def test_function_words_are_no_content(refused: Any, answer: str) -> None:
    assert refused(answer) == []


@pytest.mark.parametrize("answer", [
    "Since 11:02 UTC, print jobs stall.",
    "The queue at 11:10 isn't draining: its SpoolPool-2 has queued=46.",
    "They stalled at 11:12 because their spooler didn't answer.",
])
def test_a_changed_fact_or_an_unstated_link_is_still_refused(refused: Any, answer: str) -> None:
    assert refused(answer)
