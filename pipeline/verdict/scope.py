"""Question scope: what a question asks about, read from its text in code before any stage runs.

Law 8 (docs/architecture.md#pipeline): a PASS must answer the question asked, so the asked services, the
symptoms asked of each, the question's form and the time window are fixed here, once, and every
stage, prompt, coverage check and the answer's first sentence work from the same reading. A
service counts as asked whether or not any backend knows it: "billing-service" is asked even
when no log mentions it, and the answer must then say so instead of telling another service's story.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from pipeline.core.contracts import QuestionForm, QuestionScope, TimeWindow
from pipeline.text.primitives import CJK_CHAR, detect_language, normalize
from pipeline.text.timewindow import parse_time_window, window_phrase


@dataclass(frozen=True)
class Symptom:
    """One thing a user asks about a service, in their own words, and how evidence shows it.

    `asked`: phrases of a question that ask about it (a Latin phrase matches as a word, with a
    short inflection: "leak" matches "leaking"; a Chinese one anywhere). `evidence`: words that
    make a log line, alert, metric or claim about it. `search`: what the tools search for.
    `metric`: a regular expression over metric names that measure it. `cause_only`: a suspected
    cause the tools search for ("deploy"), never a symptom that coverage must see answered.
    """

    id: str
    asked: tuple[str, ...]
    evidence: tuple[str, ...]
    search: tuple[str, ...]
    metric: str = ""
    cause_only: bool = False


SYMPTOM_TABLE: tuple[Symptom, ...] = (
    Symptom("latency",
            ("slow", "latency", "p99", "p95", "response time", "takes forever", "sluggish", "慢", "延迟", "耗时", "卡顿",
             "转圈", "时快时慢"),
            ("latency", "slow", "took", "p99", "p95", "response time", "duration", "timeout", "timed out", "延迟", "耗时",
             "超时", "慢"),
            ("slow", "latency", "p99", "took", "延迟", "耗时"), r"p9[059]|latency|duration"),
    Symptom("timeout",
            ("timeout", "time out", "times out", "timing out", "timed out", "超时", "err_timeout", "deadline exceeded"),
            ("timeout", "timed out", "超时", "deadline", "504"),
            ("timeout", "timed out", "超时", "err_timeout", "deadline"), r"timeout"),
    Symptom("errors",
            ("error", "errors", "erroring", "5xx", "500", "502", "503", "fail", "exception", "报错", "错误", "失败", "异常",
             "出错"),
            ("error", "exception", "failed", "failure", "5xx", "500", "502", "503", "错误", "失败", "异常", "报错"),
            ("error", "exception", "failed", "500", "5xx", "错误", "失败"), r"5xx|error"),
    Symptom("cpu",
            ("cpu", "load average", "负载", "cpu使用率"),
            ("cpu", "load average", "hot thread", "负载"),
            ("cpu", "load average", "jstack"), r"cpu"),
    Symptom("memory",
            ("memory", "oom", "leak", "heap", "out of memory", "outofmemory", "内存", "泄漏", "泄露", "堆内存"),
            ("memory", "heap", "outofmemory", "oom", "gc", "内存", "堆"),
            ("outofmemory", "heap", "gc", "memory", "内存"), r"heap|memory|mem_"),
    Symptom("disk",
            ("disk", "no space", "inode", "磁盘", "硬盘"),
            ("disk", "no space left", "inode", "filesystem", "磁盘"),
            ("disk", "no space", "inode", "磁盘"), r"disk|filesystem"),
    Symptom("restarts",
            ("restart", "crash", "crashloop", "oomkilled", "killed", "重启", "崩溃", "挂了", "宕机"),
            ("restart", "crash", "killed", "exited", "oomkilled", "重启", "崩溃"),
            ("restart", "killed", "crash", "重启"), r"restart"),
    Symptom("connection_pool",
            ("connection pool", "pool", "connections", "connection", "连接池", "连接"),
            ("connection", "pool", "hikari", "连接"),
            ("connection", "pool", "连接"), r"connection|pool"),
    Symptom("queue_lag",
            ("lag", "backlog", "queue", "积压", "堆积", "消费延迟"),
            ("lag", "backlog", "queue", "queued", "consumer", "积压"),
            ("lag", "backlog", "queue", "积压"), r"lag|queue"),
    Symptom("cache",
            ("cache", "redis", "evict", "缓存"),
            ("cache", "redis", "evict", "maxmemory", "缓存"),
            ("redis", "cache", "evict", "缓存"), r"redis|cache"),
    Symptom("deploy", ("deploy", "rollout", "release", "发布", "上线"), (),
            ("deploy", "version", "rollout", "发布", "上线"), cause_only=True),
)
SYMPTOMS: dict[str, Symptom] = {s.id: s for s in SYMPTOM_TABLE}
# The pair asked when a service is named without a symptom: anything wrong with it.
ANY = "any"

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



def _pattern(phrases: Iterable[str], inflected: bool, compounds: bool = False) -> re.Pattern[str]:
    """One regex for a phrase list: Chinese anywhere; Latin as a word (with a short inflection
    when `inflected`: "leak" finds "leaking", "500" finds "500s"); a number never inside a longer one.
    With `compounds`, a Latin phrase of five letters or more may end a longer word, as log text
    glues them ("SQLTransientConnectionException", "OutOfMemoryError")."""
    parts = []
    for phrase in sorted(set(phrases), key=len, reverse=True):
        body = re.escape(normalize(phrase))
        if CJK_CHAR.search(phrase):
            parts.append(body)
        elif phrase[-1].isdigit():
            parts.append(rf"(?<![a-z0-9.]){body}{'s?' if inflected else ''}(?![a-z0-9])")
        else:
            start = "" if compounds and len(phrase) >= 5 else r"(?<![a-z0-9])"
            parts.append(rf"{start}{body}{'[a-z]{0,4}' if inflected else ''}(?![a-z0-9])")
    return re.compile("|".join(parts) or r"(?!)")


_ASKED = {s.id: _pattern(s.asked, True) for s in SYMPTOM_TABLE}
_EVIDENCE = {s.id: _pattern(s.evidence, True, compounds=True) for s in SYMPTOM_TABLE}
_METRIC = {s.id: re.compile(s.metric) for s in SYMPTOM_TABLE if s.metric}
# Where one part of a question ends and the next, possibly about another service, begins.
_CLAUSES = re.compile(r"[,，;；。?？!！]|\s(?:and|but|while|whereas|also)\s|以及|并且|而且|同时|还有|但是|但")
_YES_NO_EN = re.compile(
    r"^(?:is|are|was|were|does|do|did|has|have|had|can|could|should|will|would|any|anything)\b")
_YES_NO_ZH = re.compile(r"[吗么嘛][?？。!！\s]*$|是不是|有没有|是否|会不会|有无|是否有")
_WHY = re.compile(r"\b(?:why|how come|what caused|what causes|root cause|cause of|what's wrong|what is wrong)\b"
                  r"|为什么|为何|原因|怎么回事|怎么了|排查|什么问题")


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


def asked_symptoms(text: str) -> list[str]:
    """The symptom ids a piece of a question asks about, in table order (suspected causes included)."""
    norm = normalize(text)
    return [sid for sid, pattern in _ASKED.items() if pattern.search(norm)]


def mentions_symptom(text: str, symptom: str) -> bool:
    """Whether a log line, alert, claim or metric description is about `symptom` (ANY: always)."""
    if symptom == ANY:
        return True
    pattern = _EVIDENCE.get(symptom)
    return bool(pattern and pattern.search(normalize(text)))


def metric_symptoms(name: str) -> list[str]:
    """The symptoms a metric measures, from its name ("jvm_heap_used_percent" -> memory)."""
    return [sid for sid, pattern in _METRIC.items() if pattern.search(name.lower())]


def symptom_words(symptoms: Iterable[str]) -> list[str]:
    """The search words of the symptoms, first occurrence kept."""
    words: list[str] = []
    for sid in symptoms:
        entry = SYMPTOMS.get(sid.strip())
        words.extend(w for w in (entry.search if entry else ()) if w not in words)
    return words


def question_form(question: str) -> QuestionForm:
    """yes_no ("Is X leaking memory?", "X 是不是内存泄漏？"), why ("why ...", "什么原因"), else what."""
    norm = normalize(question)
    if _YES_NO_EN.search(norm) or _YES_NO_ZH.search(norm):
        return "yes_no"
    return "why" if _WHY.search(norm) else "what"


def _unnamed(text: str, services: Iterable[str]) -> str:
    """The text without the service names in it: "redis-cart" names a service, not a cache problem."""
    norm = normalize(text)
    for service in services:
        norm = norm.replace(normalize(service), " ")
    return norm


def service_symptoms(question: str, services: list[str], catalogue: Iterable[str] = ()) -> dict[str, list[str]]:
    """The symptoms asked of each service ("" when the question names no service).

    A symptom in the same part of the question as a service belongs to it ("is order-service
    slow and is payment-service returning 5xx?"); a symptom in a part naming no service, and
    every symptom for a service asked nothing of its own, belongs to all of them. A service
    asked nothing at all gets ANY: is anything wrong with it. Suspected causes are left out.
    """
    known = list(catalogue)
    own: dict[str, list[str]] = {s: [] for s in services}
    shared: list[str] = []
    for clause in _CLAUSES.split(normalize(question)):
        named = [s for s in asked_services(clause, known) if s in own]
        found = [sid for sid in asked_symptoms(_unnamed(clause, services)) if not SYMPTOMS[sid].cause_only]
        for sid in found:
            for target in (own[s] for s in named) if named else [shared]:
                if sid not in target:
                    target.append(sid)
    every = list(dict.fromkeys([*shared, *(sid for found in own.values() for sid in found)]))
    if not services:
        return {"": every} if every else {}
    out = {}
    for service in services:
        mine = list(dict.fromkeys([*own[service], *shared])) if own[service] else every
        out[service] = [sid for sid in SYMPTOMS if sid in mine] or [ANY]
    return out


def read_scope(question: str, catalogue: Iterable[str] = (), now: datetime | None = None) -> QuestionScope:
    """The scope of one question. `catalogue` holds the services some backend is known to have
    (a bundled world's services); `now` anchors relative windows ("last 30 minutes")."""
    known = list(catalogue)
    services = asked_services(question, known)
    window = parse_time_window(question, now) if now is not None else None
    return QuestionScope(
        services=services,
        known_services=[s for s in services if s in known],
        symptom=", ".join(asked_symptoms(_unnamed(question, services))),
        symptoms=service_symptoms(question, services, known),
        form=question_form(question),
        time_window=TimeWindow(start=window[0], end=window[1], text=window_phrase(question)) if window else None,
        language="zh" if detect_language(question) == "zh" else "en",
    )


def asked_pairs(scope: QuestionScope) -> list[tuple[str, str]]:
    """Every asked (service, symptom) pair, in the scope's order. A scope stored before symptoms
    were read per service asks ANY of each service."""
    if scope.symptoms:
        return [(service, sid) for service, sids in scope.symptoms.items() for sid in sids]
    return [(service, ANY) for service in scope.services]
