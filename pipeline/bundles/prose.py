"""A foreign agent's prose answer read as an Executor V2 output, so the same chain judges it.

Only for imported traces (docs/deploy.md#audit-your-own-agent): the workbench's own diagnosis
must write Executor V2 JSON (law 3); a foreign agent answers in prose, and its answer is what
is audited, never what is shown. Each sentence or list item is one statement:

- a question (its answer, after it, is read), a bare yes or no, a heading ("Findings:"), a title on its
  own line ("复盘（草稿）", "IC update — checkout 500s"), a name alone ("Component: payment-service"), who
  works on it ("Owner: ..."), the status of the work ("Status: investigating") or a command the writer ran
  ("$ grep -c ...": what it printed is read) is skipped;
- a recommendation ("建议 ...", "check ...") is a recommended action, not a fact;
- a hedged one ("可能", "might") is a hypothesis: a guess that says so is allowed, and not refused
  as a fact nothing backs. Its clauses before the hedge that neither hedge nor link are its basis,
  claims like any other (a changed number in them is caught); a clause saying the records do not
  show something ("though no record ties the two") is what it needs, and missing_info;
- a part of a sentence saying that the records do not show something ("no data on traffic",
  "日志里看不到") is missing_info, its other parts claims;
- anything else is a claim, one per clause as the meaning guard splits them (a causal sentence
  whole, of type root_cause: its point is the link; a sentence whose split drops a clause holding a
  fact whole), bound to the records behind it (a word meets its synonyms across zh/en):
  a quote it makes is bound where the gatekeeper's matcher places it best (an invented quote
  then fails the evidence rules); otherwise the record sharing most of its words and entities,
  quoted whole, plus for each id, number or code it names that this record lacks, the record that
  holds it. A service name only breaks ties, and an instance the record lacks where it names
  another of the same shape fetches no record: a swapped service or instance must meet the record
  it replaced, where the verifier sees the conflict. A statement nothing shares a word with has no
  binding: an unbacked claim ("cites nothing that counts as evidence"), which is its cause; the
  output says it was read from prose (READ_FROM_PROSE), so the schema rule does not blame the
  agent for a shape it never wrote.
The verifier then compares each claim with its records (numbers, ids, services and error codes
as entities, negation, causality), and the verdict policy judges as for any session.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field

from pipeline.core.contracts import (
    ANSWER_VERSION,
    READ_FROM_PROSE,
    Claim,
    EvidenceBinding,
    ExecutorOutputV2,
    Hypothesis,
    RecommendedAction,
    ToolInvocation,
)
from pipeline.gatekeeper.features import match_excerpt, prepare_output
from pipeline.stages.meaning_guard import clauses, sentences
from pipeline.stages.verifier import record_shape
from pipeline.text.lexicon import CAUSAL, HEDGE, ROOT_CAUSE, SPEAKING, UNSHOWN
from pipeline.text.primitives import (
    CLOCK_TIME,
    DATE,
    INTERVAL,
    Entity,
    clock_times,
    extract_entities,
    instance_shape,
    keywords,
    normalize,
    quotations,
    stated_count,
    synonyms,
    unquoted,
)
from pipeline.tools.results import read_result

_ACTION = re.compile(
    r"^(?:建议|请|下一步|需要|应当|应该|可以考虑)|^(?:recommend|we recommend|suggest|consider|check|verify|investigate|"
    r"restart|roll ?back|increase|decrease|raise|lower|scale|monitor|review|next step|you should)\b", re.IGNORECASE)
_MAX_BINDINGS = 3
# A label that frames what follows it ("**Summary:** ...", "**TL;DR** ...", "Short answer: ...", "结论：", an FAQ's
# "Q:" and "答：") or a heading alone ("**Timeline (UTC)**"): the writer's layout, not a statement.
_LABEL = re.compile(
    r"^(?:#+\s*)?(?:\*\*[^*\n]{1,40}\*\*\s*[:：]?|__[^_\n]{1,40}__\s*[:：]?"
    r"|(?:tl;?dr|short answer|in short|bottom line|summary|answer|q|a|question|问|答|what's failing|what is failing|impact|timeline"
    r"|findings|evidence|status|结论|总结|简而言之|简单说|一句话|现象|影响|时间线)(?:\s*\([^)]{0,30}\))?\s*[:：])\s*",
    re.IGNORECASE)
# Any short label of the writer's own ("Noise check:", "Ruled out for now:", "旁支排查：", "和支付无关、可以放一边的："):
# a few words (up to seven, a comma, slash or apostrophe among them: "Some arithmetic over the spool queue:", "What it
# isn't, going by the output:"), no figure, name or speaker in it.
_SHORT_LABEL = re.compile(r"^((?:[a-z][a-z'/]*,?\s+){0,6}[a-z][a-z'/]*|[\u4e00-\u9fff][\u4e00-\u9fff、]{1,15})\s*[:：]\s*(?=\S)",
                          re.IGNORECASE)
# A label leading its line ("建议：...", "**Confidence:** high") or alone on it ("Next steps:", "**证据：**",
# which leads the lines under it).
_SECTION_LABEL = re.compile(r"^\s*(?:#+\s*)?(?:[-*•]\s+)?(?:\*\*|__)?([^:：*_]{1,40}?)(?:\*\*|__)?\s*[:：]\s*(?:\*\*|__)?")
# Labels that make what they lead a recommended action, a gap, or the writer's own process.
_ACTION_LABEL = re.compile(r"next steps?|recommended actions?|recommendations?|suggested (?:fix|actions?)|action items?"
                           r"|actions?|mitigation|remediation|to ?do|follow[- ]ups?|建议|下一步|后续|处置|行动项|待办|止血"
                           # a ticket's target, what must hold to close it: wanted, not observed
                           r"|(?:acceptance|success|exit|done|closing|resolution) criteria|definition of done|done when"
                           r"|(?:resolved|fixed|closed) when|验收标准|验收条件|完成标准|关闭条件")
_GAP_LABEL = re.compile(r"open questions?|unknowns?|gaps?|still unknown|not in the output|missing|to confirm|to check"
                        r"|待查|待确认|待核实|未知|疑点|缺口|(?:输出|日志|记录)里没有的?|还不知道的?")
_NOT_FOUND = re.compile(r"\b(?:did not|didn't|could not|couldn't|cannot|can't|did n't)\s+(?:find|see|spot)\b|\bnot found\b"
                        r"|\bfound no\b|\bno sign of\b|没(?:有)?(?:找到|发现|看到)|未(?:找到|发现)|找不到|查不到|看不到")
_META_LABEL = re.compile(r"thought|thinking|confidence|置信度|可信度|思考"
                         # who works on it: the writer's process, nothing about the system ("IC:" or "on-call:" may
                         # lead what a speaker said, and is not one of them)
                         r"|owners?|assignee|assigned to|reporter|负责人|跟进人|处理人")

# Sibling instances written short after one written in full: "pay-7d9f-1/2/3", "checkout-68f0-1 最早，-3 是
# 16:22:48". The writer names checkout-68f0-3; read alone, "-3" names nothing and "3" is a number.
_INSTANCE_BASE = re.compile(r"(?<![\w.-])([a-z][a-z0-9]*(?:-[a-z0-9]+)*-)(\d{1,2})(?![\w.]|-\w)", re.IGNORECASE)
_SLASHED = re.compile(r"(?<![\w.-])([a-z][a-z0-9]*(?:-[a-z0-9]+)*-)(\d{1,2})((?:/\d{1,2})+)(?![\w.%])", re.IGNORECASE)
_BARE_SUFFIX = re.compile(r"(?<=[\s(（,，、;；])-(\d{1,2})(?![\w%:]|\.\d|\s*(?:ms|s|sec|min|h|mb|gb|kb|x)\b)", re.IGNORECASE)

_BACKED = re.compile(r"([^，,。;；:：(（)）]+)[(（]([^()（）]+)[)）]")

# How many units a span is, in words ("ten minutes later", "a couple of minutes after").
_SPELLED_SPAN = ("a|an|one|two|three|four|five|six|seven|eight|nine|ten|fifteen|twenty|thirty|forty|fifty|sixty"
                 "|a few|several|a couple of")

# A clause dating the fact before it from another event ("..., about 40 s after checkout-service's
# own first 500", "比第一个 500 晚了 40 分钟"): the interval is reckoned from that fact's time.
_RELATIVE = re.compile(r"\W*(?:(?:about|around|roughly|some|~)\s*)?(?:\d+(?:\.\d+)?(?:\s*[-–~]\s*\d+(?:\.\d+)?)?"
                       rf"|{_SPELLED_SPAN})\s*"
                       r"(?:(?:ms|s|sec|secs|seconds?|min|mins|minutes?|h|hours?)(?:\s+(?:and\s+)?\d+\s*(?:s|secs?|seconds?))?"
                       r"\s+(?:later|after|before|earlier)\b|(?:seconds?|minutes?|hours?)\s+on\b(?!\s*/))"
                       r"|\W*比.{1,30}?(?:晚|早)了?\s*(?:约|大约)?\s*\d"
                       # how much later each one came, its other end the fact before it: "每次晚 1–2 秒", "都晚约 0.5 秒"
                       r"|\W*(?:每次|每条|每单|每笔|都)(?:要)?(?:晚|早)了?\s*(?:约|大约)?\s*\d"
                       # the period of the series before it: "roughly one every 13 minutes", "每 65 秒一次"
                       r"|\W*(?:(?:about|around|roughly|some|~)\s*)?(?:one\s+|once\s+)?every\s+\d|\W*(?:约|大约)?每\s*\d")

# Where, as a whole: ", from all three pods", "across both hosts", "三台都有".
_EVERYWHERE = re.compile(r"\W*(?:(?:from|on|across|in)\s+)?(?:all|both|each of the|every)\s+(?:\w+\s+){0,2}"
                         r"(?:pods?|hosts?|instances?|nodes?|replicas?|machines?)\W*|\W*(?:[两三四五六七八九\d]+|所有|每)(?:台|个)"
                         # the workload's name may stand before its kind: "三台 prt pod 都有"
                         r"(?:\s*[a-z][\w-]*\s*(?=pod|实例|节点|机器))?(?:pod|实例|节点|机器)?\s*都(?:有|在报|报了)?\W*")

# A clock time with at most its preposition, time zone and an ordinal or "again" ("at 08:01:10", "17:29:28 UTC",
# "到 09:20", "the first at 16:21:29", "and again at 08:04").
_TIME_ALONE = re.compile(rf"\W*(?:(?:the\s+)?(?:first|last|earliest|latest|final)(?:\s+one)?\s*|again\s*|starting\s*|最早的?|最晚的?"
                         r"|(?:第一(?:个|条|次)?|最后(?:一)?(?:个|条|次)?|最近(?:一)?(?:个|条|次)?|又|再次)\s*"
                         rf"|(?:(?:about|around|roughly|some)\s+)?(?:\d+|{_SPELLED_SPAN})"
                         r"\s+(?:seconds?|secs?|minutes?|mins?|hours?)\s+(?:later|after|afterwards)\s*,?\s*)?"
                         rf"(?:(?:at|by|from|to|until|till|since|and|between|到|至|于|在|是)\s*)?(?:{CLOCK_TIME.pattern})"
                         rf"(?:\s*(?:-|–|~|to|and|至|到)\s*(?:{CLOCK_TIME.pattern}))?\s*(?:utc|gmt)?(?:\W*right)?\W*")
# What each of the happenings the clause before names measured, alone in its clause ("..., 每次大约 2-3 秒",
# "..., each taking 2-3 s"): a figure of that fact's records, judged with it.
_EACH_FIGURE = re.compile(r"\W*(?:每次|每条|每个|每单|每笔|单次|each(?:\s+(?:one|time|taking|took|lasting))?)\s*(?:耗时|用时|about"
                          r"|around|roughly|~|约|大约|大概)?\s*\d+(?:\.\d+)?(?:\s*(?:-|–|~|至|到|to)\s*\d+(?:\.\d+)?)?"
                          r"\s*(?:ms|s|sec|secs|seconds?|秒|毫秒|分钟|min|mins|minutes?)(?:\s*(?:左右|上下))?\W*")
# A clause closing the span of the fact before it, with a word or two of how it held ("..., 到 11:40 没有回落",
# "..., until 11:40 without a break"): it dates that fact's end, and names nothing of its own.
_ENDS_SPAN = re.compile(rf"\W*(?:一直到|直到|到|至|until|till|through|up to)\s*(?:{CLOCK_TIME.pattern})")
_ANAPHOR = re.compile(r"\W*(?:this|that|these|those|it|they|them|the same|every one|each|all of them|both|"
                     r"这|那|它|该|同一|第一条|最后一条|最早一条|每一条|都)(?![\w-])")
_FULL_COLON = re.compile(r"：(?=\d)")
_PREDICATE = re.compile(r"\s*(?:is|are|was|were)\b")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
# A title on a line of its own, over the lines it heads ("复盘（草稿）", "Incident Summary"): a few words
# with no mark, figure or name; and a status the writer gives the work, not the system ("Status:
# investigating.", "排查中", "Acking.", "Next update in 30 minutes", "下次更新：20 分钟后").
_TITLE = re.compile(r"^\s*(?:[\u4e00-\u9fff]{2,8}|(?:[A-Z][a-z]+\s+){0,4}[A-Z][a-z]+)\s*(?:[(（][^()（）\d]{1,12}[)）])?\s*$")
# A report's title over its lines ("IC update — payment failures", "PagerDuty resolve note — CronJobFailed",
# "【IC 更新】订单接口报错"): it names the subject the lines under it state facts of.
_REPORT_TITLE = re.compile(r"^\s*(?:#+\s*)?(?:\*\*)?(?:【[^】]{0,12}(?:更新|工单|通报|复盘|交接|报告|update|ticket)[^】]{0,12}】"
                           r"|(?:[\w-]+\s+){0,3}(?:update|note|report|ticket|handoff|postmortem|post-mortem|retro|ack|resolve)"
                           r"\s*[—–]\s)", re.IGNORECASE)
_WORK_STATUS = re.compile(r"^\W*(?:still\s+)?(?:investigating|identified|monitoring|mitigating|mitigated|ongoing|in progress|"
                          r"open|draft|wip|排查中|调查中|处理中|进行中|观察中|草稿|ack(?:ing|ed|nowledged)?"
                          r"|next update\b[^.]*|will (?:update|post)\b[^.]*|下一?次更新[^。]*)\W*$",
                          re.IGNORECASE)
# A shell command pasted with its prompt ("$ grep -c 'timeout' app.log") or alone in backticks on its line.
_COMMAND = re.compile(r"^\s*(?:[-*•]\s+)?(?:\$\s+\S|`\$?\s*(?:grep|zgrep|egrep|rg|awk|sed|cat|zcat|wc|sort|uniq|head|tail|cut|jq"
                      r"|kubectl|curl|logcli|journalctl|less)\s[^`]*`\s*[:：]?\s*$)")
# What the writer did to find out ("I weighed two candidates", "我先看了告警"): its process; said with a fact
# ("I checked: 68 timeouts"), the fact is read.
_PROCESS = re.compile(r"^\W*(?:i|we)(?:'ve|\s+have)?\s+(?:first\s+|then\s+|also\s+|only\s+)?(?:weighed|looked at|looked into"
                      r"|checked|grepped|compared|went through|counted|pulled|searched|considered|reviewed|read|queried|ran)\b"
                      r"|^\W*我(?:先|又|也|再|只)?(?:查了|看了|对比了|比较了|搜了|数了|翻了|过了一遍)", re.IGNORECASE)
# A yes or a no alone, as an answer to the question before it ("A: No.", "答：不是。"): it says nothing to check
# until the words after it say what is or is not so.
_BARE_ANSWER = re.compile(r"^\W*(?:yes|yep|yeah|no|nope|not really|correct|partly|partially|是|是的|不是|对|对的|不对|有|没有|没|否|不|"
                          r"不会|会|也不是)\W*$", re.IGNORECASE)
# An arrow before a clock time: the next event of a chain, not a change of value ("15000ms -> 5000ms").
_NEXT_EVENT = re.compile(r"\s*(?:→|->|=>|⇒)\s*(?=\d{1,2}:\d{2}(?!\d))")


@dataclass(frozen=True)
class _Record:
    invocation: ToolInvocation
    number: int
    line: str
    words: frozenset[str]
    entities: frozenset[Entity]
    times: frozenset[str]
    # How many records of its output share its kind (its shape), in all ("") and on each instance:
    # the counts a writer can state of it.
    kin: dict[str, int] = field(default_factory=dict, compare=False)


def _times(text: str) -> frozenset[str]:
    """The clock times a text names, to the minute and, where it gives them, to the second."""
    out = set()
    for m in CLOCK_TIME.finditer(normalize(text)):
        minute = f"{int(m.group(1)):02d}:{m.group(2)}"
        out.add(minute)
        if len(m.group(0)) > len(m.group(1)) + 3:
            out.add(minute + m.group(0)[-3:])
    return frozenset(out)


def _words(text: str) -> frozenset[str]:
    """A text's keywords, a dotted name's tails among them: a record's "com.shop.cache.StockSnapshotCache.put"
    is the "StockSnapshotCache.put" a writer names."""
    words = keywords(text)
    tails = {".".join(parts[i:]) for w in words if "." in w and not w[0].isdigit()
             for parts in [w.split(".")] for i in range(1, len(parts) - 1)}
    # ... and a class's own name, the last part of its dotted one: "java.lang.OutOfMemoryError" is the
    # "OutOfMemoryError" (or "OOM") a writer names; a short last part ("put", "io") is a method or package.
    tails |= {parts[-1] for w in words if "." in w and not w[0].isdigit()
              for parts in [w.split(".")] if len(parts[-1]) >= 8 and not parts[-1].isdigit()}
    return words | tails


def _records(invocations: list[ToolInvocation]) -> list[_Record]:
    out = []
    for inv in invocations:
        if inv.status != "ok" or not inv.output:
            continue
        read = [rec for rec in read_result(inv.output).records if rec.line.strip()]
        shapes = [record_shape(normalize(rec.line)) for rec in read]
        kin: dict[str, Counter[str]] = {}
        for rec, shape in zip(read, shapes, strict=True):
            kin.setdefault(shape, Counter()).update(["", *(e.value for e in extract_entities(rec.line) if e.kind == "instance")])
        out += [_Record(inv, rec.number, rec.line, _words(rec.line), _figures(rec.line), _times(rec.line),
                        dict(kin[shape])) for rec, shape in zip(read, shapes, strict=True)]
    return out


def _figures(text: str) -> frozenset[Entity]:
    """A text's entities but for its clock times and dates, which are when, not what: "48 seconds later" is no
    figure of the record stamped 16:48:08, nor "4 次" of one dated 2026-04-09."""
    return extract_entities(CLOCK_TIME.sub(" ", DATE.sub(" ", text)))


def _facts(entities: frozenset[Entity]) -> frozenset[Entity]:
    return frozenset(e for e in entities if e.kind != "service")


def _binding(rec: _Record) -> EvidenceBinding:
    return EvidenceBinding(tool_name=rec.invocation.tool_name, source_invocation_ids=[rec.invocation.id],
                           source_record_ids=[f"{rec.invocation.id}#{rec.number}"], evidence_excerpt=rec.line)


# The first or the last of a kind, with no time of its own: of the records stating the same facts, the earliest
# or the latest ("the first NPE came 48 seconds later", "最后一条超时").
_FIRST = re.compile(r"\b(?:first|earliest|initial)\b|第一(?:个|条|次|笔)?|最早|首次|首个")
_LAST = re.compile(r"\b(?:last|latest|final)\b|最后(?:一)?(?:个|条|次|笔)?|最晚|最近一(?:个|条|次)")


def _record_bindings(sentence: str, records: list[_Record]) -> list[EvidenceBinding]:
    # An interval ("48 seconds later", "晚了 40 分钟") is reckoned between records, no figure or word of one.
    sentence = INTERVAL.sub(" ", sentence) if not _times(sentence) else sentence
    words = keywords(sentence)
    wanted = _facts(_figures(sentence))
    services = frozenset(e for e in extract_entities(sentence) if e.kind == "service")
    words = frozenset(w for w in words if w not in {normalize(e.value) for e in services})
    times = _times(sentence)
    # A count the claim states is of records of one kind ("order-9a1f-1 14 条超时", whose kind the clause before
    # named): a record of the kind it counts, in all or on an instance the claim names, is the one it speaks of.
    counts = [n for e in wanted for n in [stated_count(e)] if n is not None and n >= 2]
    named = ["", *(e.value for e in wanted if e.kind == "instance")]

    def score(rec: _Record) -> int:
        # A word counts in any of its forms across zh/en: "canary skipped" is the record's "金丝雀: 跳过";
        # a time counts to the minute, and again to the second ("the first at 16:21:29").
        # A time said is the surest fact of which record is meant ("19:36 cart-4d6e-2 first logged X" of the
        # 19:36 record another pod wrote): it counts twice, so a swapped pod meets the record it replaced.
        return (len(wanted & rec.entities) + sum(1 for w in words if not rec.words.isdisjoint(synonyms(w)))
                + 2 * len(times & rec.times) + sum(1 for n in counts if any(rec.kin.get(i) == n for i in named)))

    # Services only break ties: among records stating the same facts, the one of the named service.
    said = normalize(sentence)
    latest = bool(_LAST.search(said)) and not _FIRST.search(said) and not times
    best = max(records, key=lambda r: (score(r), len(services & r.entities), -r.invocation.id,
                                       r.number if latest else -r.number), default=None)
    if best is None or score(best) == 0:
        return []
    chosen = [best]
    # An instance is bound like a service: one the record lacks where it names another of that
    # shape is a swap, and must meet the record it replaced rather than fetch the one that holds it.
    shapes = {instance_shape(e.value) for e in best.entities if e.kind == "instance"}
    missing = {e for e in wanted - best.entities if e.kind != "instance" or instance_shape(e.value) not in shapes}
    # A count above the output's size counts no records but what one record holds ("StockSnapshotCache
    # 2140000 条" of its "size=2140000 entries"): it is sought as that number.
    sought = {e: Entity("number", str(n)) if n is not None and n > len(records) else e
            for e in missing for n in [stated_count(e) if e.kind == "quantity" else None]}
    missing = {e for e in missing if sought[e] not in best.entities}
    while missing and len(chosen) < _MAX_BINDINGS:
        more = max(records, key=lambda r: sum(1 for e in missing if sought[e] in r.entities))
        found = {e for e in missing if sought[e] in more.entities}
        if not found:
            break
        chosen.append(more)
        missing -= found
    # A count of another kind than the chosen records' ("Full GC 最长停顿 3.8s，还 OOM 了 4 次"): the kind is the
    # one a word the chosen records lack names, and a record of it whose kind has that many is the one it counts
    # (one more than the records the facts fetch: a kind's count is in none of them).
    for n in counts:
        if len(chosen) > _MAX_BINDINGS or any(r.kin.get(i) == n for r in chosen for i in named):
            continue
        lacking = [w for w in words if all(r.words.isdisjoint(synonyms(w)) for r in chosen)]
        of_kind = [(sum(1 for w in lacking if not r.words.isdisjoint(synonyms(w))), r) for r in records
                   if any(r.kin.get(i) == n for i in named)]
        if of_kind:
            hits, kind = max(of_kind, key=lambda hr: (hr[0], -hr[1].invocation.id, -hr[1].number))
            if hits:
                chosen.append(kind)
    # A time no chosen record holds is another record's ("from ~78% at 10:01 to ~89% at 10:03"): the
    # best of those that hold it, or the value said at that time meets a record of another.
    for minute in sorted(t for t in times if len(t) == 5):
        held = [r for r in records if minute in r.times]
        if len(chosen) < _MAX_BINDINGS and held and not any(minute in r.times for r in chosen):
            more = max(held, key=score)
            if score(more) > 1:
                chosen.append(more)
    return [_binding(r) for r in chosen]


def _quote_bindings(quotes: list[str], invocations: list[ToolInvocation], records: list[_Record],
                    sentence: str) -> list[EvidenceBinding]:
    """Each quote bound where the gatekeeper's matcher places it best; a quote many records hold
    ("order marked PAY_UNKNOWN" of every order) is cited in the one holding the sentence's own ids
    and values ("订单 123"), so the check meets that record, not the first of its kind."""
    sources = [inv for inv in invocations if inv.output]
    wanted = _facts(_figures(unquoted(sentence)))
    out = []
    for quote in quotes:
        best = max(sources, key=lambda inv: match_excerpt(quote, prepare_output(inv.id, inv.output)).score, default=None)
        if best is None:
            continue
        said = normalize(quote)
        holding = [r for r in records if r.invocation.id == best.id and said in normalize(r.line)]
        chosen = max(holding, key=lambda r: len(wanted & r.entities), default=None)
        cited = ([f"{best.id}#{chosen.number}"] if chosen is not None and wanted & chosen.entities
                 and len(holding) > 1 else None)
        # Only what was read is set: an unset record list is the whole output's, as the agent wrote it.
        out.append(EvidenceBinding(tool_name=best.tool_name, source_invocation_ids=[best.id], evidence_excerpt=quote,
                                   source_record_ids=cited) if cited else
                   EvidenceBinding(tool_name=best.tool_name, source_invocation_ids=[best.id], evidence_excerpt=quote))
    return out


def _stated(sentence: str, quotes: list[str]) -> list[str]:
    """The parts of an unhedged sentence judged one by one. A causal sentence is judged whole (its
    point is the link); otherwise each clause states its own fact, so one added to a faithful one
    ("..., and the database was down") is judged, and a quote binds only the clause holding it (the
    clause after it may name another writer: "`POST /api/pay` times out, and api-gateway answers
    504" meets api-gateway's record in its second half); a quote the split cuts keeps the sentence
    whole. A clause the split leaves out is still said: when one holds a fact ("最近 5 分钟 7 次" is
    too short to stand alone and is dropped), the sentence is judged whole so the fact is not lost."""
    if len(keywords(sentence)) < 3:
        return [sentence]  # a field of a list ("service: api-gateway"): too short to hold two facts
    # A quote is the record's words, cut by no clause mark inside it ("`inventory check failed: ...`"):
    # each stands as one token while the sentence is split.
    masked = sentence
    for i, quote in enumerate(quotes):
        masked = masked.replace(quote, f"quoted{i}x", 1)
    # A parenthesis that bears out a clause naming nothing ("超时是三台 pod 都有（pay-7d9f-1/2/3 都报了 ...）")
    # is judged with it: apart, the clause is a summary no record words.
    masked = _BACKED.sub(lambda m: f"{m.group(1)} {m.group(2)}" if not _facts(extract_entities(m.group(1)))
                         and not CLOCK_TIME.search(m.group(1)) else m.group(0), masked)
    unmasked = []
    for part in clauses(masked):
        for i, quote in enumerate(quotes):
            part = part.replace(f"quoted{i}x", quote)
        unmasked.append(part)
    parts = _placed(unmasked)
    kept = {e for part in parts for e in extract_entities(part)}
    if not parts or not extract_entities(sentence) <= kept or any(all(q not in p for p in parts) for q in quotes):
        return [sentence]
    return parts


def _placed(clauses_said: list[str]) -> list[str]:
    """The clauses with each one that only places the fact before it (where, when, how long after) joined to
    that fact, and one that opens on its verb joined to its subject before it."""
    parts: list[str] = []
    leading: set[str] = set()
    for part in clauses_said:
        # A clause naming only where (and when: "..., fires on pod inv-84cd-3", "was logged by
        # checkout-68f0-3 at 16:23") states no fact of its own: it places the one before it, and is
        # judged with it, so a swapped pod meets that fact's record.
        facts = _facts(extract_entities(CLOCK_TIME.sub(" ", normalize(part))))
        # So does a clause that is a clock time alone: "between 16:20:48 and 17:29:28 UTC" ends the span
        # of the fact before it, ", 08:01:40 and 08:02:40" lists its other times; judged apart, it met
        # whatever record shares no word with it.
        placing = (facts and all(e.kind == "instance" for e in facts) or _TIME_ALONE.fullmatch(normalize(part))
                   or _RELATIVE.match(normalize(part)) or _EVERYWHERE.fullmatch(normalize(part))
                   or _EACH_FIGURE.fullmatch(normalize(part))
                   or (not facts and (ends := _ENDS_SPAN.match(normalize(part))) is not None
                       and len([w for w in keywords(normalize(part)[ends.end():]) if not w[0].isdigit()]) <= 2))
        # A clause opening on its verb ("... (10:22) is a single line", "68 (33%) are timeouts") has its
        # subject in the part before, cut off by the parenthesis.
        if parts and _PREDICATE.match(part):
            parts[-1] = f"{parts[-1]} {part}"
            continue
        if parts and (placing or parts[-1] in leading):
            parts[-1] = f"{parts[-1]} {part}"
        else:
            parts.append(part)
            if placing:  # the sentence opens with it ("Between 08:17 and 09:29 X logged ..."): it dates what follows
                leading.add(part)
    # An interval reckoned from a time the part before gives ("the first GC at 13:18:20, the OOM at 13:27:00,
    # 8 minutes 40 seconds later"; "After the JVM exited at 13:42, the next GC came at 14:03:26, 21 minutes
    # on"): judged with that part, so both its ends are the claim's own.
    for i in range(len(parts) - 1, 0, -1):
        if _RELATIVE.search(normalize(parts[i])) and len({t[:5] for t in _times(parts[i])}) <= 1:
            parts[i - 1:i + 1] = [f"{parts[i - 1]} {parts[i]}"]
    return parts


def _guess(sentence: str) -> tuple[list[str], list[str], list[str]]:
    """A hedged sentence as (its facts, its guess, the gaps it admits). A clause before the hedge that
    neither hedges nor links is what the guess rests on ("X logged p95=4.8s, so it plausibly ..."), a
    fact like any other; from the hedge on, the clauses are the guess, but for one that says the
    records do not show something ("though no record ties the two"), which is a gap."""
    facts: list[str] = []
    guess: list[str] = []
    gaps: list[str] = []
    for part in clauses(sentence) or [sentence]:
        own = normalize(unquoted(part))
        if UNSHOWN.search(own):
            gaps.append(part)
        elif guess or HEDGE.search(own) or CAUSAL.search(own) or ROOT_CAUSE.search(own):
            guess.append(part)
        else:
            facts.append(part)
    if not guess:
        # The hedge sat in a part the split left out ("..., 我猜是堆给小了"): the sentence is the guess, and the
        # clauses wholly before the hedge are still its basis, judged.
        own = normalize(unquoted(sentence))
        hedge = HEDGE.regex.search(own)
        before = own[:hedge.start()] if hedge else ""
        return [f for f in facts if normalize(unquoted(f)) in before], [sentence], gaps
    return facts, guess, gaps


def _unlabelled(sentence: str) -> tuple[str, str]:
    """The sentence without the label that leads it, unless the label hedges or names a cause
    ("**Root cause (likely):** ..." is a guess, and says so), and without markdown emphasis; and
    the label taken off."""
    sentence = re.sub(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+", "", sentence)  # a list item's marker
    m = _LABEL.match(sentence) or _SHORT_LABEL.match(sentence)
    label = m.group(0) if m else ""
    if m and m.re is _SHORT_LABEL and (extract_entities(m.group(1)) or SPEAKING.search(normalize(m.group(1)))
                                       or len(keywords(sentence[m.end():])) < 2):
        label = ""  # "redis-cart: ...", "the gateway says: ...": the subject; "service: api-gateway": a field
    said = normalize(label)
    keep = label and (HEDGE.search(said) or ROOT_CAUSE.search(said) or CAUSAL.search(said))
    rest = sentence if keep else sentence[len(label):]
    return re.sub(r"\*\*|__", "", rest).strip(), "" if keep else label


def _section(label: str) -> str | None:
    """What a label or a heading makes of what it leads: "action" (what to do), "gap" (what is not
    known), "meta" (the writer's own process or confidence: nothing about the system), else None."""
    said = re.sub(r"[#*_:：\s]+", " ", normalize(label)).strip()
    said = re.sub(r"\s*[(（][^()（）]*[)）]$", "", said)
    for kind, words in (("action", _ACTION_LABEL), ("gap", _GAP_LABEL), ("meta", _META_LABEL)):
        if words.fullmatch(said):
            return kind
    return None


def _names_only(sentence: str) -> bool:
    """A statement naming its subject and nothing of it ("Component: payment-service", "3. notification-service."
    over the evidence for and against it): a ticket's field or a heading over what follows. A figure beside the
    names states something of them ("打印超时：ship-2b9d-1 5 次，ship-2b9d-2 3 次", a count of each)."""
    m = _SHORT_LABEL.match(sentence)
    value = sentence[m.end():] if m else sentence
    found = extract_entities(value)
    names = {normalize(e.value) for e in found if e.kind in ("service", "instance")}
    words = keywords(value)
    return bool(words) and words <= names and all(e.kind in ("service", "instance") for e in found)


def _siblings_spelled(line: str) -> str:
    """The line with its short sibling instances written in full (see _SLASHED, _BARE_SUFFIX)."""
    line = _SLASHED.sub(lambda m: "/".join(m.group(1) + n for n in (m.group(2) + m.group(3)).split("/")), line)
    named = [(m.start(), m.group(1)) for m in _INSTANCE_BASE.finditer(line)]

    def spelled(m: re.Match[str]) -> str:
        # the instance written in full nearest before it, within the same list ("order-9a1f-1, -2 and -3")
        before = [base for at, base in named if at < m.start() and m.start() - at <= 40]
        return before[-1] + m.group(1) if before else m.group(0)

    return _BARE_SUFFIX.sub(spelled, line)


# A question quoted from someone else ("> 订单 123 是 payment-service 直接报错了吗"): their words, not the
# writer's. A quoted line that asks nothing is read (a callout may hold the writer's own claim).
_QUOTED_LINE = re.compile(r"^\s*>.*(?:[?？]|吗|(?<![什那怎这多要])么)\s*[。.]?\s*$")
# A Chinese question without its mark: "... 直接报错了吗". Not "...吧" or "...呢": a guess put softly
# ("根因就是发布吧") still states it.
_ASKED_ZH = re.compile(r"(?:吗|(?<![什那怎这多要])么)\s*[。.]?\s*$")
# A question put inside a statement ("why the pool stays full isn't logged", "最终扣款成没成功，日志里看不到"):
# it asks, and states nothing.
_INDIRECT = re.compile(r"^\W*(?:为什么|为何|为啥|怎么会|哪(?:个|台|些|一)|(?:why|how|what|which|whether|who)\b)"
                       r"|.*?(?:是否|([\u4e00-\u9fff])[没不]\1)")
# The question mark that ends a sentence the writer asks ("Q: where does the time go?", "为什么拿不到连接？" before
# its answer): not a record's placeholder ("user_id=?", "(?,?)"), which a quote holds or a value sign leads.
_ASKED_MARK = re.compile(r"\s*(?:？|\?(?![\w=,?)]))")


def _sentences(line: str) -> list[tuple[str, bool]]:
    """The line's sentences, each with whether it is asked: the sentence splitter drops the mark that says so."""
    out: list[tuple[str, bool]] = []
    at = 0
    for sentence in sentences(line):
        start = line.find(sentence, at)
        end = start + len(sentence) if start >= 0 else at
        at = end
        asked = (start >= 0 and _ASKED_MARK.match(line, end) is not None and not sentence.endswith(("=", "("))
                 and line[:end].count("`") % 2 == 0)
        out.append((sentence, asked))
    return out
_TABLE_ROW = re.compile(r"^\s*\|(.+)\|\s*$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")


def _tables_read(lines: list[str]) -> tuple[list[str], set[str]]:
    """The lines with each markdown table's rows read as statements, and those rows: the header row
    and the rule under it are layout, a data row says each header of its cells ("| 19:30-20:00 | 14 |"
    under "| 时段 | GET 超时 |" is "时段 19:30-20:00 GET 超时 14"), one statement judged whole (its
    time and its pod are one event's)."""
    out: list[str] = []
    rows: set[str] = set()
    header: list[str] = []
    for i, line in enumerate(lines):
        row = _TABLE_ROW.match(line)
        if _TABLE_RULE.match(line) and "-" in line:
            continue
        if row is None:
            header = []
            out.append(line)
            continue
        cells = [c.strip() for c in row.group(1).split("|")]
        if i + 1 < len(lines) and _TABLE_RULE.match(lines[i + 1]) and "-" in lines[i + 1]:
            header = cells
            continue
        said = " ".join(f"{h} {c}".strip() for h, c in zip(header, cells, strict=False)) if header else " ".join(cells)
        out.append(said)
        rows.add(said.strip())
    return out, rows


# What a search command printed: a count, alone or before what it counts by ("56", "  14 order-9a1f-1"), or a value
# it extracted ("78.3%"); and the pattern it searched for, quoted ("grep -c 'inventory check failed' order.log"), with
# what a later search in its pipe narrows it to ("| grep -c pay-7d9f-2").
_PRINTED = re.compile(r"^\s*\d[\d,.]*%?(?:\s+[\w./:-]+){0,2}\s*$")
_SEARCHED = re.compile(r"\b(?:z|e|f)?grep\b[^'\"|]*['\"]([^'\"]{6,})['\"]")
_NARROWED = re.compile(r"\|\s*(?:z|e|f)?grep\s+(?:-\w+\s+)*([\w.-]+)\s*(?=$|\|)")


def _printed_read(lines: list[str]) -> tuple[list[str], set[str]]:
    """The lines with what a search command printed read as a statement of what it searched for ("56" under
    "$ grep -c 'inventory check failed' ..." is "56 `inventory check failed`", a count of those records; "14
    order-9a1f-1" under its `uniq -c`, that count on that pod), and those statements, each judged whole. Printed
    under a command with no quoted pattern, a figure stays as it is."""
    out: list[str] = []
    read: set[str] = set()
    searched = ""
    for line in lines:
        if _COMMAND.match(line):
            found = _SEARCHED.search(line)
            narrowed = _NARROWED.search(line)
            searched = (f"`{found.group(1)}`" + (f" {narrowed.group(1)}" if narrowed and narrowed.group(1) != "-c"
                                                 else "")) if found else ""
            out.append(line)
        elif searched and _PRINTED.match(line):
            figure, _, rest = line.strip().partition(" ")
            said = f"{figure} {searched} {rest.strip()}".strip()
            out.append(said)
            read.add(said)
        else:
            searched = ""
            out.append(line)
    return out, read


def prose_output(answer: str, invocations: list[ToolInvocation]) -> str:
    """The answer as Executor V2 JSON: claims bound to records, hypotheses, actions."""
    records = _records(invocations)
    claims: list[Claim] = []
    hypotheses: list[Hypothesis] = []
    actions: list[RecommendedAction] = []
    missing: list[str] = []

    def claim(text: str, quotes: list[str], causal: bool) -> None:
        bindings = _quote_bindings(quotes, invocations, records, text) if quotes else _record_bindings(text, records)
        # A statement about what the one before spoke of ("That warning repeats seven times", "the same NPE
        # at X", "第一条 13:20:00") is judged on that statement's records too: its subject is there. An interval
        # with fewer than two times of its own ("大约 0.3 秒后 pay-7d9f-1 写回响应失败") is reckoned from the last
        # event dated before it, whose records hold its other end.
        own = normalize(unquoted(text))
        since = INTERVAL.search(own) and len(clock_times(own)) < 2
        dated = [c for c in claims if CLOCK_TIME.search(c.claim_text or "")] if since else []
        before = dated[-1] if dated else claims[-1] if claims and (since or _ANAPHOR.match(normalize(text))) else None
        if before is not None:
            seen = {b.evidence_excerpt for b in bindings}
            bindings += [b for b in before.evidence_bindings if b.evidence_excerpt not in seen][:_MAX_BINDINGS]
        claims.append(Claim(claim_id=f"c{len(claims) + 1}", claim_type="root_cause" if causal else "observation",
                            claim_text=text, support_level="direct", evidence_bindings=bindings))

    # A label leads a line ("**TL;DR** ..."): taken off before the line is cut into sentences; a
    # markdown heading ("### Timeline (UTC)") is layout whole. A label or heading saying what its
    # lines are ("建议：", "Next steps", "待查：", "Thought:") makes them that, on its line or under it
    # up to a blank line.
    # A full-width colon before a figure ("订单 123：14:31:10", "order-9a1f-1：08:14") reads as a half-width
    # one joined to it, and the two would run into one clock time.
    printed, outputs = _printed_read(_FULL_COLON.sub("： ", answer).splitlines())
    read, rows = _tables_read(printed)
    rows |= outputs
    rows = {_siblings_spelled(row) for row in rows}
    last = max((i for i, line in enumerate(read) if line.strip()), default=-1)
    said: list[tuple[str, str | None]] = []
    section: str | None = None
    for i, line in enumerate(read):
        leading = _SECTION_LABEL.match(line)
        alone = leading if leading and not line[leading.end():].strip() else None
        if not line.strip():
            section = None
        # A line over a list of what the writer looked for and did not find ("What I looked for and did not find
        # in the logs:", "以下几样在日志里都没有找到："): its items are gaps, however long the line.
        elif line.rstrip().endswith((":", "：")) and _NOT_FOUND.search(normalize(line)):
            section = "gap"
        elif (_HEADING.match(line) or alone or (i < last and _TITLE.match(line) and not extract_entities(line))
              or (i < last and _REPORT_TITLE.match(line)) or _section(line)):
            section = _section(alone.group(1) if alone else line)
        elif leading and _section(leading.group(1)):
            said.append((_siblings_spelled(line[leading.end():].strip()), _section(leading.group(1))))
        # A status line is read before its label is off ("下次更新：30 分钟后"); a command the writer ran is its
        # process (what it printed, on the lines after it, is read).
        elif not (_QUOTED_LINE.match(line) or _WORK_STATUS.match(line) or _COMMAND.match(line)):
            text, label = _unlabelled(line)
            said.append((_siblings_spelled(text), _section(label) if label else section))
    # A timeline's arrows join events, each a statement of its own ("19:31 X → 19:33 Y").
    for sentence, asked, kind in ((s, asked, kind) for line, kind in said
                                  for s, asked in _sentences(_NEXT_EVENT.sub("\n", line))):
        # A label saying what follows it may lead a sentence inside a line, too ("... 2.4s. Recommended action:
        # roll back", "。输出里没有的：回滚记录、…"), and makes it that.
        lead = _SECTION_LABEL.match(sentence)
        if lead and _section(lead.group(1)) and sentence[lead.end():].strip():
            sentence, kind = sentence[lead.end():].strip(), _section(lead.group(1))
        # The writer's own words: a quoted record's "due to" or "may" is the record's.
        own = normalize(unquoted(sentence))
        # A question (its answer, after it, does state), a bare yes or no, a heading ("Findings:") that frames the
        # items under it, a name alone, the work's status or what the writer did states nothing.
        if (not keywords(sentence) or asked or sentence.rstrip().endswith((":", "：")) or _ASKED_ZH.search(sentence)
                or _WORK_STATUS.match(sentence) or _BARE_ANSWER.match(sentence) or _names_only(sentence)
                or (_PROCESS.match(sentence) and not _facts(extract_entities(sentence)) and not CLOCK_TIME.search(sentence))
                or kind == "meta"):
            continue
        quotes = quotations(sentence)
        if kind == "gap" or (kind == "action" and UNSHOWN.search(own) and not HEDGE.search(own)):
            missing.append(sentence)
        elif _ACTION.match(own) or (kind == "action" and not HEDGE.search(own)):
            actions.append(RecommendedAction(action_text=sentence, reason=""))
        elif HEDGE.search(own):
            # A guess that says so is allowed, judged on what it rests on; its facts are claims like any.
            facts, guess, gaps = _guess(sentence)
            # Its basis is read as any statement's clauses are: one that only dates or places the fact before
            # it ("Half an hour on, at 11:51, the pool was full again, so the restart probably ...") is judged with it.
            facts = _placed(facts)
            for fact in facts:
                claim(fact, [q for q in quotes if q in fact], causal=False)
            # A guess with no fact of its own rests on the statement before it ("X logged p95=4.8s; that
            # slowness plausibly ...").
            basis = " ".join(facts) or (claims[-1].claim_text if claims and claims[-1].claim_text else "")
            hypotheses.append(Hypothesis(hypothesis_text=" ".join(guess), basis=basis, needed_evidence=gaps))
            missing.extend(gaps)
        else:
            causal = bool(CAUSAL.search(own) or ROOT_CAUSE.search(own))
            for text in [sentence] if causal or sentence.strip() in rows else _stated(sentence, quotes):
                held = [q for q in quotes if q in text]
                # A part saying the records do not show something is a gap, whatever the sentence's
                # other parts state ("no data on total traffic, so the ratio can't be rebuilt"); so is what
                # it says they do not show, asked without a mark and naming no fact ("为什么磁盘会写满，记录里没有").
                if not held and (UNSHOWN.search(normalize(unquoted(text))) or (
                        UNSHOWN.search(own) and _INDIRECT.match(normalize(text)) and not CLOCK_TIME.search(text)
                        and not _facts(extract_entities(text)))):
                    missing.append(text)
                # "记录里没有，需要问渠道方"; not a part with a figure ("..., an increase to 850ms" states one)
                elif _ACTION.match(normalize(text)) and not held and not _facts(extract_entities(text)):
                    actions.append(RecommendedAction(action_text=text, reason=""))
                else:
                    claim(text, held, causal)
    output = ExecutorOutputV2(answer_version=ANSWER_VERSION, claims=claims, hypotheses=hypotheses,
                              recommended_actions=actions, missing_info=missing)
    # Only the fields read from the prose: a binding's defaults (source_type, digest_id) were not in it.
    written = output.model_dump(exclude_unset=True)
    return json.dumps({**written, READ_FROM_PROSE[0]: READ_FROM_PROSE[1]}, ensure_ascii=False)
