"""Failure signatures the offline engine reasons with, and the words that make a log line worth a digest.

Besides the symptom vocabulary (pipeline.verdict.scope.SYMPTOMS, shared with the scope reader), this
is the rule-based engine's only domain knowledge. A signature says which evidence words
point at a failure mode; the engine turns a match into a hypothesis, never into a fact.
"""

from __future__ import annotations

from dataclasses import dataclass

# Words that make a log line worth a digest even when the question did not name them.
ERROR_WORDS: tuple[str, ...] = (
    "error", "exception", "timeout", "timed out", "failed", "refused", "unavailable", "超时", "失败",
    "错误", "异常", "outofmemory", "evict", "maxmemory", "full gc", "5xx", "not available", "rejected",
)


@dataclass(frozen=True)
class Signature:
    category: str
    evidence_words: tuple[str, ...]
    # How many kinds of evidence would confirm it; the hypothesis, each needed item and the action
    # are catalogue text (offline.signature.<category>.hypothesis, .needed.<i>, .action).
    needed: int
    # Per needed item, words that show the evidence already holds it (a jstack line is the
    # thread dump): such an item is never listed as missing. Empty: never already held.
    needed_seen: tuple[tuple[str, ...], ...] = ()
    # The kind of component its hypothesis is about ("Redis {service} reaching maxmemory"), when
    # not the service that logged the line: {service} is then a component of that kind named by
    # the evidence, and with none named there is no hypothesis ("user-service: redis command slow"
    # says nothing of which Redis, and user-service is not one).
    component: str = ""


SIGNATURES: tuple[Signature, ...] = (
    Signature("cpu", ("cpu使用率", "cpu usage", "% cpu", "load average"), needed=2, needed_seen=(("jstack", "thread dump", "hot thread", "线程栈"), ())),
    Signature("jvm_memory", ("outofmemoryerror", "java heap space", "full gc", "gc pause", "heap"), needed=2),
    Signature("db_pool", ("hikaripool", "connection is not available", "connection pool", "pool exhausted"), needed=2),
    Signature("gateway_timeout", ("upstream_timeout", "err_timeout", "upstream timeout"), needed=2),
    Signature("redis", ("maxmemory", "evicted", "eviction", "redis"), needed=2, component="redis"),
    Signature("deploy", ("deployed version", "deploy", "rollout", "rolled out", "release", "发布完成", "上线"), needed=2),
)
