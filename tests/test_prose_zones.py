"""A time written in the writer's zone with its offset ("2026-03-09T16:04:40+08:00") is the record's UTC
time: kept when it converts to a record's, caught when it does not. Its own small world."""

from __future__ import annotations

from helpers import log_output, refusals

from pipeline.core.config import Settings
from pipeline.text.primitives import in_utc

LOGS = [("2026-03-09T08:04:40Z", "ledger-service", "ERROR", "POST /api/ledger/post 504 after 8000ms", "ledger-2c4f-1"),
        ("2026-03-09T23:58:10Z", "ledger-service", "WARN", "posting queue depth 4200 exceeds 1000", "ledger-2c4f-1")]


def test_an_offset_timestamp_is_written_in_utc() -> None:
    assert in_utc("at 2026-03-09T16:04:40+08:00 and 2026-03-10T07:58+08:00") == \
        "at 2026-03-09T08:04:40Z and 2026-03-09T23:58Z"
    assert in_utc("no zone: 16:04, order 2026-03-09") == "no zone: 16:04, order 2026-03-09"


def test_a_local_time_with_its_offset_is_held_to_the_records_utc_time(settings: Settings) -> None:
    refused = refusals(settings, "Why do ledger posts fail?", [("query_logs", log_output(LOGS))])
    assert refused("At 2026-03-09T16:04:40+08:00 ledger-service logged POST /api/ledger/post 504 after 8000ms.") == []
    assert refused("At 2026-03-09T17:04:40+08:00 ledger-service logged POST /api/ledger/post 504 after 8000ms.")
