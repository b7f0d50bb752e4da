"""The offline verifier: rule-based claim, hypothesis and digest checks over the payload.

It reads only what an LLM verifier would read: the claims and the bounded windows of the cited
tool outputs (`cited_evidence`, `digest_evidence`, built by the verifier stage). Per claim,
in order of severity:

1. contradicted      an entity of the claim's kind sits in the cited record with another value
                     (29% where the record says 92%, order-service where it says payment-service),
                     the claim says a service logged a record another wrote ("payment-service logged
                     that api-gateway ..." of an api-gateway line), or the claim negates what the
                     record shows (or shows what it negates);
2. external_unknown  a time, number, percentage, duration, service, error code or id of the claim
                     is nowhere in the cited evidence;
3. unsupported       no cited evidence could be found, the gatekeeper failed a rule on the claim, or
                     the claim's words barely occur in the evidence;
4. overstated        a hedge (a hypothesis written as a claim), or a causal / root-cause statement
                     whose evidence only shows co-occurrence (words inside a quotation are the
                     record's: a quoted "due to" is no link the claim makes);
5. direct_observation / reasonable_inference by word coverage and the claim's support_level.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pipeline.core.contracts import (
    ClaimCheck,
    ClaimVerification,
    DigestCheck,
    EvidenceDigest,
    EvidenceRef,
    ExecutorClaim,
    ExecutorHypothesis,
    ExecutorOutput,
    GatekeeperResult,
    HypothesisCheck,
    ParseStatus,
    RetryContext,
    ToolTraceSummaryItem,
    Verdict,
    VerifierOutput,
)
from pipeline.core.feature_shapes import parse_target
from pipeline.core.messages import family, tr
from pipeline.text.lexicon import ABSENCE, CAUSAL, HEDGE, ROOT_CAUSE, STATED_CAUSE, pattern
from pipeline.text.primitives import (
    CLOCK_TIME,
    DATE,
    ELLIPSIS,
    INTERVAL,
    UNIT_SECONDS,
    Entity,
    EntityMatch,
    clock_times,
    dates,
    detect_language,
    entity_values,
    extract_entities,
    find_entities,
    in_order,
    in_utc,
    instance_shape,
    keywords,
    normalize,
    rounds_to,
    scales,
    shared_store,
    stated_count,
    synonyms,
    unquoted,
)
from pipeline.text.speaker import swapped_speaker, writer
from pipeline.verdict.payload import CitedClaim, Tally, VerifierPayload, Window
from pipeline.verdict.policy import groundedness

DIRECT_COVERAGE = 0.7
INFERENCE_COVERAGE = 0.5
# Below this a claim shares too little with its evidence even to be called overstated.
PARTIAL_COVERAGE = 0.25

# A range of one quantity ("11-15 s", "0.6-1.4 秒", "3.1~3.8s"): an aggregate over several records.
# Its unit may be said at both ends ("1806ms 到 2589ms", "1.2s-3.8s"), the same one.
_RANGE = re.compile(r"(?<![\d.:])(\d+(?:\.\d+)?)\s*(?:(ms|s|sec|seconds|秒|毫秒|%)\s*)?(?:-|–|~|至|到)\s*(\d+(?:\.\d+)?)\s*"
                    r"(ms|s|sec|seconds|秒|毫秒|%)(?![a-z])")
_CAUSAL = pattern(CAUSAL, ROOT_CAUSE)
# A failure with its reason in brackets or after a colon states that reason ("relocation failed (node
# search-2e7b-3 busy)", "inventory check failed: inventory-service timed out"), and a service that logs
# what it answered to the event it reports states why it answered so ("upstream timeout: ..., returning
# ERR_TIMEOUT").
_EVIDENCE_CAUSAL = pattern(STATED_CAUSE, ROOT_CAUSE, extra=r"(?:\bfailed|失败)\s*[(:]|,\s*(?:returning|falling back)\b")

# Concepts whose negation flips a claim: "no errors" against an ERROR record.
_CONCEPTS: dict[str, tuple[str, ...]] = {
    "error": ("错误", "报错", "异常", "error", "errors", "exception", "exceptions"),
    "timeout": ("超时", "timeout", "timeouts", "timed out"),
    "alert": ("告警", "报警", "alert", "alerts", "firing"),
    "failure": ("失败", "fail", "failed", "failure", "failures"),
}
_CONCEPT_ALT = "|".join(sorted({w for ws in _CONCEPTS.values() for w in ws}, key=len, reverse=True))
_NEGATED = re.compile(
    rf"(?<!无)(?:{ABSENCE.zh_alternation})(?!法)[^，。,.;；\n]{{0,6}}?(?:{_CONCEPT_ALT})"
    rf"|{ABSENCE.en_alternation}\s+(?:[a-z_\-]+\s+){{0,3}}?(?:{_CONCEPT_ALT})\b"
)

# Words that say how something was seen, not what: they carry no evidence.
_META = frozenset(
    "日志 指标 记录 显示 表明 存在 现象 情况 发现 观察 数据 信息 相关 当前 期间 问题 服务 出现 "
    "log logs shows show showed shown observed metric metrics record records recorded current currently "
    "during issue service services appears appeared seen".split()
)
# Entity kinds that can conflict with a different value of the same kind in the cited record.
_CONFLICT_KINDS = frozenset({"service", "instance", "percentage", "error_code", "identifier", "http_status", "duration"})




# Entity kinds a claim may state rounded ("12.1 s" of 12124 ms, "98%" of 97.6%).
_ROUNDED_KINDS = frozenset({"number", "quantity", "percentage", "duration"})

# A number stated as a count of records ("68 errors", "seven times", "104 NPE 500s", "共 25 条"):
# an aggregate no one record holds, held to the window's tally of records like the cited ones.
_SPELLED = {w: n for n, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())
            if n >= 2}  # "one" is rather "a single" or "one of" than a count
_COUNT_NOUN = (r"times|errors|warnings|lines|entries|records|events|occurrences|failures|timeouts|exceptions"
               r"|messages|hits|requests|calls|responses|lookups|attempts|\d{3}s")  # "104 NPE 500s": responses of a status
# (A colon before the number is a label's, "超时：25 次"; a digit and a colon before it, a clock time's.)
# The noun may end a longer name: "four OutOfMemoryErrors", "3 NullPointerExceptions".
_COUNTED = re.compile(rf"(?<![\w.-])(?<!\d:)(\d+|{'|'.join(_SPELLED)})\s+(?:[^\s\d]\S*\s+){{0,2}}?[a-z]*(?:{_COUNT_NOUN})\b"
                      rf"|(?<![\w.-])(?<!\d:)(\d+)\s*(?:次|条|个|回|单|笔|起)"
                      # "13 of them ERROR", "14 of those": a part of a counted whole
                      rf"|(?<![\w.-])(?<!\d:)(\d+)\s+of\s+(?:them|those|these)\b")


# --- text helpers ------------------------------------------------------------------------------


_FULL_STOP_AFTER_DIGIT = re.compile(r"(?<=\d)\.(?=\s|$|[)\]）])")


def _without_times(text: str) -> str:
    """The text without its clock times and dates, whose digits are no figures (a day is checked as a day)."""
    # A full stop after a number ends the sentence; left in place it hides the number from extraction.
    return _FULL_STOP_AFTER_DIGIT.sub(" ", CLOCK_TIME.sub(" ", DATE.sub(" ", normalize(text))))


def _ranged(text: str, anchor: str, evidence: str) -> str:
    """The text with each range it states read as a value of the evidence inside it: "slow queries
    of about 11-15 s" over records of 12.124 s and 14.48 s states 12.124 s. The cited record's own
    value comes first (a range over many lines is then not set against it with a neighbour's value),
    and among several the lowest, so the reading never depends on set order. A range no evidence
    value falls in stays as written, and its ends are then checked like any number."""
    sources = [(_entities(anchor), _BARE.findall(_without_times(anchor))),
               (_entities(evidence), _BARE.findall(_without_times(evidence)))]

    def inside(m: re.Match[str]) -> str:
        low, high, unit = float(m.group(1)), float(m.group(3)), m.group(4)
        if m.group(2) not in (None, unit):
            return m.group(0)  # two units: no one quantity's range
        scale = UNIT_SECONDS.get(unit, 1.0)
        kind = "percentage" if unit == "%" else "duration"
        for held, bare in sources:
            values = sorted(float(e.value.rstrip("s")) for e in held if e.kind == kind)
            # a time with no unit is in the range's own unit
            values += sorted(float(b) * scale for b in bare) if kind == "duration" else []
            value = next((v for v in values if low * scale <= v <= high * scale), None)
            if value is not None:
                return f"{value:g}{'%' if unit == '%' else 's'}"
        return m.group(0)

    return _RANGE.sub(inside, normalize(text))


# A span said in two units, or with a half ("8 minutes 40 seconds later", "72 and a half minutes"): one figure.
_COMPOUND = re.compile(r"(\d+)\s*(?:minutes?|mins?)\s+(?:and\s+)?(\d+)\s*(?:seconds?|secs?)\b")
_AND_A_HALF = re.compile(r"(\d+)\s+(?:and\s+)?a\s+half\s+(minutes?|hours?|seconds?)\b")  # the clause reader drops "and"
# A period said over a listed series ("six orders ... roughly one every 13 minutes"): the span between
# its ends over the count of gaps the series has.
_ROUGHLY = re.compile(r"\b(?:about|around|roughly|approx(?:imately)?|nearly|almost|some|over|under|more than|less than"
                      r"|within|just)\b|~|≈|约|大约|大概|左右|差不多|将近|近|多|不到|一点")
_EVERY = re.compile(r"^\s*(?:every\b|each\b|每)")
# A record's time of day to the second ("T16:20:48.164Z", "16:20:48").
_STAMP = re.compile(r"(?<!\d)(\d{1,2}):(\d{2}):(\d{2})(?:\.(\d+))?")


def _seconds_of_day(text: str) -> list[float]:
    return [int(h) * 3600 + int(m) * 60 + int(sec) + float(f"0.{frac}" if frac else 0)
            for h, m, sec, frac in _STAMP.findall(text)]


_WAITED = re.compile(r"\bafter\s+(\d+(?:\.\d+)?\s*(?:ms|s|sec|secs|seconds)\b)")


# A span spelled in words ("six minutes before"): the same interval in figures.
_SPELLED_SPAN = re.compile(r"\b(two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty"
                           r"|fifty|sixty)\s+(seconds?|minutes?|hours?)\b")
_SPELLED_TENS = {**_SPELLED, "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60}


def _spans_in_figures(norm: str) -> str:
    """Spelled spans in figures where the claim gives both ends' times ("resolved at 08:11, six minutes before
    the first timeout at 08:17:00"): reckoned between them. With fewer, which records it spans is the reader's
    guess, and the words stay words."""
    if len({t[:5] for t in clock_times(norm)}) < 2:
        return norm
    return _SPELLED_SPAN.sub(lambda m: f"{_SPELLED_TENS[m.group(1)]} {m.group(2)}", norm)


def _reckoned_out(text: str) -> str:
    """The claim's own words without the intervals it states, which are reckoned between records' times and
    checked as such (`_intervals`), not words a record holds."""
    return INTERVAL.sub(" ", _spans_in_figures(normalize(text)))


def _intervals(text: str, anchor: str, evidence: str) -> tuple[str, list[str]]:
    """The text without the intervals it states, and those of them that no gap between two times
    bears out within a sixth ("about 40 s after" of 16:20:48 and 16:21:29 is borne out): the claim's
    own two times when it names them, else one of its own or of its cited record and another of the
    evidence. An interval is reckoned, not read off one record: set against a record's own durations
    it would conflict where it only cannot be checked."""
    text = _AND_A_HALF.sub(r"\1.5 \2", _COMPOUND.sub(lambda m: f"{int(m[1]) * 60 + int(m[2])} seconds",
                                                     _spans_in_figures(normalize(text))))
    own = _seconds_of_day(text)
    ends = own if len(own) >= 2 else own + _seconds_of_day(anchor)
    others = own if len(own) >= 2 else _seconds_of_day(evidence)
    gaps = {abs(b - a) for a in ends for b in others if a != b}
    # how many gaps a series the claim counts has: "six orders" or six listed ids, five gaps
    counts = {n for m in _COUNTED.finditer(text) for said in [m.group(1) or m.group(2) or m.group(3)]
              for n in [_SPELLED.get(said) or int(said)] if 2 <= n <= 500}
    counts |= {len(CLOCK_TIME.sub(" ", text).split(","))} if text.count(",") >= 2 else set()
    durations = [float(e.value[:-1]) for e in _entities(evidence) if e.kind == "duration"]
    # the waits the cited record states before what it reports ("504 ... after 0.8s", "timed out after 2000ms")
    waits = [float(e.value[:-1]) for m in _WAITED.finditer(normalize(anchor)) for e in _entities(m.group(1))
             if e.kind == "duration"]
    unheld: list[str] = []

    def held(m: re.Match[str]) -> str:
        low, high, unit = next((m.group(i), m.group(i + 1), m.group(i + 2)) for i in (1, 4, 7) if m.group(i))
        scale = UNIT_SECONDS.get(unit, 60.0 if unit.startswith("min") or unit == "分钟"
                                 else 3600.0 if unit.startswith("hour") or unit == "小时" else 1.0)
        lo, hi = float(low) * scale, float(high or low) * scale
        # "each ~30 s" may be how long each one took, a duration the evidence holds ("after 30.0s")
        took = m.group(0).lstrip().startswith("each") and any(lo * 5 / 6 <= d <= hi * 7 / 6 for d in durations)
        # "about 8 minutes" may be a sixth off; "9 minutes" said plainly is 9 to within its own unit's rounding
        loose = bool(_ROUGHLY.search(text[max(0, m.start() - 14):m.start()] + m.group(0)))
        below, above = (lo * 5 / 6, hi * 7 / 6) if loose else (lo - scale * 3 / 4, hi + scale * 3 / 4)
        # "0.8s 后拿到 504" of that record is its wait, said as the record says it, not a gap between two records
        # ("约 2 秒后" of its "after 2004ms" as roughly as it is said)
        took = took or (not _EVERY.match(m.group(0)) and any(lo <= w <= hi or (loose and below <= w <= above)
                                                             for w in waits))
        periods = {gap / k for gap in gaps for n in counts for k in (n - 1, n) if k >= 2} if _EVERY.match(m.group(0)) else set()
        if not took and not any(below <= gap <= above for gap in gaps | periods):
            unheld.append(m.group(0).strip())
        return " "

    return INTERVAL.sub(held, text), unheld


def _entities(text: str) -> frozenset[Entity]:
    """Entities with clock times removed first: '10:00' is a time, not the numbers 10 and 0."""
    out = set()
    for ent in extract_entities(_without_times(text)):
        if ent.kind == "quantity" and re.fullmatch(r"[\d.]+s", ent.value):
            ent = Entity("duration", ent.value)
        out.add(ent)
    return frozenset(out)


def _present(ent: Entity, values: set[str], scaled: dict[str, float] | None = None) -> bool:
    """Whether the evidence holds the claim's entity: the value itself, a quantity's bare number,
    or a number the claim rounds ("12.1 s" of 12124 ms; "4.8 million" with its scale in `scaled`)."""
    if ent.value in values:
        return True
    # "245个" in a claim is the bare 245 of "线程数: 245" in the record.
    if ent.kind == "quantity" and re.sub(r"[^\d.]", "", ent.value) in values:
        return True
    scale = (scaled or {}).get(ent.value, 1.0)
    return ent.kind in _ROUNDED_KINDS and any(rounds_to(ent.value, v, scale) for v in values)


# A time a record gives with no unit ("Query_time=14.46", "elapsed: 3.2"): a claim's "14.46 秒" or
# "11-15 s" gives its unit, which a figure with a unit of its own ("850ms") would contradict.
_BARE = re.compile(r"(?:time|latency|duration|elapsed|took|pause|wait)\w*\s*[=:]\s*(\d+(?:\.\d+)?)"
                   r"(?![\d.]|\s*(?:ms|s|sec|secs|seconds?|秒|毫秒|min|mins|minutes?|分钟|h|hours?|%)(?![a-z]))")


def _word_within(ent: Entity, evidence_norm: str) -> bool:
    """An identifier the evidence holds as a whole word where its context reads it as none: "GET" after "的慢请求"
    is an identifier, after "within SLO: " only a word."""
    return ent.kind == "identifier" and re.search(rf"(?<![\w.-]){re.escape(ent.value)}(?![\w-])", evidence_norm) is not None


def _store_within(ent: Entity, evidence_norm: str) -> bool:
    """A shared store the evidence names inside a longer word: "kafka" of "KafkaConsumerLag"."""
    return ent.kind == "service" and shared_store(ent.value) and ent.value in evidence_norm


# Kinds of a reading taken at a time: a record of the time a claim gives states it, not one of another time.
_READING_KINDS = frozenset({"percentage", "quantity", "duration"})


def _mistimed(text: str, claim_ents: frozenset[Entity], lines: list[str]) -> list[str]:
    """The one time a claim gives when a reading it gives with it is held by no cited record of that
    time but by a record of another time that the claim names by no word of its own ("08:27, with
    the pool at 100.0%" where 100.0% is the 08:17 alert's and 08:27 a timeout's): a reading borrowed
    from another time. A claim naming that record ("since 19:31, RedisMemoryHigh at 98.0%") states
    two facts, each of its own record."""
    times = clock_times(text)
    at = [line for line in lines if times <= clock_times(line)]
    if len(times) != 1 or not at:
        return []
    words = set(_content_words(text)) - set(_content_words("\n".join(at)))
    for e in (e for e in claim_ents if e.kind in _READING_KINDS):
        if any(_present(e, _values(line)) for line in at):
            continue
        others = [line for line in lines if line not in at and _present(e, _values(line))]
        if others and not any(words & set(_content_words(line)) for line in others):
            return sorted(times)
    return []


def _counted(text: str, tallies: list[Tally]) -> tuple[set[int], list[str]]:
    """The counts the claim states that its windows' tallies bear out, and the counts it spells
    ("seven times", which no entity reads) that none bears out. A count is a number the claim
    states, with a noun or without ("32 slow queries", "27 on GET /api/orders", a table cell): the
    records like the cited ones in all, or on the instance it belongs to (`_owner`). A tally counted
    only up to its bound bears out nothing."""
    # A number before a quote counts its lines ("56 \"inventory check failed ...\""): the quote is
    # the record's words, not the writer's, so it stands as the lines it quotes.
    norm = _without_times(unquoted(text, "lines"))
    exact = [t for t in tallies if not t["capped"]]
    # a count over the span the claim's times bound ("16:20:48 起 59 次", "between 16:20 and 16:54, 52 ...")
    # and the output's own size, in all or of one level ("query_logs returned 54 lines, 13 of them ERROR")
    whole = {t["records"] for t in exact} | {t["in_span"] for t in exact if "in_span" in t}
    whole |= {t["coarse"] for t in tallies if "coarse" in t} | _level_counts(norm, tallies)
    found = find_entities(norm)
    instances = [m for m in found if m.kind == "instance"]

    def borne(n: int, at: int) -> bool:
        owners = _owner(instances, at)
        return n in whole or any(n in (t["by_instance"].get(i), t.get("by_instance_in_span", {}).get(i))
                                 for t in exact for i in owners)

    counted = {n for m in found for n in [stated_count(Entity(m.kind, m.value))] if n is not None and borne(n, m.start)}
    wrong: list[str] = []
    for m in _COUNTED.finditer(norm):
        said = m.group(1)
        if said not in _SPELLED:
            continue
        if borne(_SPELLED[said], m.start()):
            counted.add(_SPELLED[said])
        elif exact:
            wrong.append(said)
    # the terms of a sum or share the writer works out, each a count on some instance
    on_any = whole | {n for t in exact for of in (t["by_instance"], t.get("by_instance_in_span", {})) for n in of.values()}
    for m in _WORKED.finditer(norm):
        terms = [int(n) for n in re.findall(r"\d+", m.group("terms"))]
        if not set(terms) <= on_any:
            continue
        if "/" in m.group("terms"):
            counted |= set(terms)  # its percentage is checked as worked out (_ratios)
        elif m.group("result") == str(sum(terms)):
            counted |= {*terms, sum(terms)}
        else:
            wrong.append(m.group(0))
    return counted, wrong


# A sum or a share written out ("16+18+16=50", "14+23+19=56 次", "18/50=36%", "50/68 ≈ 74%").
_WORKED = re.compile(r"(?<![\w.])(?P<terms>\d+(?:\s*\+\s*\d+)+(?=\s*=)|\d+\s*/\s*\d+(?=\s*(?:=|≈|~|约)\s*[\d.]+\s*%))"
                     r"\s*(?:=|≈|~|约)\s*(?P<result>\d+(?:\.\d+)?)")


# A claim counting the output's own lines ("query_logs returned 54 lines", "共 54 条日志").
_LINES = re.compile(r"\b(?:lines|entries|records)\b|条日志|行日志|条记录")


def _level_counts(norm: str, tallies: list[Tally]) -> set[int]:
    """The output's size, in all or of a level, when the claim counts its lines ("207 WARN/ERROR lines,
    13 of them ERROR"): of each level the claim names, and in all when it names a level or the lines.
    Another count that falls on one ("6 of the timeouts", with 6 WARN lines) is not borne out by it."""
    out = set()
    for t in tallies:
        levels = t.get("levels", {})
        named = {k for k in levels if k != "all" and re.search(rf"\b{k.lower()}\b", norm)}
        out |= {levels[k] for k in named} | ({levels["all"]} if named or _LINES.search(norm) else set())
    return out


def _owner(instances: list[EntityMatch], at: int) -> set[str]:
    """The instances a count at `at` is of, one of each shape: the nearest named before it, else the
    nearest after ("pay-7d9f-1 16, pay-7d9f-2 18"; "38 on checkout-68f0-2"). Another pod's count next
    to a pod is then no count of it."""
    owners = set()
    for shape in {instance_shape(m.value) for m in instances}:
        of = [m for m in instances if instance_shape(m.value) == shape]
        before = [m for m in of if m.end <= at]
        owners.add(before[-1].value if before else next(m.value for m in of if m.start >= at))
    return owners


_PERCENT = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*%")
_FIGURE = re.compile(r"(?<![\w.:/-])(\d+(?:\.\d+)?)(?![\d.%:])")


def _ratios(text: str, tallies: list[Tally]) -> set[str]:
    """The percentages a claim works out from two of its own figures or a tally's totals, rounded as it
    rounds them ("14 (36%) of the 39", "21, i.e. 42%" of 50 records, "约为 104 的 53%" of 55): a
    derived share, not a value any record holds."""
    norm = _without_times(normalize(text))
    figures = {float(f) for f in _FIGURE.findall(_PERCENT.sub(" ", norm))} - {0.0}
    figures |= {float(t["records"]) for t in tallies if not t["capped"] and t["records"]}
    out = set()
    for said in _PERCENT.findall(norm):
        places = len(said.partition(".")[2])
        step = 10.0 ** -places
        if any(abs(100 * a / b - float(said)) <= step / 2 + 1e-9 for a in figures for b in figures if a < b):
            out.add(said)
    return out


def _shares(tallies: list[Tally]) -> set[str]:
    """Each instance's share of an exact tally, in percent ("pay-7d9f-2 18 条，占 36%" of 50)."""
    return {f"{100 * n / t['records']:.2f}".rstrip("0").rstrip(".") for t in tallies if not t["capped"] and t["records"]
            for n in t["by_instance"].values()}


def _values(text: str) -> set[str]:
    return entity_values(_without_times(text))


def _content_words(text: str) -> list[str]:
    return [w for w in keywords(text) if w not in _META and not re.fullmatch(r"[\d.\-]+", w)]


def coverage(text: str, evidence_norm: str) -> float:
    """Share of the text's content words (or a synonym, across zh/en) found in the evidence."""
    words = _content_words(text)
    if not words:
        return 0.0
    hits = sum(1 for w in words if any(s in evidence_norm for s in synonyms(w)) or _singular_in(w, evidence_norm))
    return hits / len(words)


def _singular_in(word: str, evidence_norm: str) -> bool:
    """A name said in the plural, one record of it in the evidence: "OutOfMemoryErrors" of its
    "java.lang.OutOfMemoryError" (a whole word there, not the start of a longer one)."""
    return (len(word) >= 6 and word.endswith("s") and not word.endswith("ss")
            and re.search(rf"(?<![\w-]){re.escape(word[:-1])}(?![\w-])", evidence_norm) is not None)


def _concepts(text: str) -> tuple[set[str], set[str]]:
    """(negated concepts, affirmed concepts) of a text."""
    norm = normalize(text)
    negated = {c for m in _NEGATED.finditer(norm) for c, ws in _CONCEPTS.items() if any(w in m.group(0) for w in ws)}
    rest = _NEGATED.sub(" ", norm)
    affirmed = {c for c, ws in _CONCEPTS.items() if any(w in rest for w in ws)}
    return negated, affirmed


def _claims_own(words: re.Pattern[str], claim_norm: str, evidence_norm: str) -> bool:
    """Whether the claim says one of `words` that its cited records do not: "POSSIBLE BREAK-IN
    ATTEMPT" or "Caused by:" quoted from the record are the record's words, not a hedge or a
    causal link of the claim's own."""
    return any(not re.search(rf"(?<!\w){re.escape(m.group(0))}(?!\w)", evidence_norm) for m in words.finditer(claim_norm))


def _verbatim(claim_norm: str, anchor: list[str]) -> bool:
    """The claim is the text of its anchor records, whole or a part of it, or parts of it in
    their order cut with "..." (with at least two characters that are not spaces or punctuation)."""
    pieces = [p.strip() for p in ELLIPSIS.split(claim_norm) if p.strip()]
    return len(re.sub(r"[\W_]", "", "".join(pieces))) >= 2 and in_order(pieces, normalize("\n".join(anchor)))


# --- evidence of one claim ---------------------------------------------------------------------


@dataclass
class _Evidence:
    anchor: list[str] = field(default_factory=list)  # the records where the excerpt was located
    related: list[str] = field(default_factory=list)  # other records naming the claim's entities
    tallies: list[Tally] = field(default_factory=list)  # per window, the records like the cited text
    refs: list[EvidenceRef] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.anchor + self.related)


def _shown(win: Window) -> list[str]:
    """A window's records beside its anchor: those naming the claim's entities, and those like the
    cited one holding a value or time it lists."""
    return win.get("related", []) + win.get("kin", [])


def _gather(entry: CitedClaim | None) -> _Evidence:
    ev = _Evidence()
    for binding in entry["bindings"] if entry is not None else []:
        ids = binding.get("source_invocation_ids") or []
        found = False
        for win in binding.get("windows", []):
            if not win.get("available"):
                continue
            ev.anchor.extend(win.get("anchor", []))
            # Records like the cited one holding values the claim lists are evidence as related ones are.
            ev.related.extend(_shown(win))
            if "tally" in win:
                ev.tallies.append(win["tally"])
            found = found or bool(win.get("found"))
        digest = binding.get("digest")
        if digest and digest.get("source_quote"):
            ev.related.append(digest["source_quote"])
        if any(w.get("available") for w in binding.get("windows", [])):
            ev.refs.append(
                EvidenceRef(
                    trace_ref=binding.get("digest_id") or (f"invocation-{ids[0]}" if ids else ""),
                    tool_name=str(binding.get("tool_name") or ""),
                    source_invocation_ids=ids,
                    note="excerpt located in the output" if found else "excerpt not found verbatim; nearest records used",
                )
            )
    return ev


def _conflict(claim_ents: frozenset[Entity], anchor_ents: frozenset[Entity]) -> tuple[str, str, str] | None:
    for kind in sorted({e.kind for e in claim_ents} & _CONFLICT_KINDS):
        mine = {e.value for e in claim_ents if e.kind == kind}
        theirs = {e.value for e in anchor_ents if e.kind == kind}
        if kind == "service":
            # Both name a service of their own: a store both use (redis) does not make them agree.
            own_mine, own_theirs = ({v for v in side if not shared_store(v)} for side in (mine, theirs))
            if own_mine and own_theirs:
                mine, theirs = own_mine, own_theirs
        if kind == "instance":
            swapped = _swapped_instance(mine, theirs)
            if swapped:
                return kind, *swapped
        elif theirs and not mine & theirs and not any(rounds_to(m, t) for m in mine for t in theirs
                                                      if kind in _ROUNDED_KINDS):
            return kind, "/".join(sorted(theirs)), "/".join(sorted(mine))
    return None


def _denied(text: str) -> frozenset[Entity]:
    """The services a claim names under a negation ("没有一条支付日志来自 user-service", "none of them
    from user-service"): said not to be the record's, they cannot conflict with its writer."""
    norm = normalize(unquoted(text))
    return frozenset(e for e in _entities(norm) if e.kind == "service" and re.search(
        rf"(?:没有|没|无|未|不是|\bno\b|\bnot\b|\bnone\b|\bnever\b|\bwithout\b)[^，,。;；.]*?{re.escape(e.value)}", norm))


def _components(claim_ents: frozenset[Entity], anchor_ents: frozenset[Entity], evidence: str) -> frozenset[Entity]:
    """The stores a claim names beside the record's own service or instance that its cited records
    name too ("cart-4d6e-1 ... 回源 MySQL 5" of "cart cache miss, rebuilding from MySQL"): a part the
    service uses, not a service swapped for it. A store put where the record's service was ("redis-cart
    logged ...") is still a swap."""
    own = {e for e in claim_ents & anchor_ents if e.kind == "instance" or (e.kind == "service" and not shared_store(e.value))}
    held = _entities(evidence) if own else frozenset()
    return frozenset(e for e in claim_ents if e.kind == "service" and shared_store(e.value) and e in held)


def _swapped_instance(mine: set[str], theirs: set[str]) -> tuple[str, str] | None:
    """(the record's, the claim's) instances of a shape in which the two name none in common.
    Shapes are compared apart: a log's host pod says nothing of which redis ordinal a claim names."""
    for shape in sorted({instance_shape(v) for v in mine}):
        own = {v for v in mine if instance_shape(v) == shape}
        held = {v for v in theirs if instance_shape(v) == shape}
        if held and not own & held:
            return "/".join(sorted(held)), "/".join(sorted(own))
    return None


def _unheld_times(text: str, evidence: str) -> list[str]:
    """The claim's clock times and days no record holds: as written, or all of them once its offset
    timestamps are written in UTC ("2026-11-21T22:31:10+08:00" is a record's 14:31:10Z; a record's own
    offset timestamp is met as written)."""
    times, days = clock_times(text) - clock_times(evidence), dates(text) - dates(evidence)
    utc = in_utc(text)
    if (times or days) and utc != text and not clock_times(utc) - clock_times(evidence) and not dates(utc) - dates(evidence):
        return []
    return sorted(times) + sorted(days)


def _check_claim(claim: ExecutorClaim, entry: CitedClaim | None, gate_rules: list[str], lang: str) -> ClaimCheck:
    cid = claim.key
    text = claim.claim_text or ""
    ev = _gather(entry)

    def done(verification: ClaimVerification, detail: str) -> ClaimCheck:
        return ClaimCheck(claim_id=cid, verification=verification, detail=detail, evidence_refs=ev.refs)

    if not ev.anchor and not ev.related:
        return done("unsupported", tr("offline.verifier.no_evidence", lang))
    plain, unheld = _intervals(text, "\n".join(ev.anchor), ev.text)
    claim_ents = _entities(_ranged(plain, "\n".join(ev.anchor), ev.text))
    anchor_ents = _entities("\n".join(ev.anchor))
    conflict = _conflict(claim_ents - _denied(text) - _components(claim_ents, anchor_ents, ev.text), anchor_ents)
    if conflict:
        kind, theirs, mine = conflict
        return done("contradicted", tr("offline.verifier.conflict", lang, kind=kind, evidence=theirs, claim=mine))
    swapped = swapped_speaker(text, ev.anchor)
    if swapped:
        return done("contradicted", tr("offline.verifier.conflict", lang, kind="writer", evidence=swapped[0],
                                       claim=swapped[1]))
    neg_claim, aff_claim = _concepts(text)
    records = [_concepts(line) for line in ev.anchor + ev.related]
    # What a claim denies of the services it names ("not on an error returned by payment-service") is
    # not denied by another writer's record of it (api-gateway's ERROR line).
    named = {e.value for e in claim_ents if e.kind == "service"}
    of_named = [_concepts(line) for line in ev.anchor + ev.related if not named or writer(line) in (None, *named)]
    for concept in sorted(neg_claim):
        if any(concept in aff for _, aff in of_named):
            return done("contradicted", tr("offline.verifier.negation", lang, concept=concept))
    for concept in sorted(aff_claim - neg_claim):
        mentions = [(neg, aff) for neg, aff in records if concept in neg or concept in aff]
        if mentions and all(concept in neg and concept not in aff for neg, aff in mentions):
            return done("contradicted", tr("offline.verifier.negation", lang, concept=concept))

    values = _values(ev.text)
    # a share worked out is a percentage only: "11" is no instance's 11.1% of a tally
    shares = values | _shares(ev.tallies) | _ratios(text, ev.tallies)
    ev_norm = normalize(ev.text)
    counted, miscounted = _counted(text, ev.tallies)
    bare = set(_BARE.findall(_without_times(ev_norm)))
    missing = [e.value for e in sorted(claim_ents)
               if not _present(e, shares if e.kind == "percentage" else values, scales(text))
               and stated_count(e) not in counted and not _store_within(e, ev_norm)
               and not (e.kind == "duration" and e.value[:-1] in bare) and not _word_within(e, ev_norm)]
    missing += miscounted
    missing += _unheld_times(text, ev.text) + unheld + _mistimed(text, claim_ents, ev.anchor + ev.related)
    if missing:
        return done("external_unknown", tr("offline.verifier.external", lang, items=", ".join(missing)))
    if gate_rules:
        return done("unsupported", tr("offline.verifier.gate", lang, rules=", ".join(sorted(set(gate_rules)))))
    cov = coverage(_reckoned_out(text), ev_norm)
    # A service name alone is no support: "payment-service ran out of disk" shares only the name.
    # ... nor is a word of relation alone, but a count the tally bears out is a fact ("That warning repeats
    # seven times" of the warning the statement before quoted).
    # So is an interval the records' times bear out ("the first NPE came 48 seconds later").
    substantive = any(e.kind != "service" for e in claim_ents) or bool(counted) or _reckoned_out(text) != _spans_in_figures(normalize(text))
    if cov < PARTIAL_COVERAGE and not substantive:
        return done("unsupported", tr("offline.verifier.low_overlap", lang, cov=cov))
    # Hedges and links are the writer's: a quoted record's "due to" or "may" is the record's wording,
    # and so are the ones the claim shares with its records when it copies them unquoted.
    norm = normalize(unquoted(text))
    if _claims_own(HEDGE.regex, norm, ev_norm):
        return done("overstated", tr("offline.verifier.hedge", lang))
    # The link must be a record's own: one record stating a cause and holding what the claim says
    # ("原因: 节点维护驱逐" of the restart it reports), not a cause of something else beside the effect.
    evidence_states_cause = any(_EVIDENCE_CAUSAL.search(line) and coverage(text, line) >= DIRECT_COVERAGE
                                for line in map(normalize, ev.anchor + ev.related))
    if _claims_own(_CAUSAL, norm, ev_norm) and not evidence_states_cause:
        return done("overstated", tr("offline.verifier.causal", lang))
    if claim.claim_type == "root_cause" and not evidence_states_cause:
        return done("overstated", tr("offline.verifier.root", lang))
    if cov < INFERENCE_COVERAGE and not substantive:
        return done("unsupported", tr("offline.verifier.low_overlap", lang, cov=cov))
    # A claim that is its record's text word for word observes it, however few words it has
    # ("03-17 16:13:38.869  2227  2227 D", a sub-span of a logcat line).
    if claim.support_level == "direct" and (cov >= DIRECT_COVERAGE or _verbatim(normalize(text), ev.anchor)):
        return done("direct_observation", tr("offline.verifier.direct", lang, cov=cov))
    return done("reasonable_inference", tr("offline.verifier.inference", lang, cov=cov))


# --- hypotheses, digests, retry ---------------------------------------------------------------


def _check_hypothesis(i: int, hyp: ExecutorHypothesis, evidence: str, lang: str) -> HypothesisCheck:
    text = normalize(unquoted(hyp.hypothesis_text or ""))
    basis = (hyp.basis or "").strip()
    needed = [n for n in hyp.needed_evidence if n.strip()]
    if _CAUSAL.search(text) and not HEDGE.search(text):
        return HypothesisCheck(hypothesis_index=i, verification="overstated_as_fact", detail=tr("offline.verifier.h_fact", lang))
    if not basis or not needed:
        return HypothesisCheck(hypothesis_index=i, verification="unsupported_hypothesis", detail=tr("offline.verifier.h_empty", lang))
    ev_values = _values(evidence)
    foreign = [e for e in _entities(basis) if not _present(e, ev_values)]
    if foreign or coverage(basis, normalize(evidence)) == 0.0:
        return HypothesisCheck(hypothesis_index=i, verification="unsupported_hypothesis", detail=tr("offline.verifier.h_basis", lang))
    return HypothesisCheck(hypothesis_index=i, verification="reasonable_hypothesis", detail=tr("offline.verifier.h_ok", lang))


def _check_digest(digest: EvidenceDigest, windows: list[Window], lang: str) -> DigestCheck:
    did = digest.digest_id

    def bad(detail: str) -> DigestCheck:
        return DigestCheck(digest_id=did, verification="unfaithful", detail=detail)

    absent = [w["invocation_id"] for w in windows if not w.get("available")]
    if absent or not windows:
        return bad(tr("offline.verifier.d_missing", lang, ids=absent or digest.source_invocation_ids))
    for w in windows:
        if digest.tool and w.get("tool_name") and digest.tool != w["tool_name"]:
            return bad(tr("offline.verifier.d_tool", lang, tool=digest.tool, actual=w["tool_name"]))
    quote = digest.source_quote
    if not quote.strip() or not any(w.get("found") for w in windows):
        return bad(tr("offline.verifier.d_quote", lang))
    source = "\n".join([quote] + [line for w in windows for line in w.get("anchor", []) + _shown(w)])
    values = _values(source)
    summary = digest.summary
    foreign = [e.value for e in sorted(_entities(summary)) if not _present(e, values)]
    foreign += sorted(clock_times(summary) - clock_times(source))
    if foreign:
        return bad(tr("offline.verifier.d_entities", lang, items=", ".join(foreign)))
    if _CAUSAL.search(normalize(summary)) and not _CAUSAL.search(normalize(source)):
        return bad(tr("offline.verifier.d_causal", lang))
    return DigestCheck(digest_id=did, verification="faithful", detail=tr("offline.verifier.d_ok", lang))


def _gaps_closed(retry: RetryContext, claims: list[ExecutorClaim], checks: list[ClaimCheck]) -> bool:
    """Every gap of the previous round is covered by a claim now judged supported."""
    good = {c.claim_id for c in checks if c.verification in ("direct_observation", "reasonable_inference")}
    supported = normalize("\n".join(c.claim_text or "" for c in claims if c.key in good))
    gaps = [g for g in retry.unsupported_claims + retry.missing_info if g.strip()]
    return all(coverage(g, supported) >= DIRECT_COVERAGE for g in gaps)


# --- entry point -------------------------------------------------------------------------------

# This verifier's own reading of its checks. The verdict policy (pipeline.verdict.policy) applies the
# project's matrix afterwards and keeps the stricter of the two, so this is a second opinion,
# not a copy of the policy: it cannot make the guard agree with itself.
_SEVERE_TYPES = frozenset({"root_cause", "symptom", "impact"})


def _judgement(claims: list[ExecutorClaim], checks: list[ClaimCheck], gate_failed: bool) -> Verdict:
    """REJECT when a claim contradicts its evidence or a main claim (cause, symptom, impact) brings
    in something the evidence lacks; LOW_CONFID when any claim is weak, none is directly observed,
    or the gatekeeper failed; PASS otherwise."""
    if not claims:
        return "LOW_CONFID"
    types = {c.key: c.claim_type for c in claims}
    found = [(c.verification, types.get(c.claim_id)) for c in checks]
    if any(v == "contradicted" or (v == "external_unknown" and t in _SEVERE_TYPES) for v, t in found):
        return "REJECT"
    weak = any(v not in ("direct_observation", "reasonable_inference") for v, _ in found)
    if weak or gate_failed or not any(v == "direct_observation" for v, _ in found):
        return "LOW_CONFID"
    return "PASS"


def verify(payload: VerifierPayload) -> VerifierOutput:
    lang = detect_language(payload["original_query"])
    # The payload is the JSON an LLM verifier is shown; its records are read back into the contract
    # models they were dumped from. Positions are the written ones (what claim_index and targets count).
    status = ParseStatus.model_validate(payload["executor_output_parse_status"]).status
    output = ExecutorOutput.read(payload["executor_structured_output"]) if status == "valid" else None
    gate = GatekeeperResult.model_validate(payload["gatekeeper_result"])
    positioned = [(i, c) for i, c in enumerate(output.claims) if c.written_as_object] if output else []
    claims = [c for _, c in positioned]

    failed = set(gate.failed_rules)
    gate_rules: dict[int, list[str]] = {}
    for err in gate.errors:
        at = parse_target(err.target)
        if at and err.rule_id in failed:
            gate_rules.setdefault(at[0], []).append(err.rule_id)

    cited = {e["claim_index"]: e for e in payload["cited_evidence"]}
    claim_checks = [_check_claim(c, cited.get(i), gate_rules.get(i, []), lang) for i, c in positioned]

    digests = [EvidenceDigest.model_validate(d) for d in payload.get("evidence_digests", [])]
    evidence_parts = [line for e in cited.values() for b in e["bindings"] for w in b["windows"]
                      for line in w.get("anchor", []) + _shown(w)]
    evidence_parts += [d.source_quote for d in digests]
    evidence_parts += [ToolTraceSummaryItem.model_validate(s).output_summary for s in payload["tool_trace_summary"]]
    evidence = "\n".join(evidence_parts)
    hypotheses = [(i, h) for i, h in enumerate(output.hypotheses) if h.written_as_object] if output else []
    hypothesis_checks = [_check_hypothesis(i, h, evidence, lang) for i, h in hypotheses]

    digest_windows = {d["digest_id"]: d["windows"] for d in payload.get("digest_evidence", [])}
    digest_checks = [_check_digest(d, digest_windows.get(d.digest_id, []), lang) for d in digests]

    retry = RetryContext.model_validate(payload["retry_context"]) if payload["retry_context"] else None
    verdict = _judgement(claims, claim_checks, gate.status == "fail")
    counts: dict[str, int] = {}
    for c in claim_checks:
        counts[c.verification] = counts.get(c.verification, 0) + 1
    labels = family("offline.verifier.labels.", lang)
    parts = [
        tr("offline.verifier.rationale", lang, n=len(claims), counts=tr("offline.verifier.sep", lang).join(
            f"{labels[k]} {v}" for k, v in counts.items()))
        if claims else tr("offline.verifier.no_claims", lang)
    ]
    if gate.status == "fail":
        parts.append(tr("offline.verifier.gate_fail", lang, rules=", ".join(gate.failed_rules)))
    parts.append(tr("offline.verifier.verdict", lang, verdict=verdict))
    return VerifierOutput(
        verdict=verdict,
        groundedness_score=groundedness(claim_checks, claims),
        claim_checks=claim_checks,
        hypothesis_checks=hypothesis_checks,
        digest_checks=digest_checks,
        rationale=" ".join(parts) if lang == "en" else "".join(parts),
        retry_gaps_closed=_gaps_closed(retry, claims, claim_checks) if retry else None,
    )
