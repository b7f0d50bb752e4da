"""Propositions, not keywords: what a yes/no question asks to be true, read in code (law 8, law 12).

"Is pricing-service the cause of the checkout 500s?" asks whether pricing-service caused them, not
whether checkout has errors; "isn't coupon-service healthy?" asks whether it is healthy; "did the
v2.4.1 deploy break checkout-service?" asks about a change. A negated question asks the same
proposition (its answer states the proposition's truth outright, so "yes" and "no" cannot be read
two ways). Read once, with the scope (pipeline.verdict.scope), and stored in it; the form row
(pipeline.verdict.form) answers it from the evidence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

from pipeline.core.contracts import Proposition
from pipeline.text.lexicon import NEGATIVE_ASKING, NEGATIVE_ASKING_ZH, OUTAGE_ASKED, RECOVERED, patterns
from pipeline.text.primitives import (
    SCALED,
    SCALES,
    SENTENCE_BREAK,
    SPELLED_NUMBERS,
    arabic,
    extract_entities,
    find_entities,
    keywords,
    normalize,
    shares,
    unquoted,
)

# A suspected cause that is a change rather than a service ("the v2.4.1 deploy", "昨天的配置变更").
CHANGE = re.compile(r"\b(?:deploy\w*|release\w*|rollout|roll-out|upgrade\w*|config\w*|change\w*|version|v\d[\w.]*"
                    r"|commit|commits|patch|hotfix|pr|merge)\b|发布|发版|上线|变更|配置|升级|版本|提交")

# A change's own name: a version or a commit ("v2.4.1", "9f3c2ab").
_CHANGE_NAME = re.compile(r"\bv\d+(?:\.\d+)+\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")


def change_names(text: str) -> list[str]:
    """The versions and commits a text names."""
    return _CHANGE_NAME.findall(normalize(text))


# --- propositions ---------------------------------------------------------------------------------

_NEGATED = re.compile(rf"{NEGATIVE_ASKING.en_alternation}|{NEGATIVE_ASKING_ZH}")
# Words asking whether X takes part in Y at all: a cause pattern reads (X, Y) around them, and
# _INVOLVEMENT then keeps that cause from asking for the one culprit, so both take them from here.
_INVOLVED_EN = "involved in|related to|connected to|linked to|tied to|part of|a factor in"
_INVOLVED_ZH = "关系|关联|联系|有关|相关|有份|掺和|参与"
# (x: the suspected cause, y: what it is asked to have caused), most specific first.
_CAUSE_EN = patterns(
    # "was it the payment-service deploy that caused the order timeouts?", "is it the gateway config that
    # makes orders time out": X set apart by "it ... that" as the one that did it.
    r"\b(?:is|was|isn't|wasn't)\s+(?:it|this)\s+(?:really\s+|just\s+|actually\s+)?(?P<x>.+?)\s+(?:that|which)(?:'s|s| is| was)?\s+"
        r"(?:(?:really|actually)\s+)?(?:caus(?:ed|es|ing)|broke|breaks|breaking|brought down|took down|triggered|triggers"
        r"|made|makes|making|led to|leads to|slowed down|slows down|slowing down|killed|kills|killing)\s+(?P<y>.+)",
    # "replica is minutes behind and thats why orders fail, right?": a statement put forward as why Y happens.
    r"^\W*(?!(?:is|are|was|were|isn't|wasn't|does|did|do|has|have|could|can)\b)(?P<x>[^?]+?)\s*(?:,|;|\s-|\band)?\s*"
        r"\b(?:that's|thats|that is|which is|which's)\s+(?:the\s+reason\s+)?why\s+(?P<y>.+)",
    r"\b(?:is|was|are|were|isn't|wasn't|could|might|can|would)\s+(?P<x>.+?)\s+(?:not\s+)?(?:be\s+)?"
        r"(?:the\s+|a\s+)?(?:root\s+|real\s+|main\s+)?(?:cause|reason|culprit)\s+(?:of|for|behind|why|that)?\s*"
        r"(?P<y>.+)",
    r"\b(?:is|are|was|were|isn't|aren't|wasn't|weren't)\s+(?P<y>.+?)\s+(?:caused by|due to|because of|triggered by|from"
        r"|down to)\s+(?P<x>.+)",
    r"\b(?:is|was|isn't|wasn't|are|were)\s+(?P<x>.+?)\s+(?:causing|behind|responsible for|to blame for|breaking|"
        rf"{_INVOLVED_EN}|"
        r"what(?:'s|s| is| was)? (?:broke|caused|took down|ate|ate up|blew up|brought down|tore through|"
        r"(?!going\b)[a-z]+ing|(?!happen|start|chang)[a-z]{3,}ed))\s+"
        r"(?P<y>.+)",
    # "... at 16:37, any chance thats whats killing checkout": what was said before is put forward.
    r"\b(?P<x>that|this|it)(?:'s|s| is| was)\s+what(?:'s|s| is| was)?\s+(?:(?!going\b)[a-z]+ing|broke|caused|took down"
        r"|(?!happen|start|chang)[a-z]{3,}ed)\s+(?P<y>.+)",
    # "is the gateway flooding payment-service with traffic? thats why its cpu is pegged?": a doing of
    # X's put forward as why the effect after "that's why" happens.
    r"\b(?:is|are|was|were)\s+(?P<x>.+?)\s+[a-z]+ing\s+(?P<y>.+?\b(?:is that|that's|thats|that is|is this)\s+why\s+.+)",
    # "pay-worker pool stuck at 200/200 - is that why /api/pay times out?": what was said before is put forward.
    r"\b(?:is|was|isn't|wasn't)\s+(?P<x>that|this|it)\s+(?:the\s+(?:real\s+|main\s+)?reason\s+)?why\s+(?P<y>.+)",
    # "are the order-service pay failures payment-service's fault?": the effect first, the suspect owns the fault.
    r"\b(?:is|are|was|were|isn't|aren't|wasn't|weren't)\s+(?P<y>.+?)\s+(?P<x>[a-z0-9][\w.-]*?)['’]s\s+fault\b",
    # "if we drain gw-2 will checkout be fine?", "restarting X fixes Y, right?": a remedy on X says X ails Y.
    r"(?P<remedy>)\b(?:if|once|after)\s+(?:we|i|you|they|ops|someone)\s+(?:pull|drain|restart|bounce|kill|remove|roll back|"
        r"take out|cordon|evict|isolate)\s+(?P<x>.+?)(?:,|\s+then)?\s+(?:will|would|should|does|is|are)\s+(?P<y>.+?)\s+"
        r"(?:be\s+)?(?:fixed|fine|ok|okay|good|healthy|recover|back|go away|stop)",
    r"(?P<remedy>)\b(?:pulling|draining|restarting|bouncing|killing|removing|rolling back|taking out|isolating)\s+(?P<x>.+?)\s+"
        r"(?:fixes|will fix|would fix|should fix|solves|will solve|would solve)\s+(?P<y>.+)",
    # "GatewayUpstreamTimeout at 14:20 is basically fallout from the 14:12 ConfigChanged": Y follows from X.
    r"(?P<y>[^,?]+?)\s+(?:is|are|was|were)\s+(?:(?:basically|just|probably|all|really|only|simply)\s+)?"
        r"(?:fallout|a knock-on(?: effect)?|knock-on(?: effect)?|collateral(?: damage)?|a side effect|a result|the result"
        r"|a consequence|downstream)\s+(?:of|from)\s+(?P<x>.+)",
    # "can we blame X for Y?", "pin Y on X": X is put forward as Y's cause.
    r"\bblame\s+(?P<x>.+?)\s+for\s+(?P<y>.+)",
    r"\bpin\s+(?P<y>.+?)\s+on\s+(?P<x>.+)",
    # No asking word at all: "api-gateway behind the order-service 500s?", "checkout 500s because of pricing-service?"
    r"^\W*(?P<x>[^,?]+?)\s+(?:behind|causing|to blame for|responsible for)\s+(?P<y>[^?]+)",
    r"^\W*(?P<y>[^,?]+?)\s+(?:caused by|due to|because of|triggered by)\s+(?P<x>[^?]+)",
    # "the cart slowness isn't down to redis, right?": the effect said (not) to come of X, no asking word before it
    r"(?:^|[,，;；]\s*)(?P<y>[^,，;；?]+?)\s+(?P<link>isn't|isnt|is not|wasn't|wasnt|was not|aren't|arent|are not)"
        r"\s+(?:(?:really|just|all|even)\s+)?(?:caused by|due to|because of|triggered by|down to|from)\s+(?P<x>[^?]+)",
    # "..., the sync can't be what's eating the heap": a clause's subject said (not) to be what does it.
    r"(?:^|[,，;；]\s*)(?P<x>[^,，;；?]+?)\s+what(?:'s|s| is| was)?\s+(?:(?!going\b)[a-z]+ing|broke|caused|took down"
        r"|(?!happen|start|chang)[a-z]{3,}ed)\s+(?P<y>.+)",
    # "redis has nothing to do with the cart slowness, right?", "the flag isn't related to Y": X said to
    # take no part in Y, asked to agree
    rf"(?:^|[,，;；]\s*)(?P<pair>)(?P<x>[^,，;；?]+?)\s+(?P<link>(?:has|have|had)\s+(?:got\s+)?(?:nothing|little|zero)\s+to do with"
        rf"|(?:is|are|was|were)(?:n't|nt| not)\s+(?:{_INVOLVED_EN})|(?:is|are|was|were)\s+unrelated to)\s+(?P<y>[^?]+)",
    # "is it hit by the inv outage?", "was checkout dragged down by pricing": Y said to suffer X
    r"\b(?:is|was|are|were|isn't|wasn't|aren't|weren't)\s+(?P<y>.+?)\s+(?:(?:also|just|really)\s+)?(?:being\s+)?"
        r"(?:hit|hurt|affected|impacted|dragged down|taken down|knocked out|held up|slowed down|starved)\s+by\s+(?P<x>[^?]+)",
    # "does X have anything to do with Y": whether X is involved at all.
    r"\b(?:does|do|did|could|might)\s+(?P<pair>)(?P<x>.+?)\s+(?:have|has)\s+(?:anything|something|much)\s+to do with\s+"
        r"(?P<y>.+)",
    r"\b(?:did|does|has|could|didn't|doesn't|hasn't)\s+(?P<x>.+?)\s+(?:cause|caused|break|broke|broken|"
        r"trigger|triggered|take down|bring down|kill|kick off|kicked off|set off|spark|sparked|lead to|led to|make|made)\s+"
        r"(?P<y>.+)",
)
_CAUSE_ZH = patterns(
    # "库存查询一直 503，网关背锅吗": the effect first, the one asked to take the blame after it.
    r"(?P<y>[^，,。？?]*?)[，,]?\s*(?P<x>[^，,。？?]+?)(?:要|该|得)?(?:背锅|背这个锅|背这口锅|来背锅)(?:吗|么|[?？]|$)",
    r"(?P<y>[^，,。？?]*?)[，,]?\s*(?:这|这个|这口)?锅(?:该|要|得|应该)?由?(?P<x>[^，,。？?]+?)来?背(?:吗|么|[?？]|$)",
    # "cart 变慢跟 redis 没关系吧", "这次故障和 redis-cart 无关吧": one side said to take no part in the other
    # (which side is the effect, read_proposition decides), asked to agree
    r"(?P<pair>)(?P<x>[^，,。？?]+?)(?:跟|和|与|同)(?P<y>[^，,。？?]+?)\s*(?P<link>(?<!有)没(?:有)?(?:什么|啥|多大|太大)?(?:关系|关联|联系)"
        r"|无关|不相干|不相关|扯不上(?:关系)?)",
    # "X 跟 Y 有关系吗", "X 和这次故障有没有关系": whether X is involved in Y at all.
    rf"(?P<pair>)(?P<x>[^，,。？?]+?)(?:跟|和|与|同)(?P<y>[^，,。？?]+?)(?:有没有|有无|是否有|是不是有)?(?:{_INVOLVED_ZH})",
    # "inventory 堆被撑爆，catalog 那个预热有份吗": the effect said first, the one asked whether it took part after it.
    rf"(?P<y>[^，,。？?]+?)[，,]\s*(?P<x>[^，,。？?]+?)(?:也)?(?:有没有|是否|是不是)?(?:{_INVOLVED_ZH})了?(?:吗|么|[?？]|$)",
    # "notify 一直在删无效 token，跟付款失败有关系吗": the happening said first, asked of after the comma.
    rf"(?P<x>[^，,。？?]+?)[，,]\s*(?:这|那|它|这个|那个|这事)?(?:跟|和|与|同)(?P<y>[^，,。？?]+?)"
        rf"(?:有没有|有无|是否有|是不是有)?(?:{_INVOLVED_ZH})",
    # "把这台摘掉结账就好了吧": a remedy put forward on X says X is what ails Y
    r"(?P<remedy>)(?:把|^\W*)(?P<x>[^，,。？?]+?)(?:摘掉|摘了|下掉|下线|干掉|去掉|停掉|关掉|重启|回滚|隔离|踢掉|踢出去|剔除)(?:一下|了)?"
        r"(?:以后|之后|后)?[，,]?\s*(?P<y>[^，,。？?]*?)就(?:能|会)?(?:好|正常|恢复|没事|不报错|不超时)",
    # "是 payment 自己先断了连接，单子才变成 PAY_UNKNOWN 的？": X's doing first, Y only after it
    r"(?:是不是|是)(?P<x>[^，,。？?]+?)(?:自己)?先[^，,。？?]+?[，,]?\s*(?P<y>[^，,。？?]+?)才[^，,。？?]*?的?(?:吗|么|[?？]|$)",
    r"(?P<x>[^，,。？?]+?)(?:是不是|是|不是)(?P<y>[^，,。？?]+?)的(?:根本|根|真正|主要)?(?:原因|根因|元凶|罪魁祸首)",
    # "订单卡在 PAY_UNKNOWN，是因为 order-service 本身有 bug 吗": the effect may be the clause before
    r"(?P<y>[^，,。？?]*?)[，,]?\s*(?:是不是|是|不是)(?:因为|由于|由)(?P<x>[^，,。？?]+?)"
        r"\s*(?:(?:本身|自己)?(?:有\s*bug|有问题|出了?问题|的问题|的\s*bug)|导致|引起|造成)?\s*的?(?:吗|么|[?？]|$)",
    # "Y 是 X 导致的吗": the effect comes first; read as "X 导致 Y" below it would make Y the suspect.
    # The effect may be the clause before ("catalog-service 被驱逐重启，是 inventory OOM 连带出来的吗").
    r"(?P<y>[^，,。？?]*?)(?:是不是|是|不是)(?P<x>[^，,。？?]+?)(?:导致|引起|造成|搞挂|弄挂|搞坏|弄坏|连带出来|连带|带出来|带崩|带挂|搞出来|弄出来|闹出来|整出来|引发)"
        r"的(?:吗|么|吧|[?？]|$)",
    r"(?:是不是|是否|是)?(?P<x>[^，,。？?]+?)把(?P<y>[^，,。？?]+?)(?:搞挂|弄挂|搞坏|弄坏|拖垮|拖慢|拖超时|拖挂|拖死|打挂)了?的?"
        r"(?:吗|么|[?？]|$)",
    # "下单失败肯定是 api-gateway 配置改了吧": the effect first, a sure guess at its cause after it.
    r"(?P<y>[^，,。？?]+?)(?:肯定|一定|应该|多半|八成|估计)是(?P<x>[^，,。？?]+?)(?:的问题|导致的|引起的|造成的)?(?:吧|吗)",
    r"(?:是不是|是否|是)?(?P<x>[^，,。？?]+?)(?:导致|引起|造成|引入|带来|搞挂|弄挂|搞坏|弄坏)了?(?P<y>[^，,。？?]+?)"
        r"(?:的)?(?:吗|么|[?？]|$)",
)
# Asked whether it ever happened, not whether it holds now: a perfect or past question, or 过.
# "has X been restarting" is a state again: it goes on.
_EVENT = re.compile(r"^\W*(?:has|have|had|did|was there|were there)\b(?!.*\bbeen \w+ing\b)|\bever\b"
                    r"|过(?:[了吗么呢]|没有?)?(?:[?？]|$)|(?:重启|崩溃|退出|被杀|被kill)了?没有?\s*(?:[?？]|$)")
# Asks whether the one service named is the cause, the effect left unsaid: "is X the culprit?",
# "is X to blame?", "was it X?", "是不是 X 的问题", "问题出在 X 吗", "根因是 X 吗".
_CULPRIT = re.compile(r"\bthe (?:root[- ])?(?:cause|culprit|reason|problem|issue|source)\b|"
                      r"\b(?:root[- ]cause|culprit|to blame|at fault|responsible)\b|'s fault\b|\bbehind (?:this|it|that)\b"
                      r"|^\W*was it\b|罪魁祸首|元凶|根因|根本原因|原因|引起|导致|造成|问题出在|的问题|怪|背锅|锅")
# Asks whether a service takes part at all, not whether it is the cause ("is X part of this outage?").
_INVOLVEMENT = re.compile(rf"\b(?:{_INVOLVED_EN}|to do with)\b|{_INVOLVED_ZH}")
# Where a question's clauses part, and the asking words that may open the last one.
_BREAKS = (",", "，", ";", "；", "?", "？", " - ")
_ASKING = re.compile(r"\s*(?:is|was|are|were|isn't|wasn't|aren't|weren't)\s+")
_ASKED_LAST = re.compile(r"(?:[\s,，;；-]|\b(?:is|was|are|were|isn't|wasn't|aren't|weren't|did|does|do|didn't|doesn't|"
                         r"has|have|hasn't|could|might|can|would)\b|是不是|是否|是)*$")
# A pronoun asked about, standing for the service named first.
_IT = re.compile(r"\b(?:is|was|isn't|wasn't) it\b|它")
_PRONOUN = re.compile(r"它|他|这|那|这个|那个|这次|那次|这台|那台|这个实例|那个实例|\b(?:it|that|this|they|that one|this one|that box|"
                      r"this box|that pod|this pod)\b")
# "Can we rule out X?" (nothing else asked) asks whether X is clear of the fault: yes when it is fine.
_HEALTHY = re.compile(r"\b(?:normal|normally|healthy|ok|okay|fine|up|working|alright|stable|alive|rule(?:d)? (?:it |them )?out)\b"
                      r"|正常|健康|没问题|没有问题|稳定|没事|排除|活着|存活|在线")
_FAULTY = re.compile(r"\b(?:down|broken|unhealthy|failing|degraded|dead|having (?:problems|issues|trouble)|in trouble)\b"
                     r"|不正常|有问题|挂了|宕机|坏了|出问题|故障")


# A value the question says a setting or a build has: "still on v2.4.0", "upstream_timeout is still 15s".
_ON_VERSION = re.compile(r"\b(?:on|running|at|still)\s+(v\d+(?:\.\d+){1,3})\b|(?:还是|仍是|仍然是|还在)\s*(v\d+(?:\.\d+){1,3})")
_KEY_VALUE = re.compile(r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\s*(?:(?:is|=|:|still|set to|还是|仍是|仍然是|是)\s*)*"
                        r"(\d+(?:\.\d+)?\s*(?:ms|s|sec|seconds|min|minutes|mb|gb|%)?)(?![\w.])")


# An id's key ("order_id=142", "trace_id"): a record named, not a setting's value.
_ID_KEY = re.compile(r"(?:^|_)(?:id|uid|ids|no|num)$")


def _stated_value(norm: str) -> tuple[str, str] | None:
    """(value, key) a yes/no question states for a check against the records, or None."""
    if (m := _ON_VERSION.search(norm)) is not None:
        return next(g for g in m.groups() if g), ""
    if (m := _KEY_VALUE.search(norm)) is not None and not _ID_KEY.search(m.group(1)):
        found = [e for e in extract_entities(m.group(2)) if e.kind in ("quantity", "number", "percentage")]
        return (found[0].value, m.group(1)) if found else None
    return None


# A figure said of what it measures, not of a key: "inv's heap is capped at 8g", "full gc pauses r like
# 10s+ each", "flag only went out to like 10% of users". The words beside it say how it bounds the
# records' figures; "8g" is how people write a heap's size (-Xmx8g).
_GIGS = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*g(?![a-z])")
_BOUNDS: tuple[tuple[Literal["at_least", "at_most", "about"], re.Pattern[str], re.Pattern[str]], ...] = (
    ("at_least", re.compile(r"(?:\b(?:over|above|more than|at least|upwards of|north of)|>=?|超过|高于|大于|不止|至少)\s*$"),
     re.compile(r"^\s*(?:\+|or more|and up|plus\b|以上|多)")),
    ("at_most", re.compile(r"(?:\b(?:under|below|less than|at most|no more than)|<=?|不到|低于|小于|最多)\s*$"),
     re.compile(r"^\s*(?:or less|or under|以下|以内)")),
    ("about", re.compile(r"(?:\b(?:like|about|around|roughly|approx(?:imately)?|almost|nearly)|~|约|大约|大概|差不多)\s*$"),
     re.compile(r"^\s*(?:ish\b|or so\b|左右|上下)")),
)
# A plain number said with a scale ("~12 million keys", "1.2 万单", text.primitives.SCALED) or as the size a setting was set to
# ("连接池开到 100", "pool set to 100"): a figure too, compared as a number.
_SET_VERB = (r"(?:开到|开成|设成|设置成|设为|设置为|调到|调成|配成|配到|配置成|上限是?|\bset (?:to|at)|\bconfigured (?:to|at|as)"
             r"|\bsized (?:at|to)|\blimit(?:ed)? (?:to|at)|\bmax(?:imum)? (?:of|is|at)"
             # or the figure a reading reached: "等待线程排到 500 多", "queue climbed to 400"
             r"|排到|涨到|升到|飙到|冲到|堆到|积压到|达到|\b(?:climbed|spiked|shot|grew|went) (?:up )?to|\bpeaked at|\breached)")
_SET_TO = re.compile(rf"{_SET_VERB}\s*$")
_SET_FIGURE = re.compile(rf"{_SET_VERB}\s*(\d+)(?![\d.%a-z])")
# Or a size said as a number of the cores it allows ("an 8 core limit", "a 4-vcpu pod"): a plain
# figure, held to the number the records give it ("limit 4 cores"), no count of happenings; "core" stays a word
# of what is measured.
_SIZED = re.compile(r"(?<![\w.])(\d+)[\s-]*(?=(?:cores?|vcpus?)\b)")
_STILL = re.compile(r"\bstill\b|\b(?:yet|anymore|back (?:under|below|to|at|down))\b|还是|仍然|依然|还在|仍在")
# A count of happenings said ("就 OOM 了两回", "like a dozen NPEs", "fired 3 times"): held to how many
# records hold them. Spelled numbers as people say them; "同一个病根" / "同一次" is "the same", no count.
_COUNTED = re.compile(r"(?<![0-9a-z.])(?<!同)(?P<n>\d+|[一两二三四五六七八九十]|a couple|a few|a dozen|dozen|one|two|three|four|five|six|ten)"
                      r"\s*(?:回(?!事)|次|条|个|times\b|occurrences?\b)"
                      r"|(?<![\w.])(?P<n2>a dozen|a couple|a few|\d+|two|three|four|five|six|ten)\s+(?P<thing>[a-z][a-z_]{2,}?)s\b"
                      r"|\b(?P<n3>twice)\b")
# A link asked between two things ("是风控规则涨到 1843 条搞的吗", "跟 ERR_TIMEOUT 是一回事吗"): its figures
# describe the suspect, they are not what is asked.
_LINK_ASKED = re.compile(r"搞的|弄的|导致|引起|造成|因为|由于|一回事|\bcaused?\b|\bbecause\b|\bdue to\b"
                         r"|\bsame (?:thing|issue|problem|cause|root cause)\b")
# The asking frame around a stated figure, which no record holds.
_MEASURE_FRAME = frozenset("right correct yeah yep like each every really now rn still only just set "
                           "是不是 是否 超过 已经 现在 对吧 没错 吧 吗 记得 觉得 感觉 每次 这条 那条".split())


def _change_said(text: str) -> str:
    """The change a cause question names, without the words around it ("it the 14:12 config push or icbc being
    slow thats": "the 14:12 config push"): of alternatives, the first that is a change."""
    said = _AROUND_SUSPECT.sub("", text.strip()).strip()
    return next((a.strip() for a in re.split(r"\s+or\s+|还是", said) if CHANGE.search(a)), said)


_AROUND_SUSPECT = re.compile(r"^(?:it|that|this)\s+|\s+(?:that's|thats|that|which|who|really|actually|basically|even|just)$")
# The suspect said not to be it: "(so) it can't be X", "that isn't X", "X isn't (behind Y)"; in Chinese
# "不是 / 不可能是 / 不会是 X ...吧" (with 吗 it asks the opposite: "不是 X 吗" puts X forward).
_DENIED_LEAD = re.compile(r"^\s*(?:(?:so|and|but|then|ok so)\s+)?(?:it|that|this)?\s*(?:can't|cant|cannot|can not|couldn't|"
                          r"couldnt|could not|isn't|isnt|is not|wasn't|wasnt|was not|ain't|aint)\s+(?:be\s+|have been\s+)?")
_DENIED_TAIL = re.compile(r"\s+(?:isn't|isnt|is not|wasn't|wasnt|was not|aren't|arent|are not|weren't|can't|cant|cannot)"
                          r"(?:\s+be)?\s*$")
_RULED_OUT = re.compile(r"^\s*(?:(?:so|and|but|ok so)\s+)?(?:can|could|should|do|did)\s+(?:we|i|you)\s+(?:safely\s+)?"
                        r"rule\s+out\s+(?P<x>.+?)(?:\s+as)?$")
_DENIED_ZH = re.compile(r"(?:(?<!是)不是|不可能是|不会是|不该是)\s*$")
_TAG_ZH = re.compile(r"吧\s*[?？。!！]*\s*$")
# A tag closing the question: "..., yeah?", "..., right?", "- agree?"
_TAG_END = re.compile(r"(?:[,，]|\s[-–—])\s*(?:right|correct|yeah|yea|yep|yes|no|eh|innit|ok|okay|agree|agreed|huh|true)$")
# "..., are they?" closing the question: no pronoun standing for the suspect ("..., is that behind Y?" is one)
_TAG_QUESTION = re.compile(r"[,，]\s*(?:is|was|are|were|does|do|did)(?:n't|nt)? (?:it|they|that)$")
# Joins a premise to what the asker draws from it.
_SO = re.compile(r"[,，]?\s*\b(?:so|which means|that means|meaning|hence|therefore)\b|[,，]?\s*(?:所以|那么|也就是说|意味着)")


def _stated_measure(norm: str, services: Sequence[str]) -> tuple[str, Literal["", "about", "at_least", "at_most"], list[str]] | None:
    """(value, bound, words) of a duration, size or share a yes/no question states of what it names in
    words, or None. Counts are left to the forms that count records."""
    # "maxmemory is 8gb iirc, so 98% is ~7.8G used?": what follows "so" stands on what comes before it;
    # the premise is the figure asked, and a wrong one is the answer
    premise = _SO.split(norm, maxsplit=1)
    if len(premise) == 2 and (held := _stated_measure(premise[0], services)) is not None:
        return held
    said_norm = norm
    norm, loose = shares(arabic(_GIGS.sub(r"\1gb", norm)))
    found = [e for e in find_entities(norm) if e.kind == "percentage" or (e.kind == "quantity" and e.value[-1:] == "s"
                                                                         or e.value.endswith("mb"))]
    counted = [m for m in SCALED.finditer(norm)] or [m for m in _SET_FIGURE.finditer(norm)] or [m for m in _SIZED.finditer(norm)]
    ids = [(e.start, e.end) for e in find_entities(norm) if e.kind == "identifier"]
    times = [m for m in _COUNTED.finditer(norm)
             if not (m.group("thing") and m.group("thing") in ("minute", "second", "hour", "day", "pod", "box", "host", "user"))
             and not any(a <= m.start() < b or a < m.end() <= b for a, b in ids)]  # "order 87 was slow" names an order
    if len(found) == 1:
        figure = found[0]
        start, end, value = figure.start, figure.end, figure.value + ("%" if figure.kind == "percentage" else "")
    elif not found and not counted and len(times) == 1:
        m = times[0]
        said_n = m.group("n") or m.group("n2") or m.group("n3")
        number = float(said_n) if said_n.isdigit() else float(SPELLED_NUMBERS[said_n])
        # the thing counted stays among the words ("a dozen NPEs" counts NPE records)
        start, end, value = m.start(), m.start("thing") if m.group("thing") else m.end(), f"{number:g}x"
    elif not found and len(counted) == 1:
        # "~12 million promo keys", "连接池开到 100": a plain number, scaled or set as a setting's size
        m = counted[0]
        number = float(m.group(1)) * (SCALES[m.group(2)] if m.re is SCALED else 1.0)
        start, end, value = m.start(1), m.end(), f"{number:g}" if number < 1e15 else ""
    else:
        # "OOM'd four times, twice before the restart": a count, then how its times fall in a clause after it
        first = re.split(r"[,，;；]", said_norm, maxsplit=1)
        if len(first) == 2 and (held := _stated_measure(first[0], services)) is not None and held[0].endswith("x"):
            return held
        # "客服说一半单都下不了。5xx 比例冲到三成了吗": of figures in several sentences, the one asking states the figure asked
        sentences = [s for s in SENTENCE_BREAK.split(said_norm) if s.strip(" ?？!！.。")]
        return _stated_measure(sentences[-1], services) if len(sentences) > 1 else None
    before, after = norm[:start], norm[end:]
    if value.endswith("x"):
        # "OOM'd twice, once each side of the restart": a clause after the count tells how the times fall,
        # its words ("restart") no part of what was counted
        after = re.split(r"[,，;；]", after, maxsplit=1)[0]
    bound: Literal["", "about", "at_least", "at_most"] = ""
    for b, lead, tail in _BOUNDS:
        if lead.search(before) or tail.search(after):
            bound = bound or b
            before, after = lead.sub("", before), tail.sub("", after)  # "like 10s+": both are the bound's words
    if not bound and start in loose:
        bound = "about"  # "三成", "a quarter of": a round share, not a reading to the tenth
    said = _SET_TO.sub(" ", before) + " " + after
    for s in services:
        said = said.replace(normalize(s), " ")
    # a status said ("504") is a word of what is measured; other bare numbers are not
    words = sorted(w for w in keywords(said) if w not in _MEASURE_FRAME and (not w.isdigit() or len(w) == 3))
    if not words or not value:
        return None
    return value, bound, words


SERVICE_SUFFIXES = (
    "service", "svc", "api", "gateway", "db", "cache", "worker", "consumer", "producer", "server", "proxy",
    "queue", "job", "scheduler", "broker", "backend", "frontend", "app", "web", "cron", "daemon",
)
# A service by a short word and "svc" apart ("pay svc", "notify svc").
NICKNAME = re.compile(r"(?<![a-z0-9_.\-/])(?!(?:which|what|that|this|the|any|each|some|every|one|other|whose)\s)[a-z]{3,}\s+svc\b")
_SHORT_NAME = re.compile(rf"(?<![a-z0-9_.\-/])[a-z]{{3,}}(?:[-_]|\s+)(?:{'|'.join(SERVICE_SUFFIXES)})(?![a-z0-9_\-])")


def nicknamed(name: str, catalogue: Iterable[str]) -> str:
    """The service a shortened name stands for ("pay-worker", "pay svc" -> payment-service,
    "notify svc" -> notification-service): the one whose stem the name's first word abbreviates,
    when only one does; else the name itself. A stem written whole ("order-worker") is no nickname:
    it may name a component the world does not hold."""
    head = re.split(r"[-_\s]", name)[0]
    if len(head) < 3:
        return name
    stems = {s: s.removesuffix("-service") for s in catalogue if s.endswith("-service")}
    hits = [s for s, stem in stems.items() if stem != head and stem.startswith(head[:max(3, len(head) - 1)])]
    return hits[0] if len(hits) == 1 else name


# Words that frame a suspect rather than name it ("the real issue", "some dns problem", "那个问题").
_THING_FRAME = frozenset("real root main actual actually just really some any whole thing stuff issue issues problem "
                         "problems trouble maybe probably possibly like kinda right yeah cause reason culprit "
                         "one ones other others both either combo combination together all "
                         "问题 原因 这个 那个 这次 那次 什么 就是 其实 根因".split())
_CLOCK = re.compile(r"^\d{1,2}[:.]\d{2}(?::\d{2})?$|^\d+$")


def _thing_words(text: str, services: Sequence[str]) -> set[str]:
    """The words naming a suspect that is no service and no change ("dns", "replica ... behind"): its
    content words, the framing words, services' names, times and figures aside."""
    norm = normalize(text)
    for s in filter(None, services):
        norm = norm.replace(normalize(s), " ")
    stems = {p for s in filter(None, services) for p in normalize(s).split("-")}
    # "orders" of order-service, "db" of orders-db: the service's own name, said otherwise
    # an instance ("order-9a1f-3") is its service's, read by the instance forms, no thing
    boxes = {e.value for e in find_entities(norm) if e.kind == "instance"}
    return {w for w in keywords(norm) if w not in _THING_FRAME and w not in stems and w.removesuffix("s") not in stems
            and not _CLOCK.match(w) and not _PRONOUN.fullmatch(w) and w not in boxes}


def _stem_of(text: str, catalogue: Sequence[str]) -> list[str]:
    """The one catalogue service every content word of the text is a part of the name of ("redis" of
    redis-cart), or none."""
    words = keywords(normalize(text)) - _THING_FRAME
    owners = {s for s in catalogue for w in words if w in normalize(s).split("-")}
    return list(owners) if len(owners) == 1 and words and all(
        any(w in normalize(s).split("-") for s in owners) for w in words) else []


_INCIDENT = re.compile(r"\b(?:this|the) (?:outage|incident|mess)\b|这次故障|这个故障|这次事故|这波故障|这次的问题")


def _suspect_rank(side: str, services: Sequence[str], catalogue: Sequence[str], effect: Callable[[str], bool]) -> int:
    """How surely one side of "X has nothing to do with Y" is the suspect: a name alone ("redis") most,
    then a side naming no service (a thing or a change: "the export feature"), then a service said with
    more words (its effect: "cart 变慢"); the incident itself ("这次故障") is never the suspect."""
    if _INCIDENT.search(side):
        return 0
    names = [*services, *catalogue]
    words = keywords(normalize(side)) - _THING_FRAME
    if words and all(any(w == normalize(s) or w in normalize(s).split("-") for s in names) for w in words):
        return 3
    return 1 if _services_in(side, services) or _stem_of(side, catalogue) or effect(side) else 2


def _services_in(text: str, services: Sequence[str]) -> list[str]:
    """The asked services named in a part of the question, in full, by a "-service" stem or by a
    nickname ("pay-worker" of payment-service)."""
    norm = normalize(text)
    # a name the catalogue holds whole ("orders-db") is that service, no nickname of another ("order-service")
    nicknames = {nicknamed(m.group(0), services) for m in _SHORT_NAME.finditer(norm)
                 if m.group(0) not in {normalize(s) for s in services}}
    return [s for s in services if normalize(s) in norm or s in nicknames
            or (s.endswith("-service") and re.search(rf"(?<![a-z0-9_-]){re.escape(s.removesuffix('-service'))}(?![a-z0-9_])", norm))
            # "the gateway" is api-gateway: the one service of that role
            or (s.endswith("-gateway") and re.search(r"(?<![a-z0-9_-])(?:gateway|gw)(?![a-z0-9_-])", norm))]


def read_proposition(question: str, services: Sequence[str], *, asked_nothing: bool, denies: bool = False,
                     fine: bool = False, catalogue: Sequence[str] = (), things: bool = True,
                     effect: Callable[[str], bool] = lambda _: False,
                     names: Callable[[str], list[str]] = lambda _: []) -> Proposition:
    """The proposition a yes/no question asks: a cause ("is X the cause of Y"), else, when no
    symptom was asked (`asked_nothing`), a state of the first service ("is X normal / down"), else
    the asked symptoms. `denies`: the proposition itself holds a negation ("X 是不是没有报错", "is
    X not erroring"), so it asserts the symptom's absence; `fine`: it asks whether the symptom is
    normal ("X 的 CPU 没问题吧"), the same assertion (pipeline.verdict.scope reads both). `catalogue`:
    every service the world holds, whose names are no words of a thing blamed ("the orders db"); `things`
    False reads no suspect as a thing (the caller found a service in its words: "网关"); `effect`: whether
    words say a symptom ("the login errors"), which makes them no suspect beside a thing; `names`: the
    services a caller reads in words this reader does not ("the inv outage")."""
    norm = normalize(question)
    negated = bool(_NEGATED.search(norm))
    thing: Proposition | None = None
    for pattern in (*_CAUSE_EN, *_CAUSE_ZH):
        m = pattern.search(norm)
        if m is None:
            continue
        (x_start, x_stop), (y_start, y_stop) = m.span("x"), m.span("y")
        if "pair" in m.groupdict() and _suspect_rank(m.group("y"), services, catalogue, effect) > _suspect_rank(
                m.group("x"), services, catalogue, effect):
            # "cart 变慢跟 redis 没关系": two sides put together, either may be the suspect
            (x_start, x_stop), (y_start, y_stop) = (y_start, y_stop), (x_start, x_stop)
        x, y = norm[x_start:x_stop], norm[y_start:y_stop]
        # The suspect is the last clause before the link ("user-service is spamming warnings, is that
        # behind Y": "that"), and "it" or "that" is what was named before it.
        # the question's own end, a tag after it too ("..., yeah?"), is no break before the suspect
        x = _TAG_END.sub("", x.rstrip("?？!！.。 ")).rstrip("?？!！.。 ")
        if not norm[x_stop:].strip("?？!！.。 "):
            x = _TAG_QUESTION.sub("", x)
        x_end = x_start + len(x)
        x_at = x_start + max((x.rfind(c) + len(c) for c in _BREAKS if c in x), default=0)
        asked = _ASKING.match(norm, x_at)
        x_at = asked.end() if asked else x_at
        x = norm[x_at:x_end]
        # "so it can't be the warmup behind Y, right?", "redis isn't behind Y, right?": the suspect denied
        # "can we rule out X as what kicked off Y?" asks to agree that X is not the cause, as a denial does
        denial = _DENIED_LEAD.match(x) or _DENIED_TAIL.search(x) or _RULED_OUT.match(x)
        denied = bool(denial) or bool(_DENIED_ZH.search(norm[:x_start]) and _TAG_ZH.search(norm)) \
            or "link" in m.groupdict()
        x = _DENIED_TAIL.sub("", _DENIED_LEAD.sub("", _RULED_OUT.sub(r"\g<x>", x)))
        named = x
        if _PRONOUN.fullmatch(x.strip()):
            said = _ASKED_LAST.sub("", norm[:x_at])
            last = said[max((said.rfind(c) + len(c) for c in _BREAKS if c in said), default=0):]
            named = last if _services_in(last, services) else said
        # "down to redis": a word that is one catalogue service's name cut short ("redis" of redis-cart)
        subjects = _services_in(named, services) or _stem_of(named, catalogue) or names(named)
        if not subjects and named is not x and len(services) == 1:
            # "网关 ... 落在 gw-5c8b-2 上，把这台摘掉": the one service asked, named in words _services_in cannot read
            subjects = list(services)
        targets = _services_in(y, services)
        change = bool(CHANGE.search(x))
        if not subjects and not change:
            # "is DNS the cause of the order failures?": a suspect that is no service and no change is a
            # thing, judged by what the records say of it, unless a later reading names a service
            words = _thing_words(named, [*services, *catalogue])
            if things and thing is None and "remedy" not in m.groupdict() and words:
                said = _AROUND_SUSPECT.sub("", named.strip()).strip()
                thing = Proposition(kind="cause", subject=said, subject_kind="thing", phrase=said, words=sorted(words),
                                    target=targets[0] if targets else "", negated=negated, denied=denied)
            continue
        if thing is not None and thing.phrase in x:
            # a wider reading of the same words ("redis-cart 变慢应该不是预热任务" of "预热任务") is no better suspect
            return thing
        # "is checkout-service the cause of the checkout 500s?": the effect is the subject's own
        # symptom, a target of its own, not "the incident" that involvement questions ask about.
        own = next((s for s in subjects if s in targets), "")
        target = next((s for s in targets if s not in subjects or change), "") or own or next(
            (s for s in services if s not in subjects), "")
        if change:
            target = target or (subjects[0] if subjects else "")
        return Proposition(kind="cause", subject=_change_said(norm[x_start:x_end]) if change else subjects[0],
                           subject_kind="change" if change else "service", target=target, negated=negated,
                           phrase="" if change else x.strip(),
                           culprit=not target and not change and not _INVOLVEMENT.search(norm),
                           remedy="remedy" in m.groupdict(), denied=denied)
    if thing is not None:
        return thing
    # "is X normal and is Y normal?" asks it of every named service: subject "" (all of them).
    subject = services[0] if len(services) == 1 else ""
    # A pasted record ("`order_id=142 payment failed`") is the record's words, not a value the asker states.
    stated = _stated_value(normalize(unquoted(question)))
    if stated is not None:
        return Proposition(kind="value", subject=subject, value=stated[0], key=stated[1], negated=negated)
    measured = None if _LINK_ASKED.search(norm) else _stated_measure(normalize(unquoted(question)), services)
    if measured is not None:
        return Proposition(kind="value", subject=subject, value=measured[0], bound=measured[1], measure=measured[2],
                           latest=bool(_STILL.search(norm)), negated=negated)
    # "has the cpu come back down?": a symptom said to have passed asks whether it is fine; its "down" is no outage
    state = RECOVERED.regex.sub(" fine ", norm)
    it = _IT.search(norm)
    before = sorted((at, s) for s in services if 0 <= (at := norm.find(normalize(s))) < (it.start() if it else -1))
    if before:
        subject = before[0][1]  # "order-service's inventory checks fail, is it down?": it is the one named first
    # "X throwing 500s, is it down?": the symptom said first is context; what is asked is the outage
    # (or the culprit), not whether the 500s show.
    if subject and OUTAGE_ASKED.search(state) and not denies:
        return Proposition(kind="state", subject=subject, outage=True, negated=negated)
    if subject and _CULPRIT.search(norm):
        return Proposition(kind="cause", subject=subject, culprit=True, negated=negated)
    expects: Literal["healthy", "faulty"]
    if services and asked_nothing:
        expects = "faulty" if _FAULTY.search(state) or not _HEALTHY.search(state) else "healthy"
        if denies and not _FAULTY.search(state):  # "is X not healthy?"
            expects = "faulty" if expects == "healthy" else "healthy"
        return Proposition(kind="state", subject=subject, expects=expects, negated=negated,
                           outage=bool(services) and expects == "faulty" and OUTAGE_ASKED.search(state))
    expects = "healthy" if denies != fine else "faulty"
    return Proposition(kind="symptom", subject=subject, expects=expects, negated=negated,
                       event=bool(_EVENT.search(norm)))
