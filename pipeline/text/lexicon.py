"""Words that say how sure a sentence is, whether it states a cause, and whether it denies: zh and en.

The offline verifier, the composer's two guards, the offline diagnosis and the question reader all
ask these questions of text; they read the lists here, so a word added for one is seen by all.
Chinese words match anywhere (the script has no word boundaries); English words and phrases match
whole, so each inflection a list means is written out ("suspect", "suspected"). A form no fixed
phrase spells ("makes X miss", "pushed the call past") is one of a list's `patterns`. A reader whose
question is narrower (a sentence that hedges *or* names a gap) joins lists with `pattern`.
The gatekeeper's negation terms are not here: they are rule parameters a tuner edits
(rules/metadata.yaml, law 7).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class Words:
    zh: tuple[str, ...]
    en: tuple[str, ...]
    # Phrases that begin with one of the words yet do not mean it ("could not" is no guess).
    unless: tuple[str, ...] = ()
    # Regular expressions over normalized text for forms with a gap in them ("makes X miss"),
    # which no list of fixed phrases can spell.
    patterns: tuple[str, ...] = ()

    @property
    def zh_alternation(self) -> str:
        """The Chinese words as a regular-expression alternation, longest first so a phrase wins over its head."""
        return "|".join(re.escape(w) for w in sorted(self.zh, key=len, reverse=True))

    @property
    def en_alternation(self) -> str:
        """The English words as an alternation that matches whole words only."""
        return rf"\b(?:{'|'.join(re.escape(w) for w in sorted(self.en, key=len, reverse=True))})\b" if self.en else ""

    @property
    def alternation(self) -> str:
        words = "|".join(p for p in (self.zh_alternation, self.en_alternation, *self.patterns) if p)
        if not self.unless:
            return words
        return rf"(?!(?:{'|'.join(re.escape(w) for w in self.unless)})\b)(?:{words})"

    @cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.alternation)

    def search(self, norm: str) -> bool:
        """Whether normalized text (pipeline.text.primitives.normalize: lower case) holds one of the words."""
        return self.regex.search(norm) is not None


def pattern(*lists: Words, extra: str = "") -> re.Pattern[str]:
    """One pattern over several lists, with a reader's own regular expression beside them."""
    return re.compile("|".join([*(w.alternation for w in lists), *([extra] if extra else [])]))


def patterns(*sources: str) -> tuple[re.Pattern[str], ...]:
    """A reader's forms of one question, compiled in the order given (the first that matches wins)."""
    return tuple(re.compile(s) for s in sources)


# A piece of work a service runs on its own, again and again: "the 库存同步 batches", "the nightly
# backup job", "对账任务". A why of one asks of that work's records, not of the service's symptom.
JOB = Words(
    zh=("同步", "批次", "任务", "定时任务", "跑批", "备份", "对账"),
    en=("sync", "syncs", "batch", "batches", "job", "jobs", "cron", "cronjob", "backup", "backups"),
)
# Says the symptom is to come, not here: "证书即将过期: 21天", "expected to fill up within 4 days".
# A record in these words forecasts a fault; it shows neither the state nor the event.
FORECAST = Words(
    zh=("即将", "将要", "快要", "预计", "预测", "将在"),
    en=("soon", "expiring", "expires in", "will expire", "will be full", "will run out", "will fill", "expected to",
        "predicted to", "forecast", "upcoming", "approaching", "nearing"),
)
# Asks whether a service is unavailable, not merely faulty: "is orders-db down?", "它挂了吗".
OUTAGE_ASKED = Words(
    zh=("宕机", "挂了", "挂掉", "不可用", "下线", "离线", "连不上", "崩了", "崩掉"),
    en=("down", "dead", "offline", "unreachable", "unavailable", "not responding"),
)
# Says a service is unavailable: what answers an OUTAGE_ASKED question yes. A slow query, a full
# memory or a raised error rate says the service is degraded, which is not this.
OUTAGE = Words(
    zh=("不可用", "宕机", "挂了", "挂掉", "无法连接", "连接被拒绝", "拒绝连接", "无响应", "崩溃", "下线", "离线", "探活失败",
        "健康检查失败"),
    en=("down", "unavailable", "unreachable", "not responding", "no response from", "connection refused", "refused",
        "crashloopbackoff", "crashed", "oomkilled", "killed", "offline", "dead", "health check failed",
        "liveness probe failed", "readiness probe failed", "no healthy upstream", "instancedown", "targetdown"),
)
# Says the statement is a guess: "可能是连接池耗尽", "possibly the pool".
HEDGE = Words(
    zh=("可能", "也许", "或许", "大概", "疑似", "推测", "推断", "猜测", "我猜", "估计", "应该不是", "应该没", "看起来", "看上去", "似乎",
        "好像", "八成", "多半", "大概率", "倾向于", "不排除", "可疑", "不像", "我的判断", "我判断", "我的看法"),
    en=("possibly", "possible", "possibility", "probably", "maybe", "may", "might", "could", "likely", "unlikely",
        "perhaps", "suspect", "suspected", "hypothesis", "hypotheses", "hypothesize", "hypothesized", "plausibly",
        "plausible", "presumably", "apparently", "seems", "seem", "seemed", "seemingly", "looks like", "look like",
        "appears to", "appear to", "i think", "guess", "guesses", "guessing", "my hunch", "hunch",
        "i'd bet", "i would bet", "i'd put", "i would put", "i'd say", "i would say", "odds are", "chances are", "my money is on", "my money's on",
        "not certain", "not sure", "not entirely sure", "uncertain", "unsure", "leaning towards", "leaning toward",
        "my reading", "inference", "inferring", "lean towards", "lean toward", "i lean", "i'd pick", "i would pick",
        "theory", "theories", "unproven", "candidate", "candidates", "suggests", "suggesting", "points to", "pointing to", "hints at"),
    # "search-service could not relocate the shard" reports a failure; UNSETTLED reads "could not" as a gap.
    unless=("could not",),
    patterns=(
        # "none of these look connected": a judgement by appearance
        r"\blook(?:s|ed)?\s+(?:\w+\s+)?(?:connected|related|unrelated|linked|relevant|irrelevant|benign|harmless)\b",
        # "as far as the records show", "as far as I can tell": what the writer sees, not what is
        r"\bas far as (?:the|these|i|we)\b[^,.;]{0,30}?\b(?:show|shows|showed|see|tell)\b",
        # "应该是", "应该主要是 Redis 这边拖的", "应该就是 500 的来源"
        r"应该(?:主要|就|也|都|还|只)?是",
    ),
)
# Says something is not established: a gap, not a conclusion ("尚未确认根因", "no root cause yet").
UNSETTLED = Words(
    zh=("无法", "尚无", "尚未", "未能", "不能", "未确认", "未证实", "没有", "缺少", "不确定", "待确认", "不得", "未知"),
    en=("cannot", "can't", "couldn't", "could not", "not yet", "unconfirmed", "not confirmed", "no reliable", "unknown",
        "missing", "insufficient", "not been", "no root cause", "unverified", "not established"),
)
# Names a gap in the evidence, which a sentence may do and still assert ("there are gaps, but the root
# cause is X"): it hedges the lines under a heading, not a causal claim beside it.
GAP = Words(zh=("缺口",), en=("gap", "gaps", "no sign", "no signs", "no logs"))
# Says the records do not show something: "no record ties the two", "the logs don't confirm it". A
# clause in these words admits a gap; it states no fact to check.
UNSHOWN = Words(
    zh=("未显示", "没有显示", "并未显示", "没有记录", "未记录", "无记录", "未证实", "无法证实", "无法确认", "日志未", "日志没有",
        "没有证据", "无证据", "尚无证据", "没有直接", "没直接", "看不出", "没写", "没有写", "不好判断", "无从判断", "日志里没有",
        "日志中没有", "没有分析", "没分析", "未分析", "看不到", "无从得知", "不得而知", "无法得知", "算不出", "证明不了", "没有答案",
        "待确认", "有待证实", "没有说明", "没说明", "未说明"),
    en=("no record", "no records", "no evidence", "not shown",
        "don't show", "doesn't show", "do not show", "does not show", "don't confirm", "doesn't confirm",
        "do not confirm", "does not confirm", "not confirmed", "unconfirmed", "not proven", "ties the two",
        "no direct evidence", "no line", "no log line", "no single line", "not verified", "don't say",
        "doesn't say", "do not say", "does not say", "didn't say", "not something a log", "not recorded",
        "isn't recorded", "wasn't recorded", "not something a line", "nothing says", "not stated", "isn't stated",
        "is not stated", "can't confirm", "cannot confirm", "can not confirm", "doesn't log", "does not log",
        "don't log", "didn't log", "not logged", "isn't logged", "aren't logged", "wasn't logged", "weren't logged",
        "to be confirmed", "needs confirming", "needs confirmation"),
    # "isn't in the WARN/ERROR lines", "not visible in the error logs", "nothing in the WARN/ERROR output
    # says", "I haven't analysed the bank side", "nobody has characterised what holds them"
    patterns=(r"\b(?:isn't|is not|aren't|are not|not)\s+(?:visible\s+)?in\s+(?:the|these|those|this|our|my)\s+"
              r"(?:[\w/]+\s+){0,2}(?:logs?|lines|records|alerts|output)\b",
              # "the logs don't pair them one to one", "the records never name the pod": what the writer read lacks it
              r"\b(?:logs?|records|lines|output)\s+(?:don't|do not|doesn't|does not|didn't|did not|never|can't|cannot)\s+\w",
              # "none of these is confirmed by a log line"
              r"\bnone of (?:these|those|them|this|it)\b[^.;]{0,30}?\b(?:is|are|was|were)\s+(?:confirmed|shown|proven|stated|"
              r"recorded|logged|established)\b",
              r"\bnothing in the\s+(?:[\w/]+\s+){0,2}(?:logs?|lines|records|alerts|output)\s+(?:says|shows|states|explains)\b",
              r"\b(?:haven't|have not|hasn't|has not|not|nobody has|no one has|never)\s+(?:yet\s+|really\s+)?"
              r"(?:analy[sz]ed|characteri[sz]ed|looked into|dug into|investigated|checked)\b",
              # "no data on total traffic", "I have no per-pod request counts", "the ratio can't be rebuilt
              # from the log count", "why the pool stays full isn't written anywhere", "没有这方面的数据"
              r"\bno\s+(?:[\w/-]+\s+){0,3}?(?:data|numbers|counts?|figures|breakdown)\b",
              r"\bcan(?:'t|not|\s+not)\s+be\s+(?:rebuilt|reconstructed|turned into|derived|computed|calculated|"
              r"worked out|determined|established|inferred)\b",
              r"\b(?:isn't|is not|wasn't|was not|not)\s+written\s+(?:anywhere|down)\b",
              r"没有[^，。；,;]{0,20}?(?:数据|统计|分解)",
              # "记录里也没有", "日志没说": what the writer read lacks it
              r"(?:日志|记录)(?:里|中)?(?:也|都|并|还)?(?:没有|没)",
              r"\bneither\b[^.;]{0,40}\b(?:is|are|was|were)\s+(?:stated|shown|recorded|written|logged)\b"),
)
# A happening a question may presume of a system (a why of it asks what brought it about): a failover,
# a restart, a rollback, a migration, a scaling.
HAPPENING = Words(
    zh=("主从切换", "切换", "切主", "故障转移", "重启", "回滚", "回退", "还原", "迁移", "扩容", "缩容", "下线", "重新部署",
        "重建索引", "降级", "重跑", "重推", "清缓存", "重新加载"),
    en=("failover", "failed over", "fail over", "switchover", "switched over", "restart", "restarted", "rebooted",
        "rollback", "rolled back", "revert", "reverted", "migrated", "migration", "scaled", "scaled up", "scaled down",
        "scale out", "scale-out", "scaled out", "redeployed", "reindexed", "downgraded", "promoted", "rerun", "re-run",
        "reran", "re-ran", "purge", "purged", "flush", "flushed", "reload", "reloaded", "rebalance", "rebalanced"),
)
# States that one thing brought about another, in a fixed phrase or a causative form: "makes X miss
# its deadline", "is what holds the pool", "pushed the call past the limit".
CAUSAL = Words(
    zh=("导致", "造成", "引起", "引发", "归因", "原因是", "由于", "因为", "问题出在", "根源", "使得", "致使", "以致", "从而",
        "拖慢", "拖垮", "拖累", "带来的", "所致", "才导致"),
    en=("because", "cause", "causes", "caused", "causing", "caused by", "due to", "led to", "lead to", "leads to",
        "leading to", "resulted in", "results in", "result in", "result of", "responsible for", "behind the",
        "is why", "explains", "explain", "triggered by", "triggering", "driven by", "owing to", "because of",
        "as a result"),
    patterns=(r"\b(?:is|was|are|were|be)\s+what\b", r"\bpush(?:es|ed|ing)?\b[^.;,]{0,40}?\b(?:past|over|beyond)\b",
              r"\bmak(?:e|es|ing)\s+(?:[\w\-'./]+\s+){1,3}?(?:miss|fail|time|slow|stall|wait|exceed|hang|crash|drop)",
              # "这就是 X 触发的原因", "堆打满就是这 8.6% 失败率的直接原因": names what X came from
              r"(?:就是|正是|才是)[^，。,;；]{0,40}?的(?:直接|主要|真正|根本)?(?:原因|主因|起因)",
              # "ICBC 通道变慢让 payment-service 处理超过了 5 秒": a causative 让 / 使 before what it brought about
              r"(?:让|使)[^，。,;；]{1,40}?(?:超过|超时|变慢|失败|报错|挂了|卡住|打满|耗尽)",
              # "堆就是被 StockSnapshotCache 撑爆的": a passive 被 naming what filled, broke or used it up
              r"被\s*[^\s，。,;；][^，。,;；]{0,39}?(?:撑爆|撑满|打满|打爆|挤爆|挤满|写满|占满|吃满|塞满|压垮|拖垮|耗尽|搞挂|打挂)"),
)
# Says who wrote a record: "payment-service logged ...", "order-service 日志显示 ...". The service
# before one of these words is the claim's speaker (pipeline.text.speaker).
SPEAKING = Words(
    zh=("日志显示", "日志记录", "日志里", "日志中", "日志", "记录了", "记录", "记了", "记下", "报错", "报了", "报出", "上报", "打印",
        "打了", "抛出", "抛了"),
    en=("logged", "logs", "log", "logging", "reported", "reports", "reporting", "raised", "raises", "says", "said",
        "wrote", "writes", "printed", "prints", "emitted", "emits", "complained", "threw", "throws", "throwing"),
)
ROOT_CAUSE = Words(zh=("根因", "根本原因"), en=("root cause", "root-cause"))
# How a record itself states a cause (rare in logs; a stack's "Caused by:", an alert's "原因: 节点维护驱逐",
# normalized to a half-width colon): narrower than CAUSAL,
# whose "cause" or "explains" a log line uses of other things.
STATED_CAUSE = Words(zh=("导致", "由于", "原因是", "原因:", "引起", "造成"), en=("caused by", "due to", "because"))
# Denies: "不", "no errors".
NEGATION = Words(zh=("不", "没", "无", "未"), en=("no", "not", "never", "without", "zero"))
# Denies that something is there: "未发现超时", "没有报错". "无法" (cannot) is no denial; readers
# put `(?!法)` after "无".
ABSENCE = Words(zh=("未出现", "未发现", "没有出现", "没有", "不存在", "未见", "未观察到", "并未", "从未", "无任何", "无"),
                en=NEGATION.en)
# A question put in the negative ("isn't X down?", "is X not down?") asks for the thing it names.
NEGATIVE_ASKING = Words(zh=(), en=("isn't", "aren't", "wasn't", "weren't", "doesn't", "don't", "didn't", "hasn't",
                                   "haven't", "isnt", "not"))
# The Chinese for it is a negation closed by a question particle ("X 不是在报错吗", "没有…吗") or
# "难道": a pattern, not a list.
NEGATIVE_ASKING_ZH = r"不是.*[吗么]|难道|没有.*[吗么]"
# Asks yes or no, with a negation inside that denies nothing: "是不是", "有没有".
ASKING_ZH = Words(zh=("是不是", "有没有", "是否", "不是"), en=())
# Denies inside a yes/no question ("X 是不是没有报错"); "不" only before a word for normal, as the
# other 不 of a question ask ("不是") or name a symptom ("不通").
DENYING_ZH = r"没有|没|未|不再|不(?=正常|健康)"
# Says all is well; the first three deny a problem with a negation of their own.
FINE_BY_NEGATION = Words(zh=("没问题", "没有问题", "没事"), en=())
FINE = Words(zh=(*FINE_BY_NEGATION.zh, "正常", "健康"), en=("normal", "healthy", "ok", "okay", "fine"))
# Says a symptom had passed by the time of asking ("has the cpu come back down", "后来跑顺了没"): asks,
# as FINE does, whether the thing is well now. Not "下来" alone (a success rate "掉下来" is a fault), nor
# "went down" (a service that went down is out).
RECOVERED = Words(
    zh=("消化完", "消化掉", "追上", "降下来", "降下去", "降回", "回落", "回到正常", "恢复正常", "恢复了", "好了没", "好了吗", "好转", "跑顺", "顺了",
        "稳住", "稳定下来", "消停", "缓过来", "下来了吧", "下来了没", "下来没"),
    en=("come back down", "came back down", "back down", "come down", "came down", "recovered", "settled down", "calmed down", "cooled down", "cooled off", "running smoothly", "back on track",
        "ok again", "fine again", "healthy again", "normal again", "drained", "drained out", "cleared out", "caught up"),
    # "后来补发成功没", "重试最后成功了吗": what failed went through later; not a success rate ("成功率")
    patterns=(r"(?:后来|最后|最终|之后|重试|补发|重发|再试)[^，,。？?]{0,6}成功(?!率)",),
)
# Claims certainty: a demoted claim may name a cause, never this ("这是唯一根因", "the only cause").
CERTAINTY = Words(
    zh=("唯一", "根因", "根本原因", "一定", "必然", "肯定", "毫无疑问", "确定是"),
    en=("root cause", "only cause", "sole cause", "the only", "definitely", "certainly", "undoubtedly", "without doubt"),
)
# Says a statement is established: "已确认", "root cause is". A pattern: the English words match
# whole (the queue grew "indefinitely" is no certainty, "unconfirmed" none either), "confirmed"
# counts unless "not " stands before it, "确认是" unless "否" follows it.
# Says a figure stayed within its bounds ("slow request within SLO", "未超过阈值"): no fault shown.
WITHIN_BOUNDS = re.compile(r"\bwithin (?:the )?(?:slo|sla|threshold|limits?|budget)\b|未超(?:过|出)?(?:阈值|slo)|正常范围")
CONFIRMED = re.compile(
    r"(?<!not )\bconfirmed\b|已确认|已证实|确认是(?!否)|证实了|\bestablished\b|\broot cause is\b|根因是|\bdefinitely\b"
)
