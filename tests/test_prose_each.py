"""What each of the happenings the clause before names measured, alone in its clause ("..., 每次大约 2-3 秒", "...,
each taking about 2-3 s"), is a figure of that fact's records and is judged with it: alone it names nothing a record
words, and its range met no record. Over the profile world of tests/test_prose_zh_pairs.py; a range no record falls in
is still caught."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import log_output, refusals
from test_prose_zh_pairs import LOGS

from pipeline.core.config import Settings


@pytest.fixture
def refused(settings: Settings) -> Any:
    return refusals(settings, "个人主页为什么慢？", [("query_logs", log_output(LOGS))])


@pytest.mark.parametrize("answer", [
    "profile-service 的 GET /api/profile 渲染超时，每次大约 2-3 秒。",
    "profile-service timed out rendering GET /api/profile, each taking about 2-3 s.",
])
def test_each_ones_figure_is_judged_with_the_fact_it_measures(refused: Any, answer: str) -> None:
    assert refused(answer) == []


@pytest.mark.parametrize("answer", [
    "profile-service 的 GET /api/profile 渲染超时，每次大约 5-6 秒。",
    "profile-service timed out rendering GET /api/profile, each taking about 5-6 s.",
])
def test_a_range_no_record_falls_in_is_caught(refused: Any, answer: str) -> None:
    assert refused(answer)
