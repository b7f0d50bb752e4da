"""Question scope: what a question asks about, read from its text in code before any stage runs.

Law 8 (docs/architecture.md#pipeline): a PASS must answer the question asked, so the asked services, the symptom
and the time window are fixed here, once, and every stage, prompt, coverage check and the
answer's first sentence work from the same reading. A service counts as asked whether or not
any backend knows it: "billing-service" is asked even when no log mentions it, and the answer
must then say so instead of telling another service's story.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

from pipeline.contracts import QuestionScope, TimeWindow
from pipeline.text import detect_language, normalize
from pipeline.timewindow import parse_time_window, window_phrase

# Question words -> log search words. Keys are matched against the normalised question; the
# keys found are the question's symptom, their expansions what the tools search for.
SYMPTOMS: dict[str, tuple[str, ...]] = {
    "timeout": ("timeout", "timed out", "超时", "err_timeout", "deadline"),
    "time out": ("timeout", "timed out", "超时"),
    "times out": ("timeout", "timed out", "超时"),
    "timing out": ("timeout", "timed out", "超时"),
    "超时": ("timeout", "timed out", "超时", "err_timeout"),
    "slow": ("slow", "latency", "p99", "延迟", "耗时"),
    "latency": ("slow", "latency", "p99", "延迟"),
    "慢": ("slow", "latency", "p99", "延迟", "耗时"),
    "延迟": ("slow", "latency", "p99", "延迟"),
    "5xx": ("500", "502", "503", "5xx", "exception", "error"),
    "500": ("500", "5xx", "exception", "error"),
    "502": ("502", "5xx", "bad gateway", "error"),
    "503": ("503", "5xx", "unavailable", "error"),
    "504": ("504", "5xx", "gateway timeout", "timeout"),
    "error": ("error", "exception", "failed"),
    "错误": ("error", "exception", "failed", "错误", "失败"),
    "报错": ("error", "exception", "failed", "错误"),
    "失败": ("failed", "失败", "error"),
    "fail": ("failed", "error", "失败"),
    "oom": ("outofmemory", "heap", "gc"),
    "内存": ("outofmemory", "heap", "gc", "memory", "内存"),
    "memory": ("outofmemory", "heap", "gc", "memory"),
    "crash": ("outofmemory", "restart", "killed", "exception"),
    "连接": ("connection", "pool", "连接"),
    "connection": ("connection", "pool"),
    "缓存": ("redis", "cache", "evict", "缓存"),
    "cache": ("redis", "cache", "evict"),
    "发布": ("deploy", "version", "rollout", "发布"),
    "deploy": ("deploy", "version", "rollout"),
    "上线": ("deploy", "version", "rollout", "上线"),
}

# A service-like name nobody has to declare: lower-case words joined by "-" or "_" whose last
# part says what kind of component it is ("billing-service", "kafka-consumer", "user_svc",
# "orders-db"). A bare hyphenated word ("read-only", "out-of-memory") is not one.
SERVICE_SUFFIXES = (
    "service", "svc", "api", "gateway", "db", "cache", "worker", "consumer", "producer", "server", "proxy",
    "queue", "job", "scheduler", "broker", "backend", "frontend", "app", "web", "cron", "daemon",
)
_SERVICE_LIKE = re.compile(
    rf"(?<![a-z0-9_.\-/])([a-z][a-z0-9]*(?:[-_][a-z0-9]+)*[-_](?:{'|'.join(SERVICE_SUFFIXES)}))(?![a-z0-9_\-])"
)


def catalogue_mentions(question: str, catalogue: Iterable[str]) -> list[str]:
    """Catalogue services the question names, in full or, for a "-service", by its stem as a
    whole word ("payment API" names payment-service; "user_svc" is its own name)."""
    text = normalize(question)
    found = []
    for service in catalogue:
        short = service.removesuffix("-service")
        if re.search(rf"(?<![a-z0-9_-]){re.escape(service)}(?![a-z0-9_-])", text) or (
                short != service and len(short) > 2 and re.search(rf"(?<![a-z0-9_-]){re.escape(short)}(?![a-z0-9_-])", text)):
            found.append(service)
    return found


def asked_services(question: str, catalogue: Iterable[str] = ()) -> list[str]:
    """Every service the question names: catalogue ones first, then any service-like name."""
    services = catalogue_mentions(question, catalogue)
    for m in _SERVICE_LIKE.finditer(normalize(question)):
        if m.group(1) not in services:
            services.append(m.group(1))
    return services


def symptom_triggers(question: str) -> list[str]:
    text = normalize(question)
    return [trigger for trigger in SYMPTOMS if trigger in text]


def symptom_words(triggers: Iterable[str]) -> list[str]:
    """The log search words of the symptom triggers, first occurrence kept."""
    words: list[str] = []
    for trigger in triggers:
        words.extend(w for w in SYMPTOMS.get(trigger, ()) if w not in words)
    return words


def read_scope(question: str, catalogue: Iterable[str] = (), now: datetime | None = None) -> QuestionScope:
    """The scope of one question. `catalogue` holds the services some backend is known to have
    (a bundled world's services); `now` anchors relative windows ("last 30 minutes")."""
    known = list(catalogue)
    services = asked_services(question, known)
    window = parse_time_window(question, now) if now is not None else None
    return QuestionScope(
        services=services,
        known_services=[s for s in services if s in known],
        symptom=", ".join(symptom_triggers(question)),
        time_window=TimeWindow(start=window[0], end=window[1], text=window_phrase(question)) if window else None,
        language="zh" if detect_language(question) == "zh" else "en",
    )
