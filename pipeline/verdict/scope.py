"""Question scope: what a question asks about, read from its text in code before any stage runs.

Law 8 (docs/architecture.md#pipeline): a PASS must answer the question asked, so the asked services, the
symptoms asked of each, the question's form and the time window are fixed here, once, and every
stage, prompt, coverage check and the answer's first sentence work from the same reading. A
service counts as asked whether or not any backend knows it: "billing-service" is asked even
when no log mentions it, and the answer must then say so instead of telling another service's story.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pipeline.core.contracts import EvidenceTime, QuestionForm, QuestionScope, TimeWindow
from pipeline.text.lexicon import (
    ASKING_ZH,
    DENYING_ZH,
    FINE,
    FINE_BY_NEGATION,
    HAPPENING,
    JOB,
    NEGATION,
    RECOVERED,
    WITHIN_BOUNDS,
    patterns,
)
from pipeline.text.primitives import (
    CJK_CHAR,
    CJK_IDEOGRAPHS,
    CJK_RUN,
    SCALED,
    SCALES,
    SENTENCE_BREAK,
    SYNONYMS,
    clock_times,
    detect_language,
    extract_entities,
    find_entities,
    keywords,
    normalize,
    synonyms,
)
from pipeline.text.timewindow import clock_without_date, parse_time_window, window_phrase
from pipeline.verdict.proposition import NICKNAME, SERVICE_SUFFIXES, nicknamed, read_proposition


@dataclass(frozen=True)
class Symptom:
    """One thing a user asks about a service, in their own words, and how evidence shows it.

    `asked`: phrases of a question that ask about it (a Latin phrase matches as a word, with a
    short inflection: "leak" matches "leaking"; a Chinese one anywhere). `phrasing`: a regular
    expression over the normalised question for what a phrase list cannot hold: a negation or a
    word order ("can't log in", "messages are being dropped", "jobs seem stuck"). `evidence`:
    words that make a log line, alert, metric or claim about it; a word that also names the
    healthy case ("TLS handshake completed", "connection") is left out. `search`: what the tools
    search for. `metric`: a regular expression over metric names that measure it. `cause_only`: a
    suspected cause the tools search for ("deploy"), never a symptom that coverage must see answered.
    `narrows`: the general symptoms its phrases contain ("登录失败" holds 失败, "errors"): asked
    together in one part of a question, the general one is this one and is not asked apart.
    `products`: phrases of `asked` that name a product a component runs on ("redis"): named as
    the writer of the logs asked of ("what do the Redis logs show?"), it says where the records
    come from, not that the symptom is asked.
    """

    id: str
    asked: tuple[str, ...]
    evidence: tuple[str, ...]
    search: tuple[str, ...]
    metric: str = ""
    cause_only: bool = False
    phrasing: str = ""
    narrows: tuple[str, ...] = ()
    products: tuple[str, ...] = ()


# Pieces of `phrasing`: a negated ability ("can't", "cannot", "unable to", "fails to") and a
# linking verb run ("are being", "seem to be", "keep") between a subject and its state.
_CANT = r"(?:can[’']?t|cannot|can not|couldn[’']?t|could not|unable to|not able to|fail(?:s|ed|ing)? to|won[’']?t)"
_BE = r"(?:(?:are|is|were|was|be|been|being|get|gets|got|getting|go|goes|went|seem|seems|keep|keeps|still|all|just|to)\s+)*"

SYMPTOM_TABLE: tuple[Symptom, ...] = (
    Symptom("latency",
            ("slow", "latency", "p99", "p95", "response time", "takes forever", "takes ages", "takes too long",
             "load forever", "loads forever", "loading forever", "spinning", "spins forever", "spin forever", "sluggish",
             "crawling",
             "慢", "延迟", "耗时", "卡顿", "很卡", "好卡", "特别卡", "转圈", "时快时慢", "一直加载", "加载不出来"),
            ("latency", "slow", "took", "p99", "p95", "response time", "duration", "timeout", "timed out", "延迟", "耗时",
             "超时", "慢"),
            ("slow", "latency", "p99", "took", "延迟", "耗时"), r"p9[059]|latency|duration",
            phrasing=rf"(?:pages?|site|app|screen|requests?|calls?) {_BE}(?:hang(?:s|ing)?|stuck loading|never load\w*)"),
    Symptom("timeout",
            ("timeout", "time out", "times out", "timing out", "timed out", "504", "gateway timeout", "deadline exceeded",
             "err_timeout", "not responding", "unresponsive", "no response",
             "超时", "打不开", "无响应", "没响应", "没有响应", "加载不出来"),
            ("timeout", "timed out", "超时", "deadline", "504"),
            ("timeout", "timed out", "超时", "err_timeout", "deadline"), r"timeout"),
    Symptom("errors",
            ("error", "errors", "erroring", "5xx", "500", "502", "503", "500s", "502s", "503s", "500ing", "502ing", "503ing",
             "fail", "exception", "broken", "not working",
             "doesn't work", "isn't working", "outage", "unavailable", "connection refused",
             "报错", "错误", "失败", "异常", "出错", "打不开", "用不了", "不能用", "不可用", "出问题", "连不上"),
            ("error", "exception", "failed", "failure", "5xx", "500", "502", "503", "refused", "unavailable",
             "错误", "失败", "异常", "报错"),
            ("error", "exception", "failed", "500", "5xx", "错误", "失败"), r"5xx|error",
            phrasing=rf"{_CANT} (?:connect|reach|open|access)\b"),
    Symptom("cpu",
            ("cpu", "load average", "high load", "pegged", "负载", "cpu使用率"),
            ("cpu", "load average", "hot thread", "负载"),
            ("cpu", "load average", "jstack"), r"cpu"),
    Symptom("memory",
            ("memory", "oom", "leak", "heap", "out of memory", "outofmemory", "gc", "full gc", "gc pause",
             "内存", "泄漏", "泄露", "堆内存", "内存溢出"),
            ("memory", "heap", "outofmemory", "oom", "gc", "内存", "堆"),
            ("outofmemory", "heap", "gc", "memory", "内存"), r"heap|memory|mem_"),
    Symptom("disk",
            ("disk", "no space", "out of space", "inode", "volume full", "磁盘", "硬盘", "空间不足", "存储满"),
            ("disk", "no space left", "inode", "filesystem", "磁盘"),
            ("disk", "no space", "inode", "磁盘"), r"disk|filesystem"),
    Symptom("restarts",
            ("restart", "crash", "crashloop", "crashloopbackoff", "oomkilled", "killed", "reboot", "bouncing", "flapping",
             "重启", "崩溃", "挂了", "宕机", "起不来", "拉不起来", "启动失败", "被杀", "被kill"),
            ("restart", "crash", "killed", "exited", "exiting", "exit code", "oomkilled", "crashloopbackoff", "sigkill",
             "重启", "崩溃", "退出"),
            ("restart", "killed", "crash", "exit", "重启"), r"restart",
            phrasing=r"keeps? (?:going down|dying|falling over)"),
    Symptom("connection_pool",
            # Not "connection" alone: "connection refused", "TLS connection" and "Aborted connection"
            # are not pool exhaustion, and nearly every service logs the word.
            ("connection pool", "connections", "pool exhausted", "db pool", "database pool", "hikari",
             "连接池", "连接数", "连接耗尽", "连接不够", "连接用完"),
            ("connection pool", "hikari", "pool exhausted", "pool stats", "connection is not available",
             "too many connections", "connections", "连接池", "连接数"),
            ("connection", "pool", "连接"), r"connection|pool"),
    Symptom("queue_lag",
            ("lag", "backlog", "queue", "consumer lag", "backed up", "积压", "堆积", "消费延迟", "消费慢", "消费不过来"),
            ("lag", "backlog", "queue", "queued", "consumer", "积压"),
            ("lag", "backlog", "queue", "积压"), r"lag|queue"),
    # A replica behind its source: a lag of its own, not the latency of requests or a queue's.
    Symptom("replica_lag",
            ("replica lag", "replication lag", "replica delay", "replication delay", "slave lag", "seconds behind",
             "从库延迟", "主从延迟", "复制延迟", "同步延迟", "从库落后"),
            ("seconds_behind", "replica lag", "replication lag", "slave lag", "从库延迟", "主从延迟", "复制延迟"),
            ("seconds_behind", "replica", "replication", "从库"), r"replica|replication|seconds_behind|slave",
            narrows=("latency", "queue_lag")),
    Symptom("cache",
            ("cache", "redis", "evict", "缓存"),
            ("cache", "redis", "evict", "maxmemory", "缓存"),
            ("redis", "cache", "evict", "缓存"), r"redis|cache", products=("redis",)),
    Symptom("auth",
            ("login failure", "login error", "auth failure", "auth error", "authentication", "unauthorized",
             "unauthorised", "forbidden", "401", "403", "access denied", "permission denied", "invalid token",
             "token expired", "session expired", "logged out",
             "登不上", "登不进", "登录不了", "登陆不了", "登录不上", "登陆不上", "登录失败", "登陆失败", "无法登录", "无法登陆",
             "登录报错", "登录异常", "登录过期", "登录态失效", "认证失败", "鉴权失败", "未授权", "没有权限", "无权限",
             "token过期", "令牌过期", "被踢"),
            ("login failed", "authentication failed", "auth failed", "unauthorized", "unauthorised", "forbidden", "401",
             "403", "invalid token", "token expired", "access denied", "permission denied", "invalid credentials",
             "bad credentials", "登录失败", "认证失败", "鉴权失败", "未授权", "无权限"),
            ("login", "auth", "unauthorized", "forbidden", "denied", "登录", "认证", "鉴权"), r"auth|login",
            phrasing=rf"{_CANT} (?:log ?in|sign ?in|authenticate)|(?:log ?in|sign ?in|auth) {_BE}"
                     r"(?:fail\w*|broken|rejected|denied|not working)", narrows=("errors",)),
    Symptom("tls",
            ("certificate", "cert", "certs", "ssl", "tls", "x509", "x.509", "handshake", "https error",
             "证书", "握手"),
            # Not "tls" or "handshake" alone: every healthy connection logs "TLS handshake completed".
            ("certificate", "cert expired", "x509", "x.509", "ssl", "pkix", "handshake failed", "handshake failure",
             "handshake_failure", "handshakeexception", "handshake error", "证书", "握手失败"),
            ("certificate", "x509", "ssl", "handshake", "证书"), r"cert|ssl|tls", narrows=("errors",)),
    Symptom("dns",
            ("dns", "nxdomain", "servfail", "unknownhost", "unknownhostexception", "unknown host", "name resolution",
             "resolving",
             "域名解析", "解析域名", "域名无法解析", "域名不通"),
            ("dns", "nxdomain", "servfail", "unknownhost", "unknownhostexception", "unknown host", "no such host",
             "name or service not known", "name resolution", "could not resolve", "failed to resolve",
             "unable to resolve", "cannot resolve", "域名解析"),
            ("dns", "resolve", "unknownhost", "nxdomain", "解析"), r"dns",
            phrasing=rf"{_CANT} resolve", narrows=("errors",)),
    Symptom("message_loss",
            ("message loss", "data loss", "dead letter", "dlq",
             "丢消息", "丢了消息", "消息丢", "丢失消息", "消息没收到", "收不到消息", "没收到消息", "消息发不出", "消息发送失败",
             "收不到推送", "推送没收到", "收不到通知", "没收到通知", "通知没收到", "丢数据", "数据丢失", "消息不见"),
            # Not "send failed": a producer retries ("send failed ..., retry succeeded") and loses nothing.
            ("dropped", "dropping", "message lost", "messages lost", "lost message", "discarded", "dead letter", "dlq",
             "delivery failed", "failed to deliver", "not delivered",
             "丢弃", "丢失", "发送失败", "投递失败"),
            ("dropped", "lost", "send failed", "discard", "dead letter", "dlq", "丢失", "丢弃", "发送失败"),
            r"drop|lost|dlq|dead_letter|discard",
            phrasing=r"(?:drop|los[et]|losing|miss|discard)\w* (?:\w+ )?(?:messages?|events?|notifications?)"
                     rf"|(?:messages?|events?|notifications?) {_BE}(?:dropped|lost|missing|discarded|not delivered"
                     r"|undelivered|never (?:arrive|delivered))"
                     r"|(?:never|don[’']?t|didn[’']?t|not) (?:get|got|receive|received) (?:any |the )?"
                     r"(?:messages|notifications|events)", narrows=("errors",)),
    Symptom("stuck_jobs",
            ("stuck job", "stuck jobs", "stuck task", "stuck tasks", "stuck in pending", "stuck in queued",
             "任务卡", "作业卡", "job卡", "跑批卡", "任务没跑", "任务不跑", "任务没有跑", "任务没执行", "任务不执行",
             "任务没有执行", "任务没触发", "任务不动", "任务挂起", "任务阻塞", "任务一直不结束", "任务一直在跑"),
            ("stuck", "hung", "hang", "stalled", "still running", "no progress", "lock not acquired", "deadlock",
             "blocked", "卡住", "阻塞", "未执行", "死锁", "锁等待"),
            ("job", "stuck", "lock", "task", "任务", "卡住"), r"job|task|cron|stuck",
            phrasing=rf"(?:jobs?|tasks?|cron ?jobs?|crons?|batch(?:es)?|workers?|migrations?) (?:\w+ )?{_BE}"
                     r"(?:stuck|hung|hang(?:s|ing)?|frozen|stalled|stalling|blocked|not (?:running|progressing|finishing"
                     r"|starting|completing|firing)|never (?:finish|complet|start|run)\w*|didn[’']?t run|did not run"
                     r"|won[’']?t (?:run|start|finish))", narrows=("errors",)),
    Symptom("deploy", ("deploy", "rollout", "release", "发布", "上线"), (),
            ("deploy", "version", "rollout", "发布", "上线"), cause_only=True),
)
SYMPTOMS: dict[str, Symptom] = {s.id: s for s in SYMPTOM_TABLE}
# Symptoms that are events, not states: a warning about one says it happened ("cold cache after
# restart", "container will be restarted"), with or without a failure word.
EVENT_SYMPTOMS = frozenset({"restarts"})
# The pair asked when a service is named without a symptom: anything wrong with it.
ANY = "any"

# A service-like name nobody has to declare: lower-case words joined by "-" or "_" whose last
# part says what kind of component it is ("billing-service", "kafka-consumer", "user_svc",
# "orders-db"). A bare hyphenated word ("read-only", "out-of-memory") is not one.
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
_PHRASING = {s.id: re.compile(s.phrasing) for s in SYMPTOM_TABLE if s.phrasing}
_EVIDENCE = {s.id: _pattern(s.evidence, True, compounds=True) for s in SYMPTOM_TABLE}
_METRIC = {s.id: re.compile(s.metric) for s in SYMPTOM_TABLE if s.metric}
# A product named as whose logs are asked ("the redis logs", "redis's log file", "logs from redis",
# "redis 日志"): the source of the records. Its symptom is asked only by other words ("evictions
# in the redis logs").
_PRODUCT = "|".join(re.escape(p) for s in SYMPTOM_TABLE for p in s.products) or r"(?!)"
_LOGS_OF_PRODUCT = re.compile(rf"(?<![a-z0-9_./-])(?:{_PRODUCT})(?:'s)?\s*(?:server\s+)?"
                              rf"(?:logs?\b|log files?\b|log lines\b|日志)"
                              rf"|\blogs?\s+(?:of|from)\s+(?:the\s+)?(?:{_PRODUCT})(?![a-z0-9_-])")
# Where one part of a question ends and the next, possibly about another service, begins.
_CLAUSES = re.compile(r"[,，;；。?？!！]|\s(?:and|but|while|whereas|also)\s|以及|并且|而且|同时|还有|但是|但")
# A yes/no opens the question or one of its parts ("inventory-service keeps freezing, is it a leak?").
_YES_NO_EN = re.compile(
    # "... nothing broke till 8:15. so is the export really what's hogging the pool?": "so" opens the asking part
    r"(?:^|[,:;.?!，：；。？！]\s*|\s[-–—]+\s*)(?:(?:so|and|but|ok so|then)\s+)?"
    r"(?:is|are|was|were|does|do|did|has|have|had|can|could|should|will|would|anything|isn't|aren't|wasn't|"
    # "any errors?" asks whether; "any idea why ..." asks the why
    r"any(?!\s+(?:idea|clue|clues|thoughts?|guesses|theories)\s+(?:on\s+)?(?:why|what|when|how|where|who|which))|"
    r"weren't|doesn't|don't|didn't|hasn't|haven't|can't|couldn't|won't|wouldn't|shouldn't)(?![a-z])")
# 吗 / 吧 end a yes/no part wherever it stands ("正常吗？登录好像没问题"); 什么 / 怎么 / 为什么 never do.
# "X 重启了没", "崩了没有", "降下来没有", "跑完没": 没 / 没有 ending a question after a doing or its
# result asks whether it happened.
_DONE_CHARS, _DONE_WORDS = "了过来去完好顺住掉到通", "成功|生效|解决"  # the words two characters each (a look-behind's width)
_DONE_ZH = f"(?:[{_DONE_CHARS}]|{_DONE_WORDS})"
_YES_NO_ZH = re.compile(r"(?<![什怎])[吗么嘛吧](?:[?？，,]|[。!！\s]*$)|是不是|有没有|是否|会不会|有无|是否有"
                        rf"|{_DONE_ZH}没有?\s*(?:[?？]|$)")
_ASKING_TAIL_ZH = re.compile(rf"(?:(?<=[{_DONE_CHARS}])|(?<={_DONE_WORDS}))没有?(?=\s*(?:[?？]|$))")
# "checkout-service is the culprit, right?", "payment-service dead?": a tag, or a question with no
# asking word at all (no wh- word, no auxiliary), is a yes/no.
_YES_NO_TAG = re.compile(r"[,，\s](?:right|correct|yes or no|or not|yeah|yea|yep|eh|innit|no|ok|okay|agree|agreed)\s*[?？]*\s*$")
# A tag question followed by the asker's own aside ("redis-cart is fine right? its just cart-service
# being slow"): the question is the tagged part; the aside is what they believe, not what they ask.
_TAG_THEN_ASIDE = re.compile(r"[,，\s](?:right|correct|yeah|yea|yep|eh|innit|ok|okay)\s*[?？]+\s*(?=\S)")
# A yes/no question put first, then a statement of why it is asked ("is pricing-service ok? coupon
# checkouts are failing and I want to rule it out"): the statement is context, not the question.
_ASKED_FIRST = re.compile(r"^[^?？]+[?？]+\s*(?=\S)")
_YES_NO_FIRST = re.compile(r"^\s*(?:is|are|was|were|does|do|did|has|have|can|could|should)\b[^?？]*[?？]+\s*(?=\S)", re.I)


def asked_part(question: str) -> str:
    """The part of a question that asks: all of it, but for the aside after a tag question or
    after a yes/no question that a statement without a question follows."""
    m = _TAG_THEN_ASIDE.search(question)
    if m:
        return question[:m.end()].strip()
    m = _YES_NO_FIRST.search(question)
    rest = question[m.end():] if m else ""
    if m and not re.search(r"[?？]", rest) and not _WH.search(normalize(rest)):
        return question[:m.end()].strip()
    # "heard submit's 5xx is like 50% rn?? so half of all checkouts are dying": a yes/no with no asking
    # word, then what the asker draws from it
    m = _ASKED_FIRST.search(question)
    rest = question[m.end():] if m else ""
    if (m and not re.search(r"[?？]", rest) and not _WH.search(normalize(rest))
            and question_form(question[:m.end()]) == "yes_no"):
        return question[:m.end()].strip()
    return question


# "好几条", "十几个", "几乎" count or hedge: no 几 there asks
_WH = re.compile(r"\b(?:what|whats|what's|why|how|when|where|which|who|whom|whose)\b|什么|啥|怎么|为什么|为啥|哪|谁|多久"
                 r"|(?<![好十这那])几(?!乎)")
# A why whose subject is a person: it asks for a motive, which no log records.
_INTENT = re.compile(r"\bwhy(?:'d| (?:did|would|do|does|has|have|is|are)(?:n'?t)?) (?:somebody|someone|anyone|nobody|no one|"
                     r"they|we|you|he|she|people|the team|ops|devs?|engineers?|on-?call)\b"
                     # "someone rolled the route back - what prompted that?": a person's doing asked the cause of
                     r"|\b(?:somebody|someone|they|ops|on-?call)\b[^?]{0,80}\bwhat (?:prompted|made (?:them|him|her))\b"
                     # A behaviour set against another ("why does X park orders instead of retrying"), a
                     # practice not followed ("why isn't the query using an index"), a time someone picked
                     # ("why was the warmup kicked off at 19:20 of all times"): a design's reasons.
                     r"|\bwhy\b[^?]{0,80}?\b(?:instead of|rather than)\b|(?:为什么|为啥|为何)[^？?]{0,40}?而不是"
                     r"|\bwhy (?:is|are|does|do|did|was|were)n'?t\b[^?]{0,60}?\b(?:using|use|retrying|retry|caching|cache|"
                     r"indexed|renewed|renew|rotated|rotate|autoscaling|autoscaled|scaled|throttling|throttled)\b"
                     r"|\bwhy\b[^?]{0,60}?\b(?:kicked off|scheduled|launched|started|run|ran)\s+(?:at|on)\s+\d[^?]{0,30}"
                     r"\bof all (?:times|days|moments)\b"
                     # A setting changed by hand, said in the passive: "why was the timeout lowered to 5 s?"
                     r"|\bwhy (?:was|were|is|are|has|have) [^?]{0,60}?\b(?:changed|set|lowered|raised|bumped|reduced|"
                     r"increased|switched|skipped|disabled|enabled|turned (?:on|off)|reverted|rolled back|edited)\b"
                     r"|(?:为什么|为啥|为何)(?:有人|谁|他们|我们|你们|他|她|要|会被|被)"
                     # "谁拍板让 X 一步到 100% 的", "who signed off on ...": a person's decision, asked its reason
                     r"|谁(?:拍板|决定|批准|批的|同意|定的|点头|签字)|\bwho (?:decided|approved|signed off|okayed|ok'd|greenlit|"
                     r"green-lit|made the call|picked|chose)\b"
                     r"|被(?:改成|改为|改到|调成|调到|调低|调高|设置?成|设置?为|关掉?|关闭|打开|开启|跳过|回滚)"
                     # A setting's value ("why's the heap only 4g", "why does /api/pay run with retries=0"):
                     # someone chose it, and no record says why.
                     r"|\bwhy(?:'s| is| are| does| do| was)?\b[^?]{0,60}?\b(?:only|just|still|set to|capped at|limited to|"
                     r"runs? with|running with|configured (?:with|to|as))\s+[\w./-]*\d"
                     r"|\bwhy\b[^?]{0,60}?\b[a-z_]+=\w+"
                     r"|(?:为什么|为啥|为何)[^？?]{0,30}?(?:只有|只设|只给|只配|才|设成|设为|配成|配置成|配置为)\s*[\w./-]*\d")
# A change asked when it began to apply, not a symptom asked when it began.
_TOOK_EFFECT = re.compile(r"\b(?:take|takes|took|taken|taking) effect\b|\bkick(?:s|ed)? in\b|\b(?:go|goes|went|gone) live\b"
                          r"|\bget applied\b|\bgot applied\b|\bwas applied\b|生效|起作用|开始应用"
                          # a change put in place: a release going out, a flag turned on, a setting lived with
                          r"|\b(?:go|goes|went|gone) out\b|\bland(?:ed)?\b|\bship(?:ped)?\b|\broll(?:ed)? out\b|\b(?:get|got|was|were) (?:deployed|pushed|released)\b"
                          r"|\b(?:running|been running|live|living|lived) with\b|\b(?:turned|switched|flipped) on\b"
                          r"|推上去|推上线|上线|发布|部署|开了|打开|开启")
# What a why asks without naming a happening: the asking words, the frame around them, and the
# words for "something is wrong" that the symptom table leaves to ANY.
_WHY_FRAME = frozenset(
    "why how come what caused causes causing cause made make reason behind wrong happen happened happening "
    "going on problem problems issue issues broken break breaking failing fail failed failure down outage "
    "incident everything anything something stuff all now today again still suddenly really just so getting get "
    "got does did do is are was were been being keep keeps kept it its they them this that these those there "
    # How a since-when asks for the onset ("first seen when?", "最早什么时候出现的").
    "when since first seen noticed spotted logged reported showed show appeared appear start started began begin "
    "最早 第一次 首次 什么时候 何时 几点 开始 出现 "
    # How people say "something is wrong with it" without naming a symptom: not a happening.
    "acting act acts up sideways tank tanks tanked tanking fall falls fell falling over crap crapped flaky "
    "flaking wonky hosed borked dying died dead die dies choke chokes choking struggling struggles hiccup "
    "hiccups melt melted melting meltdown blow blew blown blowing misbehave misbehaving misbehaved weird "
    "off bad badly messed mess funky janky glitch glitching glitchy go goes went gone going hang hangs hung "
    "hanging stuck freeze frozen freezing stall stalled stalling unhappy sick angry red unstable unhealthy "
    "degraded degrading flapping flap trouble troubles having giving screwed busted toast tipped "
    # Words that only say when or how much ("why did X start failing?", "why so flaky lately?").
    "lately recently today tonight yesterday day days week morning again so such very much af around roughly approx "
    # "any idea why", "anyone know why", "X itself": who asks and how, not what happened
    "any idea ideas clue clues anyone anybody someone somebody know knows itself themselves sitting "
    "flow fire fit throwing spamming noisy loud acting crazy nuts wild haywire bonkers mad drama mood "
    "start started starting begin began begun kick kicked kicking off trigger triggered launch launched "
    "为什么 为啥 为何 原因 咋回事 怎么回事 怎么 怎么了 什么 导致 引起 故障 问题 出问题 这次 那次 这个 那个 突然 一直 现在 "
    "又 还 会 老是 总是 到底 究竟 呢 吗 啊 呀 挂 挂了 崩 崩了 抽风 拉胯 卡 卡了 不行 不对 不正常 异常 出毛病 毛病 "
    "炸 炸了 不稳定 有点 出事 出事儿 坏 坏了 掉链子 翻车 扑街 今天 昨天 最近 这么 那么 这样 怪怪的 奇怪 不太 对劲 "
    "不对劲 状况 服务 老出 一下 好像 感觉 "
    # "whats keeping orders from moving", "what prompted that", "谁知道为啥", "查到原因没"
    "whats keeping stopping preventing blocking prompted 知道 那边 这边 查到 找到 "
    # who suffers and that it fails ("users with a coupon can't finish checkout"): the service's fault
    "users user customers customer people folks finish "
    # How a how-long asks for the span ("一共跑了多久", "how long in total").
    "long total altogether 多久 多长时间 一共 总共 前前后后 持续 跑了".split())
_WHY = re.compile(r"\b(?:why|why's|how come|what caused|what causes|what's causing|what is causing|what made|"
                  r"root cause|cause of|reason for|what's wrong|what is wrong|what's behind|what is behind|"
                  r"(?:what's|whats|what is|what was) the (?:reason|cause|deal)|(?:what's|whats|what is|what was|what were) making|what makes"
                  # "whats keeping orders from moving", "what prompted that": what brought it about
                  r"|(?:what's|whats|what is|what was|what were) (?:keeping|stopping|preventing|blocking|driving|the story|eating|hogging|holding)"
                  r"|what (?:prompted|triggered|drove|drives|slowed|slows|held up|delayed|stalled|choked|blew up|ate up|filled up"
                  r"|hogged|knocked|took out|tipped))\b"
                  # "怎么对出差异来了", "怎么要 1.7 秒": how it came to be so
                  r"|(?:怎么|咋)(?!回事|办|处理|弄|看|查|算|用|做)[^，。？?\s]{1,10}了\s*[?？]?\s*$|(?:怎么|咋)(?:要|需要|得|花了?|用了?)\s*\d"
                  r"|为什么|为何|为啥|咋回事|原因|理由|缘由|依据|怎么回事|怎么了|怎么会|咋会|排查|什么问题|什么导致|啥导致"
                  # "怎么慢到 1.8s 了", "咋又超时了": how it came to be so
                  r"|(?:怎么|咋)(?:又|突然|一直|老是|总是|这么|那么)?(?:慢|卡|挂|报错|超时|失败|涨|掉|崩|飙|变)")


# "How long does checkout take?" asks for a latency, not for how long a fault has lasted.
_HOW_LONG = re.compile(r"\bhow long\b(?!.*\b(?:take|takes|took|to (?:recover|fix|restart)|until|till)\b)(?! ago)"
                       # "how long did the cache take to fill": a span the records hold, not an estimate
                       r"|\bhow long did\b.*\btake\b(?!.*\bto (?:recover|fix|restart)\b)"
                       r"|\bhow many (?:minutes|hours|days)\b(?! ago)|持续了?多久|持续了?多长时间|多长时间了|多久了|有多久|多久(?:[?？。]|$)"
                       r"|持续了?几(?:个小时|小时|分钟|天)|(?:几|多少)(?:个小时|小时|分钟)了"
                       # "推完规则，隔了多久 /api/pay 开始超时": the span between two happenings
                       r"|(?:隔|过|相隔|间隔)了?(?:多久|多长时间|几分钟)"
                       # "飙到 820ms，前后多久才降回 140ms", "从第一条到最后一条跨了多久"
                       r"|(?:前后|用了|花了|跨了)(?:多久|多长时间)")
_SINCE_WHEN = re.compile(r"\bsince when\b|\bhow long ago\b|\bsince\s*(?:\.{2,}|…)?\s*[?？]+\s*$|\bfirst\b[^?]{0,60}\bat what time\b|\bwhen did\b.*\b(?:start|begin|first|go down|break)"
                         r"|\bwhen (?:has|have|was|were|is|are)\b.*\b(?:start|began|begun|first)"
                         r"|\b(?:what time|when exactly|starting when|from when)\b.*\b(?:start|begin|first)\b"
                         r"|\bwhen (?:was|were) the first\b|\bwhen exactly\b"
                         # "when did the 5 s timeout kick in?": a change asked when it began to apply
                         r"|\bwhen\b[^?]{0,60}\b(?:kick(?:ed)? in|take effect|took effect|go live|went live|get applied|"
                         r"got applied|go out|went out|land|ship|get deployed|get pushed|roll out|get released)\b"
                         r"|(?:啥时候|什么时候|何时|几点)[^？?]{0,6}?(?:推|发布|上线|部署|打开|开启|开的)"
                         # "NullPointerException at X - first seen when?", "when was it first logged"
                         r"|\bfirst (?:seen|noticed|spotted|logged|reported|showed up|appeared)\b[^?]{0,20}\bwhen\b"
                         r"|\bwhen\b[^?]{0,60}\bfirst (?:seen|noticed|spotted|logged|reported|show(?:ed)? up|appear(?:ed)?)\b"
                         r"|(?:最早|第一次|首次)[^？?]{0,20}?(?:什么时候|何时|几点)"
                         r"|(?:从|自)(?:什么时候|何时|几点|哪个时间点?)|(?:什么时候|何时|几点|哪个时间点?)(?:开始|起|出现|出的|生效)")

# A when of one happening ("what time did inv come back up?", "when did order 123 flip to PAID", "风控规则是几点改的"):
# the question opens on it in English; in Chinese it asks it anywhere but in a yes/no ("几点那会儿慢吗").
_MOMENT = re.compile(r"(?:^\W*|[.!?。！？]\s+)(?:(?:so|and|ok|okay|hey|quick q:?)\s+)?(?:when|what time|wat time|wut time|at what time)\b"
                     r"|\bat what time\s*[?？]*\s*$|\band (?:when|at what time)\s*[?？]*\s*$"
                     # "last NPE we've got on record - what time was that": the thing said first, its time asked after
                     r"|(?:\s[-–—]+|[:,;，：；])\s*(?:and\s+)?(?:when|what time|wat time|at what time)\s+(?:was|is|were|did)\s+(?:that|it|this|they)\b"
                     r"|(?:几点|什么时候|啥时候|何时|哪个时间点?)(?![^？?]*?[吗么吧](?:[?？]|\s*$))")


def catalogue_mentions(question: str, catalogue: Iterable[str]) -> list[str]:
    """Catalogue services the question names, in full or, for a "-service", by its stem as a
    whole word ("payment API" names payment-service; "user_svc" is its own name), else by the
    Chinese word for its stem ("购物车" names cart-service)."""
    text = normalize(question)
    found = []
    for service in catalogue:
        short = service.removesuffix("-service")
        if re.search(rf"(?<![a-z0-9_-]){re.escape(service)}(?![a-z0-9_-])", text) or (
                short != service and len(short) > 2 and re.search(rf"(?<![a-z0-9_-]){re.escape(short)}(?![a-z0-9_-])", text)) or (
                # "the gateway" ("gw", "网关") is the one gateway of the system; "短信网关" and "支付网关" are others
                service.endswith("-gateway") and re.search(r"(?<![a-z0-9_-])(?:gateway|gw)(?![a-z0-9_-])"
                                                           r"|(?<!短信)(?<!支付)(?<!消息)(?<!邮件)(?<!推送)(?<!银行)(?<!微信)(?<!第三方)网关", text)):
            found.append(service)
        elif short != service and any(_abbreviates(w, short) for w in _LATIN_TOKEN.findall(text)):
            found.append(service)  # "notify 一直在删 token", "inv's heap": the stem cut short
    # A service named in full that the catalogue lacks is what is asked, not a Chinese word beside it.
    if found or _SERVICE_LIKE.search(text):
        return found
    return [service for service in catalogue if service.endswith("-service")
            and any(CJK_RUN.match(w) and w in text for w in _zh_words(service.removesuffix("-service")))]


_LATIN_TOKEN = re.compile(r"(?<![a-z0-9_./-])[a-z]{3,}(?![a-z0-9_/-])")
# Words that start a service's stem yet are words of their own ("check" of checkout, "use" of user), and
# "pay", which says what kind of timeouts or failures ("pay timeouts", "order pay"), not whose.
_NOT_NICKNAMES = frozenset("use uses used not note notes check checks checked cat car cart price prices priced info "
                           "inform invent order ord pro per sea pay".split())


def _abbreviates(word: str, stem: str) -> bool:
    """Whether a bare word is a stem cut short ("notify" of notification, "inv" of inventory, "promo")."""
    return len(word) < len(stem) and stem.startswith(word[:max(3, len(word) - 1)]) and word not in _NOT_NICKNAMES


# What Chinese users call a service by its stem ("购物车慢了多久了" asks of cart-service). Kept out of
# the shared SYNONYMS: there "cart" meeting 购物车 would bind claims to any record about a cart.
_ZH_STEMS = {"购物车": "cart", "加购": "cart", "结算": "checkout", "下单": "order", "库存": "inventory", "搜索": "search",
             "定价": "pricing", "登录": "user"}


def _zh_words(stem: str) -> list[str]:
    """The Chinese words for a service's stem: its synonyms and the names users call it by."""
    return [*synonyms(stem), *(w for w, s in _ZH_STEMS.items() if s == stem)]


def _zh_stem(word: str) -> str:
    """The service stem a Chinese word names ("库存" -> "inventory"), or ""."""
    return _ZH_STEMS.get(word) or next((s for s in synonyms(word) if s.isascii() and s != word), "")


# A Chinese business word before 服务 names a service ("库存服务" is inventory-service), in this
# world or not: one it does not hold is asked about all the same, and found absent.
_ZH_SERVICE = re.compile(rf"([{CJK_IDEOGRAPHS}]{{2,4}}?)(?:服务|系统)")


def asked_services(question: str, catalogue: Iterable[str] = ()) -> list[str]:
    """Every service the question names: catalogue ones first, then any service-like name (a
    nickname of a catalogue service read as that service)."""
    known = list(catalogue)
    services = catalogue_mentions(question, known)
    named = [nicknamed(m.group(1), known) if m.group(1) not in known else m.group(1)
             for m in _SERVICE_LIKE.finditer(normalize(question))]
    named += [nicknamed(m.group(0), known) for m in NICKNAME.finditer(normalize(question))]
    named += [f"{stem}-service" for m in _ZH_SERVICE.finditer(question) for w in (m.group(1), m.group(1)[-2:])
              if (stem := _zh_stem(w))][:1] if not services and not named else []
    for name in named:
        if name not in services:
            services.append(name)
    return services


# A database or a node failing over moves to its standby: a happening of its own, not errors.
_FAIL_OVER = re.compile(r"\bfail(?:s|ed|ing)?[ -]?over\b|主从切换|故障转移|切主")
# "X is what sent Y into Z?": a statement put for confirmation, its "what" no wh-word.
_IS_WHAT = re.compile(r"\b(?:is|was|are|were)\s+what\s+(?:sent|caused|drove|pushed|made|triggered|brought|set off|kicked off|"
                      r"tipped|broke|killed|filled|started)\b")


def asked_symptoms(text: str) -> list[str]:
    """The symptom ids a piece of a question asks about, in table order (suspected causes included)."""
    found: set[str] = set()
    for clause in _CLAUSES.split(_LOGS_OF_PRODUCT.sub(" logs ", _FAIL_OVER.sub("switchover", normalize(text)))):
        hits = {sid for sid, pattern in _ASKED.items()
                if pattern.search(clause) or (sid in _PHRASING and _PHRASING[sid].search(clause))}
        found |= hits - {general for sid in hits for general in SYMPTOMS[sid].narrows}
    return [sid for sid in SYMPTOMS if sid in found]


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


# Inside a yes/no proposition: a negation ("X 是不是没有报错", "is X not returning errors") or a
# word for normal ("X 的 CPU 没问题吧", "is X's latency ok") asserts the symptom's absence. A
# question put in the negative ("isn't X returning errors?", "X 不是在报错吗") asks it present.
_DENIES_EN = re.compile(rf"^(?:is|are|was|were|does|do|did|has|have|had)\s(?!.*\bor not\b).*{NEGATION.en_alternation}")
_DENIES_ZH = re.compile(DENYING_ZH)


def _bare(question: str) -> str:
    """The question without its asking words and symptom phrases, whose own negations ("not
    responding", "没收到消息") name a symptom rather than deny one."""
    bare = _ASKING_TAIL_ZH.sub(" ", ASKING_ZH.regex.sub(" ", normalize(question)))
    for pattern in (*_ASKED.values(), *_PHRASING.values()):
        bare = pattern.sub(" ", bare)
    return bare


def denies_symptom(question: str) -> bool:
    """The yes/no proposition holds a negation of its symptom."""
    bare = _bare(question)
    return bool(_DENIES_EN.search(bare) or _DENIES_ZH.search(FINE_BY_NEGATION.regex.sub(" ", bare)))


def asks_fine(question: str) -> bool:
    """The yes/no proposition asks whether its symptom is normal, or has passed ("come back down",
    "停了没": a symptom that stopped is no longer there)."""
    bare = _bare(question)
    return FINE.search(bare) or RECOVERED.search(bare) or bool(_STOPPED.search(normalize(question)))


# A belief put forward for confirmation, with no asking word: "pretty sure the OOMs are all on inv-1".
_BELIEF = re.compile(r"^\W*(?:(?:i'?m|im)\s+)?(?:pretty|fairly|quite)\s+sure\b|^\W*i\s+(?:think|bet|reckon|believe|guess)\b"
                     r"|^\W*(?:我记得|我觉得|我猜|我感觉)")
# "since the rollout has GET /x been throwing 500s", "after the restart did the errors stop": the asking
# verb after a time said first, with no comma
_YES_NO_AFTER_TIME = re.compile(r"^\W*(?:ever\s+)?(?:since|after|before|during|following)\s+(?:the\s+|that\s+|this\s+)?"
                                r"[\w.:-]+(?:\s+[\w.:-]+)?\s+(?:has|have|is|are|was|were|did|does|do)\s+(?!been\b|done\b)")
# "root cause of those restarts?", "reason for the failover?": a cause asked for in a noun phrase
_NOMINAL_WHY = re.compile(r"(?:^|[.;:!?,，]\s*|\s[-–—]+\s*)(?:and\s+|so\s+)?(?:the\s+|any\s+)?(?:root[- ]cause|cause|reason|trigger)s?\s+"
                          r"(?:of|for|behind)\b")
# "原因是？", "查到原因没", "谁知道为啥": a yes/no's shape around a why, which asks the cause all the same.
_CAUSE_ASKED_ZH = re.compile(r"原因是\s*(?:啥|什么)?\s*[?？]*\s*$|原因呢|(?:查|找)(?:到|出)(?:原因|根因)了?没有?|知道(?:为啥|为什么)"
                             r"|(?:卡|堵|慢|坏)在哪(?:了|儿|里)?"
                             r"|(?:根子|根源|根因|原因|病根)(?:在哪|是啥|是什么)|背后是(?:啥|什么)")


def question_form(question: str) -> QuestionForm:
    """how_long ("how long has X been failing?", "X 报错多久了？") and since_when ("since when ...",
    "when did X start ...", "X 是几点开始报错的？") first: they ask for a time, whatever verb opens
    them; then yes_no ("Is X leaking memory?", "X 是不是内存泄漏？"), why ("why ...", "什么原因"),
    else what. A yes/no question with a clock time ("is X down since 10:00?") stays yes_no: it asks
    about a window, not for a time."""
    norm = normalize(question)
    if _HOW_LONG.search(norm):
        return "how_long"
    if _SINCE_WHEN.search(norm) or _MOMENT.search(norm):
        return "since_when"
    if _CAUSE_ASKED_ZH.search(norm):
        return "why"
    if _YES_NO_EN.search(norm) or _YES_NO_ZH.search(norm) or _YES_NO_TAG.search(norm):
        return "yes_no"
    if _YES_NO_AFTER_TIME.search(norm) and not _WH.search(norm):
        return "yes_no"
    if _BELIEF.search(norm) and not _WH.search(norm):  # "pretty sure the OOMs are all on inv-1": confirm it
        return "yes_no"
    if _NOMINAL_WHY.search(norm) and not _WH.search(norm):
        return "why"
    if norm.rstrip().endswith(("?", "？")) and (not _WH.search(norm) or _IS_WHAT.search(norm)):
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


_CLOCK = re.compile(r"(?<![\d:])\d{1,2}:\d{2}(?::\d{2})?(?![\d:])")


def asked_event(question: str, services: Iterable[str], symptoms: dict[str, list[str]], *, things: bool = False) -> list[str]:
    """The words of a why about one happening the symptom table has no word for: what is left of
    it without its services, clock times and frame. None when it asks a symptom, or proposes a
    cause ("why did checkout break after the deploy?" asks why checkout broke). `things`: a when may
    name a thing of the service the symptom is said of ("健康检查慢到 3 秒多，最早冒头是几点"); without it
    only a job the service runs is such a thing ("库存同步 batches keep failing", text.lexicon.JOB)."""
    if _STOPPED_DOING.search(normalize(question)):
        # "订单超时关单任务怎么不跑了": a job said to have stopped is the happening, whatever symptom its name holds
        return _moment_words(_STOPPED_DOING.sub(" ", normalize(question)), services)
    # "why did the rollback fail", "why didnt the revert help", "扩容为啥没生效": the doing is what the why
    # asks of, whatever the symptom around it; its records, or none, decide the answer.
    outcome = next((m for p in _OUTCOME_WHY if (m := p.search(normalize(question))) is not None), None)
    if outcome is not None and HAPPENING.search(outcome.group("x")):
        return _happening_words(outcome.group("x"), services)
    # An endpoint names the happening more surely than any word: "GET /api/inventory/warehouses keeps
    # taking 1.4-1.7s, why" asks of that path's requests, and so does "what's making /api/x slow?" (whose
    # records decide whether the symptom's cause or the path's own lines answer it: pipeline.verdict.form).
    paths = {m.group(0).rstrip("/.") for m in _PATH.finditer(normalize(question))}
    if any(SYMPTOMS[sid].cause_only for sid in asked_symptoms(_unnamed(question, services))):
        return sorted(paths)
    if any(sid != ANY for sids in symptoms.values() for sid in sids):
        # "inventory 健康检查慢到 3 秒多": a thing of the service the records name in words of their own (a
        # health check, a slow query) is the happening the symptom is said of
        said = normalize(question)
        said_words = _happening_words(question, services, symptoms=False)
        named = ([*(w for w in said_words if synonyms(w) != (w,)),
                  *(p for group in SYNONYMS for p in group if " " in p and re.search(rf"\b{re.escape(p)}\b", said))] if things
                 # "the regular 库存同步 batches keep failing, what's the story": a why of a job the service
                 # runs asks of that job's records, which may show it doing fine
                 else [w for w in said_words if JOB.search(w)])
        if services or paths:
            return sorted(paths) or named
        # No service named: the thing said to fail is what the why asks of ("活动规则一直加载失败"), its
        # records, not the incident's, what a cause must speak of.
        return _happening_words(question, symptoms=False)
    parts = {p for s in services for p in normalize(s).split("-")}
    # "fail over" is one happening, not a failure and a preposition the frame would drop
    words = keywords(_CLOCK.sub(" ", _FAIL_OVER.sub(" failover ", _unnamed(question, services))))
    return sorted(paths | {w for w in words if w not in _WHY_FRAME and w not in parts})


_PATH = re.compile(r"(?<![\w/])/(?:[a-z0-9_.-]+/)+[a-z0-9_.-]+")
_CLAUSE_BREAK = re.compile(r"[,，;；:：?？.。!！]\s|[,，;；?？。!！]|\s[-–—]+\s")


def _paths_asked(question: str) -> list[str]:
    """The endpoints a yes/no asks of ("has GET /api/x been throwing 500s", "GET /api/x 也在报 500 吗"): each
    in the one clause with the asking words, answered by its own requests as an id is. One said as context
    ("X returned a 500 on /api/y - is X down?") is not asked of."""
    norm = normalize(question)
    asked = []
    for m in _PATH.finditer(norm):
        start = max((b.end() for b in _CLAUSE_BREAK.finditer(norm, 0, m.start())), default=0)
        stop = next((b.start() for b in _CLAUSE_BREAK.finditer(norm, m.end())), len(norm))
        clause = norm[start:stop + 1]
        if (_YES_NO_EN.match(clause) or _YES_NO_AFTER_TIME.match(clause)
                or _YES_NO_ZH.search(norm, m.end(), min(len(norm), stop + 2))):
            asked.append(m.group(0).rstrip("/."))
    return asked


# A why asking of a doing's outcome: (x) the doing.
_OUTCOME_WHY = patterns(
    r"\bwhy\s+(?:did|didn'?t|does|doesn'?t|has|hasn'?t|won'?t|wouldn'?t|is|isn'?t|was|wasn'?t)\s+(?P<x>.+?)\s+"
        r"(?:not\s+|never\s+)?(?:fail|failed|help|helped|work|worked|take|took|stick|succeed|go through|get applied"
        r"|do anything|fix (?:it|anything|things|the \w+))\b",
    r"(?P<x>[^，,。？?]+?)(?:为啥|为什么|为何|怎么)(?:会)?(?:没|没有|不|也没)?(?:生效|起作用|管用|用|成功|奏效|失败|效果)",
)
# A job or a flow said to have stopped running: "怎么不跑了", "stopped running", "没再执行".
_STOPPED_DOING = re.compile(r"不跑了|没跑了|不运行了|不执行了|没再执行|没再跑|停止运行|停跑|\bstopped (?:running|firing|working|sending)\b"
                            r"|\bno longer (?:runs|running|fires|sends)\b|\bquit (?:running|working)\b"
                            # "whats keeping orders from moving PAID -> SHIPPED": said to be held back from happening
                            r"|\b(?:keeping|keeps|stopping|stops|preventing|prevents|blocking|blocks)\b(?=.*\bfrom\s+\w+ing\b)"
                            r"|\bfrom\s+(?:moving|going|getting|being|running|sending)\b")


# How long from one happening to the next: (a) the earlier, (b) the later.
_SPAN_ASKED = r"how (?:long|many (?:mins?|minutes|secs?|seconds|hours))"
_SPAN_ASKED_ZH = r"(?:前后|中间|之间|一共)?(?:隔了|过了|用了|花了)?(?:多(?:久|长时间)|(?:几|多少)(?:个)?(?:分钟|秒|小时))"
_BETWEEN = patterns(
    r"\bhow long after (?P<a>.+?) (?:did|does|do|was|were|is|until|till|before) (?P<b>.+)",
    rf"\b{_SPAN_ASKED}\b.*?\bbetween (?P<a>.+?) and (?P<b>.+)",
    # "how far apart were the rollout and the first NPE", "whats the gap between the first full GC and the first OOM"
    r"\bhow far apart (?:were|was|are|is)\s+(?P<a>.+?) and (?P<b>.+)",
    r"\b(?:gap|time|delay|lag) between (?P<a>.+?) and (?P<b>.+)",
    # "X 打开以后，第一条慢查询是过了几分钟冒出来的"
    r"(?P<a>[^，,。？?]+?)(?:之后|以后|后)[，,]?\s*(?P<b>[^，,。？?]+?)(?:是)?过了(?:几|多少)(?:分钟|秒|小时)",
    rf"^\W*(?:from\s+)?(?P<a>.+?)\s*(?:->|→|=>|\bto\b)\s*(?P<b>.+?)\s*[:,-]+\s*{_SPAN_ASKED}\b",
    rf"\b{_SPAN_ASKED} from (?P<a>.+?) (?:to|until|till) (?P<b>.+)",
    # "第一条 NPE 出来以后，网关隔了多久才开始转发 500": the later's subject may stand before the asking words
    r"(?P<a>[^，,。？?]+?)(?:之后|以后|后)[，,]?\s*(?P<b0>[^，,。？?]*?)(?:隔了|过了|又过了)?多(?:久|长时间)(?:才|就)?"
        r"(?P<b>[^，,。？?]+)",
    # "risk-admin 推完那批规则，隔了多久 /api/pay 开始超时": the earlier happening is the clause before the span asked
    r"(?P<a>[^，,。？?]+?)[，,]\s*(?P<b0>[^，,。？?]*?)(?:隔了|过了|又过了|相隔|前后)(?:多(?:久|长时间)|几分钟)(?:才|就)?"
        r"(?P<b>[^，,。？?]+)",
    # "从 X 到 Y 隔了多久", "X 一打开，到 Y 响，前后隔了几分钟"
    rf"(?:从(?P<a>[^，,。？?]+?)[，,]?\s*|(?P<a2>[^，,。？?]+?)[，,]\s*)到(?P<b>[^，,。？?]+?)[，,]?\s*{_SPAN_ASKED_ZH}",
)


# A yes/no setting the symptom's start against a happening: before it, or only after it.
_ORDERED: tuple[tuple[Literal["before", "after"], re.Pattern[str]], ...] = (
    ("before", re.compile(r"(?P<y>[^，,。？?]+?)(?:之前|以前|前)(?:就|就已经|已经)(?:有|出现|开始|在|冒出来)")),
    ("after", re.compile(r"(?P<y>[^，,。？?]+?)(?:之后|以后|后)才(?:冒出来|出现|开始|有)")),
    ("before", re.compile(r"\b(?:already|even)\b[^?]{0,40}?\bbefore\s+(?P<y>[^?,]+)")),
    ("after", re.compile(r"\b(?:only|just)\s+(?:\w+\s+)?after\s+(?P<y>[^?,]+)")),
)


# Two happenings said in order: "X went off first, then Y - that the order?", "先 X 然后 Y 的吧".
_SEQUENCE = patterns(r"^\W*(?P<a>.+?)\s+(?:[a-z]+\s+){0,2}first\s*,?\s*(?:and\s+)?then\s+(?P<b>[^?]+?)\s*(?:[-–—,?]|$)",
             r"先(?P<a>[^，,。？?]+?)[，,]?\s*(?:然后|再|之后才|后)(?P<b>[^，,。？?]+)")


_SEQUENCE_FRAME = frozenset({"went", "fired", "came", "happened", "order"})


def _happening_words(text: str, services: Iterable[str] = (), *, symptoms: bool = True) -> list[str]:
    """The words naming a happening in part of a question: no clock time, service name, frame word or
    bare number; `symptoms` False leaves a symptom's own words out too. A count said with its scale ("60
    万条") is the number the records write ("600000")."""
    counted = {f"{float(m.group(1)) * SCALES[m.group(2)]:.0f}" for m in SCALED.finditer(normalize(text))}
    return sorted({*counted, *(w for w in keywords(_CLOCK.sub(" ", SCALED.sub(" ", _unnamed(text, services))))
                               if w not in _WHY_FRAME and not w.isdigit() and not _READING.fullmatch(w) and len(w) > 1
                               and (symptoms or not asked_symptoms(w)))})


# A reading or a range of them as the asker writes it ("4.6-4.8s", "~1.7s"): the records write their own.
_READING = re.compile(r"~?\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?(?:ms|s|%|mb|gb|k)")


def _sequence(question: str, services: Iterable[str]) -> tuple[list[str], list[str]] | None:
    """(first, then) words of two happenings a yes/no says came in that order, or None."""
    norm = normalize(question)
    m = next((m for p in _SEQUENCE if (m := p.search(norm)) is not None), None)
    if m is None:
        return None

    said = [[w for w in _happening_words(m.group(part), services) if w not in _SEQUENCE_FRAME] for part in ("a", "b")]
    return (said[0], said[1]) if said[0] and said[1] else None


def _ordered(question: str, services: Iterable[str]) -> tuple[Literal["before", "after"], list[str]] | None:
    """(order, words of the happening) a yes/no sets its symptom's start against, or None."""
    norm = normalize(question)
    for order, pattern in _ORDERED:
        if (m := pattern.search(norm)) is not None:
            # "支付超时是不是风控规则更新前": the happening follows the asking word; a clock time in it dates it
            said = re.split(r"是不是|是否|是|在", m.group("y"))[-1] if "是" in m.group("y") or "在" in m.group("y") else m.group("y")
            clock = _CLOCK.findall(said)
            words = _happening_words(said, services)
            if words or clock:
                return order, clock[:1] + words
    return None


def _between(question: str, services: Iterable[str]) -> tuple[list[str], list[str]] | None:
    """(earlier, later) words of a how-long from one happening to the next, or None; the later's
    symptom words are left to the symptom it names."""
    norm = normalize(question)
    m = next((m for p in _BETWEEN if (m := p.search(norm)) is not None), None)
    if m is None:
        return None

    # a symptom's own word stays: "the first OOM" is found by the records saying it
    said = m.groupdict()
    earlier = _happening_words(said.get("a") or said.get("a2") or "", services)
    later = _happening_words(f"{said.get('b0') or ''} {said['b']}", services)
    return (earlier, later) if earlier else None


def read_scope(question: str, catalogue: Iterable[str] = (), now: datetime | None = None,
               latest: Callable[[list[str]], EvidenceTime | None] | None = None) -> QuestionScope:
    """The scope of one question. `catalogue` holds the services some backend is known to have
    (a bundled world's services); `now` anchors relative windows ("last 30 minutes"); `latest`
    tells the latest evidence of the asked services (of any, when none is named), which a clock
    time without a date is read against (pipeline.text.timewindow)."""
    known = list(catalogue)
    whole, question = question, asked_part(_siblings_named(question))
    services = asked_services(question, known)
    window, anchor = None, None
    if now is not None:
        anchor = latest(services) if latest is not None and clock_without_date(whole) else None
        anchor = anchor if anchor is not None and anchor.at <= now else None
        window = parse_time_window(whole, now, anchor=anchor.at if anchor else None)
    symptoms = service_symptoms(question, services, known)
    form = question_form(question)

    def effect(text: str) -> bool:
        return bool(asked_symptoms(text))

    proposition = read_proposition(question, services, asked_nothing=all(v == [ANY] for v in symptoms.values()),
                                   denies=denies_symptom(question), fine=asks_fine(question),
                                   catalogue=known, effect=effect) if form == "yes_no" else None
    if proposition is not None and proposition.subject_kind == "thing" and asked_services(proposition.phrase, known):
        # "这锅该网关背吗": a service said in words the proposition's reader does not know is no thing
        proposition = read_proposition(question, services, asked_nothing=all(v == [ANY] for v in symptoms.values()),
                                       denies=denies_symptom(question), fine=asks_fine(question), things=False,
                                       effect=effect, names=lambda text: [s for s in asked_services(text, known) if s in services])
    asked = question
    if proposition is not None and proposition.subject_kind == "thing":
        # "is DNS the cause of the order failures?": the suspect's words name no symptom asked about
        asked = normalize(question).replace(proposition.phrase, " ")
        symptoms = service_symptoms(asked, services, known)
    between = _between(question, services)
    sequence = _sequence(question, services) if form == "yes_no" and not between else None
    ordered = _ordered(question, services) if form == "yes_no" and not between and not sequence else None
    form = "how_long" if between else form
    alert, alert_state = asked_alert(question)
    form = "yes_no" if alert_state else form
    stopped_at = _stopped_at(question) if form == "yes_no" else ""
    intent = form == "why" and bool(_INTENT.search(normalize(question)))
    took_effect = form in ("since_when", "how_long") and bool(_TOOK_EFFECT.search(normalize(question)))
    moment = (form == "since_when" and not took_effect and not _SINCE_WHEN.search(normalize(question))
              and bool(_MOMENT.search(normalize(question))))
    actor = form in ("what", "why") and bool(_ACTOR.search(normalize(question)))
    one_off = form == "yes_no" and bool(_ONE_OFF.search(normalize(question)))
    shared_cause = form == "yes_no" and bool(_SHARED_CAUSE.search(normalize(question)))
    # "for everyone or just coupon orders?" sets all against some: an alternative, not a claim about all
    # "只有 pay-7d9f-2 在报。那 -1 上也在超时吗": the sentence asking is the last one naming an instance
    asked_box = _box_sentence(question)
    only = _only(asked_box, services) if form == "yes_no" else ""
    boxes = sorted({e.value for e in extract_entities(asked_box) if e.kind == "instance" and "-" in e.value}) \
        if form == "yes_no" and not only else []
    # "all coming from order-9a1f-3" says where they all come from: one place alone, not every request
    universal = (form == "yes_no" and not only and bool(_UNIVERSAL.search(normalize(question)))
                 and not re.search(r"\bor\s+(?:just|only)\b|还是只有|还是只", normalize(question)))
    return QuestionScope(
        services=services,
        known_services=[s for s in services if s in known],
        symptom=", ".join(asked_symptoms(_unnamed(asked, services))),
        symptoms=symptoms,
        form=form,
        proposition=proposition,
        time_window=TimeWindow(start=window[0], end=window[1], text=window_phrase(whole), anchor=anchor)
        if window else None,
        language="zh" if detect_language(question) == "zh" else "en",
        intent=intent and not actor,
        actor=actor,
        event=between[1] if between else sequence[1] if sequence else _moment_words(question, services) if moment or one_off or actor
        else sorted({m.group(0).rstrip("/.") for m in _PATH.finditer(normalize(question))}) if universal
        else asked_event(question, services, symptoms, things=form == "since_when")
        if (form == "why" and not intent) or form in ("since_when", "how_long") or one_off or universal
        else _done_to_ids(question, services, known) if form == "yes_no" else [],
        since_event=between[0] if between else sequence[0] if sequence else ordered[1] if ordered else [],
        order="sequence" if sequence else ordered[0] if ordered else "",
        took_effect=took_effect and not between,
        moment=moment and not between,
        latest=moment and bool(_LATEST.search(normalize(question))),
        peak=moment and bool(_PEAK.search(normalize(question))),
        identifiers=sorted({e.value for e in extract_entities(question) if e.kind == "identifier"}
                           | ({*_paths_asked(question)} if not boxes else set())) if form == "yes_no" else [],
        boxes=boxes,
        within_bounds=form == "why" and bool(WITHIN_BOUNDS.search(normalize(question)) or _QUOTES_FIGURE.search(normalize(question))),
        status=_asked_status(question) if form == "yes_no" else "",
        alert=alert,
        alert_state=alert_state,
        stopped_at=stopped_at,
        stopped_words=_stopped_words(question, services) if stopped_at else [],
        halted=form == "why" and bool(_STOPPED_DOING.search(normalize(question))),
        universal=universal,
        one_off=one_off,
        shared_cause=shared_cause,
        only=only,
    )


_LINKED = re.compile(r"\b(?:related|relate|cause[ds]?|because|due|blame|fault|behind|linked|connected)\b|有关|相关|关系|原因|导致|因为|怪")
_NEGATION = re.compile(r"\b(?:not|never|no|didn't|did not|wasn't|hasn't|haven't|won't|isn't|aren't)\b|没|不|未")


# An instance named by its ordinal alone after a sibling was named in full: "-3" of "checkout-68f0-1 ... the -3 box".
_ORDINAL = re.compile(r"(?<![\w.-])-(\d{1,2})(?![\w.-])")


def _box_sentence(question: str) -> str:
    """The last sentence naming an instance, or the whole question when none or one sentence does."""
    named = [p for p in SENTENCE_BREAK.split(question) if any(e.kind == "instance" for e in find_entities(p))]
    return named[-1] if named else question


def _siblings_named(question: str) -> str:
    """The question with an instance said by its ordinal ("-3") written in full after the sibling it
    follows ("checkout-68f0-1 ... what about the -3 box" -> "checkout-68f0-3")."""
    first = next((e for e in find_entities(question) if e.kind == "instance" and re.search(r"-\d{1,2}$", e.value)), None)
    if first is None:
        return question
    family = first.value.rsplit("-", 1)[0]
    head, tail = question[:first.end], question[first.end:]
    return head + _ORDINAL.sub(lambda m: f"{family}-{m.group(1)}", tail)


def _done_to_ids(question: str, services: Iterable[str], catalogue: Iterable[str]) -> list[str]:
    """What a yes/no says was done to the ids it names beyond its symptom ("the gw retried order 142
    after it timed out, right?": "retried"), which their own records must hold; [] without ids, or
    when it denies the doing ("never went thru"), which their records' silence could not settle."""
    norm = normalize(question)
    ids = [e for e in find_entities(norm) if e.kind == "identifier"]
    if not ids or _NEGATION.search(norm) or _LINKED.search(norm):  # "order 156 - cfg-03 related?" asks a link
        return []
    for e in sorted(ids, key=lambda e: -e.start):
        norm = norm[:e.start] + " " + norm[e.end:]
    said = _CLOCK.sub(" ", _unnamed(norm, services))
    for pattern in _ASKED.values():  # "timed out" is the symptom, not a doing
        said = pattern.sub(" ", said)
    named = set(catalogue_mentions(said, catalogue))
    return sorted(w for w in keywords(said) if w not in _WHY_FRAME and w not in _DOING_FRAME and not asked_symptoms(w)
                  and not any(c.isdigit() for c in w) and len(w) > 2 and not (named and catalogue_mentions(w, catalogue))
                  )


# The words of a yes/no's asking and ordering frame, which name no doing.
_DOING_FRAME = frozenset("right correct yeah yep after before then later too also all only just ok okay end eventually "
                           "finally well hit hits see saw seen".split())


# Says one instance or service alone shows it: "only checkout-68f0-1 ...", "just on gw-2", "只在 X 上".
_ONLY = patterns(r"\b(?:only|just|solely|exclusively)\s+(?:on\s+|in\s+|from\s+|at\s+|by\s+)?(?:the\s+)?(\S+)"
                     r"|(?:只在|只有|仅在|仅有|就只有)\s*(\S+?)(?=\s|上|里|那|这|的|会|在|$)"
                     r"|(\S+)\s+(?:is\s+)?the\s+only\s+(?:one|service|pod|instance|host|node)\b",
         # "coming off pay-7d9f-2 only", "the OOMs are all coming off inv-84cd-1": tried after the above, as
         # "the OOMs only on inv-2" holds both shapes
         r"(\S+)\s+only\b|\ball\s+(?:coming|come|came)\s+(?:off|from|out of)\s+(?:the\s+)?(\S+)")
# Says one box alone shows it, naming none: "just one box?", "就一台机器在报吗".
_ONE_BOX = re.compile(r"\b(?:just|only)\s+(?:one|a single|1)\s+(?:box|host|pod|machine|node|instance|server)\b"
                      r"|\b(?:one|a single)\s+(?:box|host|pod|machine|node|instance|server)\s+only\b"
                      r"|(?:就|只有|只|仅)(?:一|1)(?:台|个)(?:机器|pod|实例|节点|主机|服务器|容器)")
ONE_BOX = "one box"


def _only(question: str, services: Iterable[str]) -> str:
    """The instance or service a yes/no says alone shows its symptom, ONE_BOX for a box it does not
    name, or ""."""
    if _ONE_BOX.search(normalize(question)):
        return ONE_BOX
    for m in (m for pattern in _ONLY for m in pattern.finditer(normalize(question))):
        said = next(g for g in m.groups() if g).strip(".,?!，。？")
        named = extract_entities(said)
        held = said if said in services else next((e.value for e in named if e.kind == "instance"), "")
        if held:
            return held
    return ""


_STOPPED = re.compile(r"\b(?:stop|stops|stopped|ended|ceased|went away|died down|quit|no longer|never came back)\b"
                      r"|停了|停止了|没再|不再|就停|消失了")


# Says every request, user or order suffers: "every single /api/pay call", "literally everyone", "所有用户".
_UNIVERSAL = re.compile(r"\b(?:every(?:\s+single)?|all(?:\s+the)?|each)\s+(?:[\w/{}.-]+\s+){0,2}?(?:calls?|requests?|users?|"
                        r"customers?|endpoints?|orders?|payments?|checkouts?|transactions?)\b"
                        r"|\b(?:everyone|everybody|for all users)\b"
                        r"|(?:所有|全部|每个|每一个)(?:的)?(?:请求|用户|接口|订单|调用|支付|人)|所有人|人人")
# Asks whether two happenings share one cause: "same root cause as the 504s?", "是一根藤上的瓜吗", "俩都是同一次 X 搞的？".
_SHARED_CAUSE = re.compile(r"\bsame (?:root(?: cause)?|cause|underlying (?:cause|issue|problem)|issue|problem)\b|\bshare (?:a|the|one) "
                           r"(?:root|cause)|\bone (?:and the same|common) (?:cause|root)\b|\bcommon (?:root|cause)\b"
                           r"|一根藤上|同一个原因|是一个原因|同一原因|同一个根因|同一次[^，,。？?]{0,12}(?:搞|弄|引起|导致|造成)|一回事|一码事|同一个问题")
# Asks whether a symptom happened once: "just a blip", "a one-off", "偶发的吧".
_ONE_OFF = re.compile(r"\b(?:blip|one-off|one off|fluke|one-time thing|just once|only once|isolated (?:incident|case|event))\b"
                      r"|偶发|一次性的|就一次|只有一次|只出现了?一次|只发生了?一次")
# Who did something: a person or a job asked of a doing ("which person or job turned on X?", "谁改的风控规则").
_ACTOR = re.compile(r"\b(?:who|which (?:person|people|job|team|user|engineer|process|script|cron))\b[^?]{0,20}?\b(?:turned|flipped|"
                    r"changed|pushed|deployed|ran|triggered|restarted|enabled|disabled|rolled|kicked|started|set|updated|"
                    r"edited|bumped|did)\b|谁(?:把|改|开|推|发|动|关|重启|执行|触发|调|上线|操作)|哪(?:个人|位|个同事|个任务|个脚本)")
# A when asking the latest time: "the last OOM", "most recent timeout", "最近一次", "最后一单".
_LATEST = re.compile(r"\b(?:last|latest|newest|most recent|final)\b|\b(?:until|till) (?:when|what time)\b"
                     r"|(?:最近|最后|最新)(?:一)?(?:次|单|条|个|回)?|到(?:几点|什么时候|啥时候)")
# A when of a reading at its highest: "top out", "peak", "max out", "最高", "峰值".
_PEAK = re.compile(r"\b(?:top(?:ped)? out|peak(?:ed)?|max(?:ed)? out|at (?:its|the) (?:highest|worst|max)|highest|worst|longest|biggest"
                   r"|deepest|how (?:deep|high)"
                   r"|hit its max)\b"
                   r"|最高|峰值|顶峰|最严重|最深|最大|最长|最久")
# The asking words of a when or a one-off, which no record of the happening holds.
_WHEN_FRAME = re.compile(r"\b(?:when|what time|wat time|wut time|at what time|exactly|finally|roughly|approx(?:imately)?|right|first"
                         r"|who|which person|which job|person|job|or|turned"
                         # "the last NPE we've got on record": where the asker saw it, not what happened
                         r"|(?:we'?ve|we|i'?ve|you'?ve)\s+(?:got|have|had|seen|logged)|on record|in the (?:logs?|records?))\b|谁|哪个人|哪位"
                         r"|几点(?:几分)?|什么时候|啥时候|何时|哪个时间点?|大概|大约|最终|响起来|起来|第一(?:次|单|条|个|回)?|多少|"
                         + _PEAK.pattern + "|" + _LATEST.pattern + "|" + _ONE_OFF.pattern)


def _moment_words(question: str, services: Iterable[str]) -> list[str]:
    """What a when asks the time of: its words but the frame, its services (by a stem too: "payment 的 CPU")
    and clock times (an id stays: "order 123")."""
    services = list(services)
    stems = {normalize(s).split("-")[0] for s in services}

    def words(text: str) -> list[str]:
        norm = _WHEN_FRAME.sub(" ", _CLOCK.sub(" ", _unnamed(text, services)))
        return sorted(w for w in keywords(norm) if w not in _WHY_FRAME and w not in stems and not asked_services(w, services)
                      and len(w) > 1 or w.isdigit())
    # "pager finally quiet. what time was the very last 504 ...": the sentence asking the time says what
    # happened; one before it is the asker's context, unless the asking one says nothing ("when was that?")
    asking = [part for part in SENTENCE_BREAK.split(normalize(question)) if _MOMENT.search(part) or _SINCE_WHEN.search(part)]
    return (words(asking[-1]) if asking else []) or words(question)


def _stopped_words(question: str, services: Iterable[str]) -> list[str]:
    """What a stopped-at question says stopped: its words but the frame, its services and times."""
    norm = _STOPPED.sub(" ", _CLOCK.sub(" ", _unnamed(question, services)))
    return sorted(w for w in keywords(norm) if w not in _WHY_FRAME and not w.isdigit() and len(w) > 1)


def _stopped_at(question: str) -> str:
    """The HH:MM a yes/no says its symptom stopped at, or ""."""
    norm = normalize(question)
    times = sorted(clock_times(norm))
    return times[-1] if _STOPPED.search(norm) and times else ""


# An alert's name as its rules spell it ("RedisMemoryHigh", "CheckoutHttp5xxRateHigh"), and the state
# asked of it: still on, or over.
_ALERT_NAME = re.compile(r"(?<![\w-])([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*){1,6})(?![\w-])")
_STILL_FIRING = re.compile(r"\bstill (?:firing|on|active|going|open)\b|\b(?:is|are)\s+[a-z0-9]+\s+firing\b"
                           r"|还在响|还在告警|还在报|还没(?:恢复|消|好)|还亮着")
_RESOLVED = re.compile(r"\b(?:resolved|cleared|recovered|gone|cleared up|over)\b|恢复|消了|消掉|结束|好了没|解除")


def asked_alert(question: str) -> tuple[str, Literal["firing", "resolved", ""]]:
    """The alert a question asks the state of, and that state ("firing" or "resolved"), or ("", "")."""
    m = _ALERT_NAME.search(question)
    if m is None:
        return "", ""
    norm = normalize(question)
    if _STILL_FIRING.search(norm):
        return m.group(1), "firing"
    if _RESOLVED.search(norm):
        return m.group(1), "resolved"
    return "", ""


# A why that quotes the figure it finds slow ("怎么慢到 1.8s 了", "taking 1.4-1.7s"): the slowness it
# saw, whatever bounds the record says it kept.
_QUOTES_FIGURE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:\s*[-–~]\s*\d+(?:\.\d+)?)?\s*(?:ms|s|sec|seconds|秒|毫秒)(?![a-z])")


# "still PAY_UNKNOWN", "还是 PAY_UNKNOWN", "仍然 PENDING": a status word a record spells in capitals.
_STILL_STATUS = re.compile(r"(?:\bstill\b|还是|仍然|依然|仍是|还在|一直是)\s*(?:in\s+|at\s+|是|在|处于)?\s*([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]{4,})\b")


def _asked_status(question: str) -> str:
    m = _STILL_STATUS.search(question)
    return m.group(1) if m else ""


def asked_pairs(scope: QuestionScope) -> list[tuple[str, str]]:
    """Every asked (service, symptom) pair, in the scope's order. A scope stored before symptoms
    were read per service asks ANY of each service."""
    if scope.symptoms:
        return [(service, sid) for service, sids in scope.symptoms.items() for sid in sids]
    return [(service, ANY) for service in scope.services]
