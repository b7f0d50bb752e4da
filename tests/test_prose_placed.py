"""A clause that only places the fact before it — when it ended, on which of a workload's pods, when it came back
in a guess's basis — is judged with that fact: judged alone it names nothing a record words. Over a small world
of this file's own (a print queue whose spooler stalls); the same sentences with a time or a figure changed are
still caught."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import log_output, refusals

from pipeline.core.config import Settings

_STATS = "SpoolPool-2 stats (total=20, busy={}, free={}, queued={})"
_STALL = "print job stalled: spooler did not answer within 4000ms"
LOGS = [
    ("2026-06-03T11:05:00Z", "print-service", "WARN", _STATS.format(12, 8, 0), "prt-3c7d-1"),
    ("2026-06-03T11:07:00Z", "print-service", "WARN", _STATS.format(20, 0, 14), "prt-3c7d-1"),
    ("2026-06-03T11:10:00Z", "print-service", "WARN", _STATS.format(20, 0, 64), "prt-3c7d-1"),
    ("2026-06-03T11:40:00Z", "print-service", "WARN", _STATS.format(20, 0, 64), "prt-3c7d-1"),
    ("2026-06-03T11:12:10Z", "print-service", "ERROR", _STALL, "prt-3c7d-1"),
    ("2026-06-03T11:13:20Z", "print-service", "ERROR", _STALL, "prt-3c7d-2"),
    ("2026-06-03T11:14:30Z", "print-service", "ERROR", _STALL, "prt-3c7d-3"),
    ("2026-06-03T11:30:00Z", "print-service", "WARN", "spooler restarted by watchdog, queue kept", "prt-3c7d-1"),
    ("2026-06-03T11:51:40Z", "print-service", "WARN", "SpoolPool-2 full again: busy=20, queued=31", "prt-3c7d-1"),
]


@pytest.fixture
def refused(settings: Settings) -> Any:
    return refusals(settings, "打印为什么卡住？", [("query_logs", log_output(LOGS))])


@pytest.mark.parametrize("answer", [
    # where the span of the fact before it ends, with a word of how it held
    "prt-3c7d-1 的 SpoolPool-2：11:10 起 queued 一直是 64，到 11:40 都没降。",
    "On prt-3c7d-1, SpoolPool-2 sat at queued=64 from 11:10, until 11:40 without a break.",
    # all of a workload's pods, named with the workload before its kind
    "print-service 报 `print job stalled: spooler did not answer within 4000ms`，三台 prt pod 都有，第一条 11:12:10。",
    # a guess's basis, its date a clause of its own
    "About twenty minutes later, at 11:51:40, SpoolPool-2 was full again, so the watchdog restart probably did not help.",
])
def test_a_clause_placing_the_fact_before_it_is_judged_with_it(refused: Any, answer: str) -> None:
    assert refused(answer) == []


@pytest.mark.parametrize("answer", [
    "prt-3c7d-1 的 SpoolPool-2：11:10 起 queued 一直是 64，到 11:45 都没降。",
    "On prt-3c7d-1, SpoolPool-2 sat at queued=46 from 11:10, until 11:40 without a break.",
    "print-service 报 `print job stalled: spooler did not answer within 4000ms`，三台 prt pod 都有，第一条 11:02:10。",
    "About twenty minutes later, at 11:53:40, SpoolPool-2 was full again, so the watchdog restart probably did not help.",
])
def test_the_placed_fact_changed_is_still_caught(refused: Any, answer: str) -> None:
    assert refused(answer)
