"""Chinese words a record writes in English, and how much later each of a pair came said the Chinese way: "淘汰" is
the record's "evicting", "回退到默认" its "falling back to default"; "每次晚 1–2 秒" dates each of a kind from the one the
clause before names, an interval reckoned between their records, no figure any one record holds. Over a small world
of this file's own (a profile service over a cache and an upstream); a changed time or interval is still caught."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import log_output, refusals

from pipeline.core.config import Settings

LOGS = [
    ("2026-07-09T18:05:00Z", "kv-profile", "WARN", "memory at limit (maxmemory=2gb, policy=volatile-lru), evicting keys",
     "kv-profile-1"),
    ("2026-07-09T18:35:00Z", "kv-profile", "WARN", "memory at limit (maxmemory=2gb, policy=volatile-lru), evicting keys",
     "kv-profile-1"),
    ("2026-07-09T18:12:00Z", "profile-service", "ERROR",
     "failed to load cover image from bucket: timeout 600ms, falling back to default", "prof-4a1b-2"),
    ("2026-07-09T18:20:00.100Z", "profile-service", "ERROR", "render timeout after 2500ms: GET /api/profile uid=881",
     "prof-4a1b-1"),
    ("2026-07-09T18:20:01.400Z", "edge-gateway", "ERROR", "upstream profile-service 504 on GET /api/profile after 2501ms uid=881",
     "edge-2f3c-1"),
    ("2026-07-09T18:40:00.200Z", "profile-service", "ERROR", "render timeout after 2500ms: GET /api/profile uid=902",
     "prof-4a1b-3"),
    ("2026-07-09T18:40:01.900Z", "edge-gateway", "ERROR", "upstream profile-service 504 on GET /api/profile after 2501ms uid=902",
     "edge-2f3c-1"),
]


@pytest.fixture
def refused(settings: Settings) -> Any:
    return refusals(settings, "个人主页为什么慢？", [("query_logs", log_output(LOGS))])


@pytest.mark.parametrize("answer", [
    "kv-profile-1 内存打满（maxmemory=2gb），18:05 起持续淘汰键。",
    "profile-service 18:12 加载封面超时，已回退到默认。",
    "edge-gateway 对 GET /api/profile 报了 2 次 504（after 2501ms），和 profile-service 的 render timeout 一一对上，每次晚 1–2 秒。",
])
def test_a_chinese_reading_of_the_records_words_is_kept(refused: Any, answer: str) -> None:
    assert refused(answer) == []


@pytest.mark.parametrize("answer", [
    "kv-profile-1 内存打满（maxmemory=2gb），18:15 起持续淘汰键。",
    "profile-service 18:22 加载封面超时，已回退到默认。",
    "edge-gateway 对 GET /api/profile 报了 2 次 504（after 2501ms），和 profile-service 的 render timeout 一一对上，每次晚 5–8 秒。",
])
def test_the_same_with_a_time_or_interval_changed_is_caught(refused: Any, answer: str) -> None:
    assert refused(answer)
