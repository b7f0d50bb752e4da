"""Words the offline engine reasons with: symptom vocabularies and failure signatures.

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
    hypothesis_zh: str
    hypothesis_en: str
    needed_zh: tuple[str, ...]
    needed_en: tuple[str, ...]
    action_zh: str
    action_en: str
    # Per needed item, words that show the evidence already holds it (a jstack line is the
    # thread dump): such an item is never listed as missing. Empty: never already held.
    needed_seen: tuple[tuple[str, ...], ...] = ()


SIGNATURES: tuple[Signature, ...] = (
    Signature(
        "cpu", ("cpu使用率", "cpu usage", "% cpu", "load average"),
        "{service} 的 CPU 饱和可能拖慢了请求处理，从而参与了超时问题。",
        "CPU saturation on {service} may be slowing request handling and contributing to the timeouts.",
        ("{service} 的热点线程栈（jstack）", "接口 P95/P99 延迟与 CPU 曲线的时间对齐"),
        ("a thread dump of {service} (hot threads)", "P95/P99 latency aligned in time with the CPU curve"),
        "抓取 {service} 的线程栈，定位 CPU 热点。",
        "Take a thread dump of {service} to find the CPU hot spot.",
        (("jstack", "thread dump", "hot thread", "线程栈"), ()),
    ),
    Signature(
        "jvm_memory", ("outofmemoryerror", "java heap space", "full gc", "gc pause", "heap"),
        "{service} 的 JVM 堆内存不足与频繁 Full GC 可能是请求失败的原因。",
        "JVM heap exhaustion and frequent full GCs on {service} may explain the failing requests.",
        ("{service} 的堆转储（heap dump）", "GC 日志中的停顿时长分布"),
        ("a heap dump of {service}", "the pause-time distribution in the GC log"),
        "获取 {service} 的 heap dump 并分析大对象。",
        "Capture a heap dump of {service} and look for the dominant objects.",
    ),
    Signature(
        "db_pool", ("hikaripool", "connection is not available", "connection pool", "pool exhausted"),
        "{service} 的数据库连接池耗尽可能导致请求排队超时。",
        "An exhausted database connection pool on {service} may be making requests queue until they time out.",
        ("连接池 active/idle/pending 指标的时间序列", "数据库慢查询日志"),
        ("the pool's active/idle/pending series over time", "the database slow-query log"),
        "查询 {service} 连接池 active/idle/pending 指标与慢查询。",
        "Query the pool's active/idle/pending metrics of {service} and the slow-query log.",
    ),
    Signature(
        "gateway_timeout", ("upstream_timeout", "err_timeout", "upstream timeout"),
        "网关 {service} 的上游超时阈值可能低于实际请求耗时。",
        "The upstream timeout of {service} may be set lower than the real request duration.",
        ("网关上游超时阈值配置", "同一请求在上游服务侧的实际耗时"),
        ("the gateway's upstream timeout setting", "the same request's duration on the upstream side"),
        "核对 {service} 的上游超时配置并与请求耗时比对。",
        "Check the upstream timeout setting of {service} against the request duration.",
    ),
    Signature(
        "redis", ("maxmemory", "evicted", "eviction", "redis"),
        "Redis {service} 内存达到上限与键驱逐可能拖慢了依赖它的服务。",
        "Redis {service} reaching maxmemory and evicting keys may be slowing the services that use it.",
        ("Redis INFO memory 与 evicted_keys 的变化", "{service} 的缓存命中率"),
        ("Redis INFO memory and the evicted_keys trend", "the cache hit ratio of {service}"),
        "检查 Redis 内存、驱逐策略与 {service} 的缓存命中率。",
        "Check Redis memory, the eviction policy and the cache hit ratio of {service}.",
    ),
    Signature(
        "deploy", ("deployed version", "deploy", "rollout", "rolled out", "release", "发布完成", "上线"),
        "{service} 的最近一次发布可能引入了导致 5xx 的缺陷。",
        "The latest deploy of {service} may have introduced the defect behind the 5xx errors.",
        ("发布前后的错误率对比", "发布变更内容（diff）"),
        ("the error rate before and after the deploy", "the change set of the release"),
        "对比 {service} 发布前后的错误率，必要时回滚。",
        "Compare the error rate of {service} before and after the deploy; roll back if it confirms.",
    ),
)

# Phrases that state causation outright inside evidence (rare in logs; "Caused by:" in stacks).
CAUSAL_IN_EVIDENCE: tuple[str, ...] = ("caused by", "due to", "because", "导致", "由于", "原因是")
