"""Text primitives shared by the gatekeeper, the offline verifier and the composer guard.

Entity extraction is the core of catching swapped facts: a number with its unit, a percentage,
a service name, an error code, an order/request id or an HTTP status pulled out of one text can
be looked up in another. Normalisation makes whitespace, case and full-width punctuation
irrelevant, so a faithful excerpt never fails on formatting.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from functools import lru_cache

from pipeline.text import segment

_WS = re.compile(r"\s+")
# Where one sentence of a question ends and the next begins ("...下不了。5xx 比例...", "... 18%. is it ..."); a
# dot inside a version or a figure ("v2.4.1", "92.0") ends none.
SENTENCE_BREAK = re.compile(r"(?<=[。！？!?])\s*|(?<=\.)\s+(?=\S)")
# Where a quote leaves part of its record out: "...", "…", "[...]". Dots with a line-drawing
# character on both sides ("`-...-`", "__...-." of a banner's ASCII art) are the output's own
# characters: read as an elision, they would cut the quote into pieces checked apart, in any order.
_DRAWING = r"\-_`|/\\~=*+^#."
ELLIPSIS = re.compile(rf"(?:(?<![{_DRAWING}])\.{{3,}}|\.{{3,}}(?![{_DRAWING}])|…+|⋯+|\[\s*\.\.\.\s*\])")
# The one definition of a Chinese character: the unified ideographs, extension A and the
# compatibility ideographs. Chinese words, runs and "is this Chinese" all use it.
CJK_IDEOGRAPHS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
CJK_CHAR = re.compile(f"[{CJK_IDEOGRAPHS}]")
CJK_RUN = re.compile(f"[{CJK_IDEOGRAPHS}]+")
# What a tokenizer spends about one token on: ideographs, CJK punctuation, kana, hangul and
# full-width forms; other text costs about one token per CHARS_PER_TOKEN characters.
ONE_TOKEN_CHAR = re.compile(f"[\u3000-\u30ff{CJK_IDEOGRAPHS}\uac00-\ud7af\uff00-\uffef]")
CHARS_PER_TOKEN = 4
# Digits cost a token each: the SentencePiece tokenizers of the small open models (Gemma, Llama,
# Qwen) split numbers digit by digit, and log lines are dense with timestamps and ids (a digest
# prompt estimated within Gemma 3's 16k context was 19,944 tokens at one token per 4 characters).
_DIGIT_CHAR = re.compile(r"\d")


def is_cjk(ch: str) -> bool:
    return CJK_CHAR.fullmatch(ch) is not None


def estimate_tokens(text: str) -> int:
    """An LLM's token count of `text`, within the budget's calibration (pipeline/llm/budget.py)."""
    if not text:
        return 0
    dense = len(ONE_TOKEN_CHAR.findall(text)) + len(_DIGIT_CHAR.findall(text))
    return dense + math.ceil((len(text) - dense) / CHARS_PER_TOKEN)


# A full-width comma between digits ends a clause ("PID 1，245 个线程" is PID 1 and 245 threads): a
# Chinese writer's IME types it where English prose would put ", "; thousands are written with ",".
_CLAUSE_COMMA = re.compile(r"(?<=\d)\uff0c(?=\d)")


def normalize(text: str) -> str:
    """NFKC (full-width -> half-width), lower case, whitespace runs -> one space."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", _CLAUSE_COMMA.sub(", ", text))).strip().lower()


# A clock time ("16:20", "16:20:48"), also one a colon follows ("16:20: deployment finished", a timeline's item)
# or a label's colon precedes ("时间顺序：19:31"); never the minutes and seconds of a longer one.
CLOCK_TIME = re.compile(r"(?<!\d)(?<!\d:)(\d{1,2}):(\d{2})(?::\d{2})?(?!\d|:\d)")


def clock_times(text: str) -> set[str]:
    """The clock times a text names, as HH:MM: a record's "T16:20:48.164Z" is the claim's "16:20"."""
    return {f"{int(h):02d}:{m}" for h, m in CLOCK_TIME.findall(normalize(text))}


# A timestamp written with its zone's offset ("2026-11-21T22:31:10+08:00", "...T16:17:00.5+0800").
_ZONED = re.compile(r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2}))?(?:\.\d+)?([+-])(\d{2}):?(\d{2})(?!\d)")


def in_utc(text: str) -> str:
    """The text with each timestamp written with a zone offset written in UTC, as records are
    ("2026-11-21T22:31:10+08:00" -> "2026-11-21T14:31:10Z"): a claim's local time is the record's time."""
    def utc(m: re.Match[str]) -> str:
        day, hh, mm, ss, sign, oh, om = m.groups()
        local = datetime.fromisoformat(f"{day}T{hh}:{mm}:{ss or '00'}")
        offset = timedelta(hours=int(oh), minutes=int(om)) * (1 if sign == "+" else -1)
        return (local - offset).strftime("%Y-%m-%dT%H:%M:%S" if ss else "%Y-%m-%dT%H:%M") + "Z"
    return _ZONED.sub(utc, text) if "+" in text or "-" in text else text


# A calendar date ("2026-04-09", "2026/04/09T09:11", a logcat line's "04-09 09:11:00", "4月9日"): a day, whose
# digits are no figure a claim states ("logged 4 times" is not borne out by the 04 of a timestamp).
DATE = re.compile(r"(?<![\d.])\d{4}([-/.])(\d{1,2})\1(\d{1,2})(?!\d)|(?<![\d.:/-])(\d{1,2})-(\d{1,2})(?=[t\s]\d{1,2}:\d{2})"
                  r"|(?<!\d)(\d{1,2})月(\d{1,2})[日号]")


def dates(text: str) -> set[str]:
    """The days a text names, as MM-DD: a record's "2026-04-09T09:11:00Z" is the claim's "4月9日"."""
    out = set()
    for m in DATE.finditer(normalize(text)):
        month, day = [g for g in m.groups()[1:] if g]  # the first group is the separator
        out.add(f"{int(month):02d}-{int(day):02d}")
    return out


def in_order(pieces: list[str], text: str) -> bool:
    """Whether the pieces all lie in the text, each after the one before (a quote cut with "...")."""
    at = 0
    for piece in pieces:
        at = text.find(piece, at)
        if at < 0:
            return False
        at += len(piece)
    return True


def detect_language(text: str) -> str:
    """'zh' when the text holds any CJK ideograph, else 'en'."""
    return "zh" if CJK_CHAR.search(text) else "en"


@dataclass(frozen=True, order=True)
class Entity:
    kind: str  # service | instance | error_code | identifier | version | percentage | quantity | http_status | number
    value: str  # normalised, comparable form


# A number, with thousands separators when every group has three digits ("5,312" is 5312,
# "3,4" is two numbers).
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d)|\d+(?:\.\d+)?"

# The units a number may carry; a number with one is one quantity ("3 秒", "250ms", "4 GB"), so a
# changed unit is a changed fact and no other pattern may take the number alone.
_UNIT = r"ms|s|sec|seconds|秒|毫秒|分钟|min|minutes|mb|gb|kb|mib|gib|kib|b/s|rps|qps|个|次|条"

# Stores many services use: as a service entity they name no one service. One of their instances
# ("redis-cart-0", "HikariPool-1") is an instance like any other.
_SHARED_STORE = re.compile(r"redis|mysql|postgres(?:ql)?|kafka")


def shared_store(service: str) -> bool:
    """Whether a service entity's value names a store many services use rather than one service."""
    return bool(_SHARED_STORE.fullmatch(service))


# A replica-set hash: letters and digits mixed ("7d9f8", "84cd"), as an id or a date never is.
_POD_HASH = r"(?=[a-z]*\d)(?=\d*[a-z])[a-z0-9]{3,10}"
_NAME = r"[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*)*"
# An instance's shape, the way a team tells one of its instances from another: two instances
# compare only within a shape (a node's name says nothing about which pod of another workload).
_INSTANCE_SHAPES = (
    ("endpoint", re.compile(r"[^:]+:\d+")),
    ("node", re.compile(r"ip(?:-\d{1,3}){4}(?:\.[a-z0-9-]+)*")),
    ("pod", re.compile(rf"{_NAME}-{_POD_HASH}-[a-z0-9]{{1,5}}")),
)


def instance_shape(instance: str) -> str:
    """An instance entity's shape: endpoint (host:port), node (a cloud's ip-10-0-3-17), pod
    (name-hash-suffix) or ordinal (name-N)."""
    return next((shape for shape, pattern in _INSTANCE_SHAPES if pattern.fullmatch(instance)), "ordinal")


# Order matters: earlier patterns claim their span first. Each pattern comes with the literals
# one of which every match contains: a text holding none of them is not scanned with it (most
# texts lack "%", "v", "_", "xx" ...), which spares most of the scans per text. The number
# patterns need a digit (_DIGIT: any Unicode digit, as their \d matches).
_DIGIT = ("<any digit>",)  # a marker, compared by identity
_ANY_DIGIT = re.compile(r"\d")
_PATTERNS: list[tuple[str, re.Pattern[str], tuple[str, ...]]] = [
    # An id a key names ("order_id=ord-77") is an id, whatever its shape.
    ("identifier", re.compile(r"\b(?:order|request|req|trace|txn|user)(?:[_\- ]?id)?\s*[=:#]\s*([a-z0-9][a-z0-9\-]*)"),
     ("order", "req", "trace", "txn", "user")),
    # One instance of a service: an endpoint ("smtp-relay.internal:587", "10.0.3.7:6379"), a
    # service name with a suffix holding a digit ("pay-worker-17", "checkout-service-7d9f8-x2k4p"),
    # a Deployment's pod ("inv-84cd-2", "payment-7f9c-abc12"), a cloud's node
    # ("ip-10-0-3-17.ec2.internal"), a StatefulSet's or a pool's ordinal ("redis-cart-0",
    # "HikariPool-1", "node-3"). It names the instance, not the service, so a claim about another
    # service's worker is a swap of services, and one about another instance of the same shape a
    # swap of instances. A trailing ".2" makes a version ("tls-1.2"), not an ordinal.
    ("instance", re.compile(r"\b(?:[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)+|\d{1,3}(?:\.\d{1,3}){3}):\d{2,5}\b"), (":",)),
    ("instance", re.compile(r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)*-(?:service|gateway|svc|api|worker|db|cache)"
                            r"-[a-z]*\d[a-z0-9]*(?:-[a-z0-9]+)*\b"), ("-",)),
    ("instance", re.compile(rf"\b{_NAME}-{_POD_HASH}-[a-z0-9]{{1,5}}\b(?!\.\d)"), ("-",)),
    ("instance", re.compile(r"\bip(?:-\d{1,3}){4}\b(?:\.[a-z0-9-]+)*"), ("ip-",)),
    ("instance", re.compile(rf"\b{_NAME}-\d{{1,3}}\b(?!\.\d|-\d)"), ("-",)),
    ("service", re.compile(r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)*-(?:service|gateway|svc|api|worker|db|cache)\b"), ("-",)),
    ("service", re.compile(rf"\b(?:api-gateway|{_SHARED_STORE.pattern})\b"),
     ("api-gateway", "redis", "mysql", "postgres", "kafka")),
    ("identifier", re.compile(r"\border\s+#?(\d+)\b"), ("order",)),
    # "请求 3 秒超时" is a request timing out after 3 seconds, not request 3.
    ("identifier", re.compile(rf"(?:订单|请求)\s*(?:号|id)?\s*[:：#]?\s*([a-z0-9][a-z0-9\-]*)(?![a-z0-9\-])"
                              rf"(?!\s*(?:{_UNIT})(?![a-z]))"), ("订单", "请求")),
    ("error_code", re.compile(r"\b(?:err|e)_[a-z0-9_]+\b"), ("_",)),
    ("error_code", re.compile(r"\b[a-z][a-z0-9]*(?:exception|error)\b"), ("exception", "error")),
    ("http_status", re.compile(r"\b(?:http|status|code)[ =:/]*([1-5]\d\d)\b"), ("http", "status", "code")),
    # Bounded by ASCII alone: "5xx比例" is 5xx, as Unicode's \b would not split it from the Chinese.
    ("http_status", re.compile(r"(?<![a-z0-9])([1-5]xx)(?![a-z0-9])"), ("xx",)),
    # "order-service 500s", "the gateway is 503ing": responses of that status, not 500 seconds.
    ("http_status", re.compile(r"(?<![\w.])([45]\d\d)(?:s|ing|ed)(?![a-z0-9])"), _DIGIT),
    ("version", re.compile(r"\bv\d+(?:\.\d+){1,3}\b"), ("v",)),
    ("percentage", re.compile(rf"({_NUM})\s*%"), ("%",)),
    (
        "quantity",
        re.compile(
            rf"({_NUM})\s*({_UNIT})(?![a-z])"
        ),
        _DIGIT,
    ),
    # A full stop after a number ends the sentence ("线程数: 120."); only ".5" continues it.
    # Bounded by ASCII alone: "21天" and "次数7" hold the numbers 21 and 7, as a Chinese word beside a
    # number is no part of it.
    ("number", re.compile(rf"(?<![a-z0-9_.])({_NUM})(?![a-z0-9_%]|\.\d)"), _DIGIT),
]

UNIT_SECONDS = {"ms": 0.001, "毫秒": 0.001, "s": 1.0, "sec": 1.0, "seconds": 1.0, "秒": 1.0,
                "min": 60.0, "minutes": 60.0, "分钟": 60.0}

# A time between two happenings, not a value any record holds: "about 40 s after", "1-2 s later",
# "晚了 40 分钟", "every 12-14 minutes".
_SPAN = (r"(\d+(?:\.\d+)?)(?:\s*(?:-|–|~|to|至|到)\s*(\d+(?:\.\d+)?))?\s*"
         r"(ms|s|sec|secs|seconds?|min|mins|minutes?|hours?|秒|毫秒|分钟|小时)")
# ("每次晚 1-2 秒": how much later each one came than the one the clause names)
INTERVAL = re.compile(rf"(?:(?:晚了|早了|(?<=每次)晚|(?<=每条)晚|(?<=都)晚|间隔|相隔|跨度|历时|every|each|每|spanning|spans?|spanned"
                      r"|a span of)\s*"
                      rf"(?:about|around|roughly|~|约|大约)?\s*{_SPAN}"
                      rf"|{_SPAN}\s*(?:later|after|afterwards|before|earlier|apart|之后|以后|后|前|later on)"
                      # "roughly 21 minutes on": on from the time before, not "5.6s on /api/pay"
                      r"|(\d+(?:\.\d+)?)()\s*(minutes|mins|min|hours|seconds)\s+on\b(?!\s*/))"
                      r"(?![a-z0-9])")

# 4 GB and 4096 MB are the same size; compare in MB.
_UNIT_MB = {"kb": 1 / 1024, "kib": 1 / 1024, "mb": 1.0, "mib": 1.0, "gb": 1024.0, "gib": 1024.0}


def _num(text: str) -> str:
    value = float(text.replace(",", ""))
    return str(int(value)) if value.is_integer() else repr(value)


def _quantity(value: str, unit: str) -> str:
    if unit in UNIT_SECONDS:
        # 5300ms and 5.3s are the same duration; compare in seconds.
        return f"{_num(str(round(float(value.replace(',', '')) * UNIT_SECONDS[unit], 6)))}s"
    if unit in _UNIT_MB:
        return f"{_num(str(round(float(value.replace(',', '')) * _UNIT_MB[unit], 6)))}mb"
    return f"{_num(value)}{unit}"


@dataclass(frozen=True)
class EntityMatch:
    """One entity occurrence: `token` is its surface form and `start`/`end` its span, both in normalize(text)."""

    kind: str
    value: str
    token: str
    start: int
    end: int


@lru_cache(maxsize=65536)
def find_entities(text: str) -> tuple[EntityMatch, ...]:
    """Entity occurrences of a text in reading order, each with its normalised surface token."""
    norm = normalize(text)
    taken = bytearray(len(norm))
    found: list[EntityMatch] = []
    digit = _ANY_DIGIT.search(norm) is not None
    for kind, pattern, literals in _PATTERNS:
        if not (digit if literals is _DIGIT else any(lit in norm for lit in literals)):
            continue
        for m in pattern.finditer(norm):
            start, end = m.span()
            if any(taken[start:end]):
                continue
            taken[start:end] = b"\x01" * (end - start)
            raw = m.group(1) if m.groups() else m.group(0)
            if kind == "percentage" or kind == "number":
                value = _num(raw)
            elif kind == "quantity":
                value = _quantity(m.group(1), m.group(2))
            else:
                value = raw.strip()
            found.append(EntityMatch(kind, value, m.group(0).strip(), start, end))
    found.sort(key=lambda e: e.start)
    return tuple(found)


@lru_cache(maxsize=65536)
def extract_entities(text: str) -> frozenset[Entity]:
    """Typed, normalised entities of a text. Cached: the same excerpt is checked often."""
    return frozenset(Entity(e.kind, e.value) for e in find_entities(text))


def stated_count(ent: Entity) -> int | None:
    """The number an entity states when it can be a count of records: a bare number, or "25条" / "6次"."""
    m = re.fullmatch(r"(\d+)(?:次|条|个|回|单|笔|起)?", ent.value) if ent.kind in ("number", "quantity") else None
    return int(m.group(1)) if m else None


def entity_values(text: str) -> set[str]:
    """All entity values of a text, numbers included in every unit-free form they could take."""
    values: set[str] = set()
    for ent in find_entities(text):
        values.add(ent.value)
        if ent.kind == "quantity":
            # Its number as converted ("5.3" of 5300ms) and as written ("14" of "14.0 GB").
            values.add(re.sub(r"[^\d.]", "", ent.value.rstrip("s")))
            written = re.match(_NUM, ent.token)
            if written:
                values.add(_num(written.group(0)))
        elif ent.kind == "instance" and (port := re.search(r":(\d+)$", ent.value)):
            # A port or a source line ("PricingClient.java:142" is line 142).
            values.add(port.group(1))
    return values


_NUMBER_UNIT = re.compile(r"(\d+(?:\.\d+)?)([a-z%]*)")
# A number said with a scale word: "4.8 million rows", "约 480 万行".
SCALED = re.compile(r"(\d+(?:\.\d+)?)\s*(thousand|million|billion|k|mn|bn|万|亿)(?![a-z])")
SCALES = {"thousand": 1e3, "k": 1e3, "million": 1e6, "mn": 1e6, "billion": 1e9, "bn": 1e9, "万": 1e4, "亿": 1e8}
# Numbers as people spell them ("two", "a dozen", "两回"): one table for the time, count and figure readers.
SPELLED_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "ten": 10,
                   "twelve": 12, "a couple": 2, "couple": 2, "a few": 3, "a dozen": 12, "dozen": 12, "twice": 2,
                   "一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
# A share said in words, in percent: "三成" (tenths), "一半", "a quarter of", "two thirds of". People say a
# rate this way as often as "30%", and mean a round, loose figure by it.
SHARES = {"half": 50.0, "third": 100 / 3, "thirds": 100 / 3, "quarter": 25.0, "quarters": 25.0,
          "fifth": 20.0, "fifths": 20.0, "tenth": 10.0, "tenths": 10.0, "一半": 50.0, "半数": 50.0, "成": 10.0}
# Only where it says a share: "a third" before "of" or at a clause's end (not "a third pod", "a third time"),
# "half" before what it is half of (not "half an hour", "the second half"), "八成" not before 是 / 会 / 就 (there it
# is "most likely": "八成是网关的问题"), "一成不变" no share at all.
_SHARE = re.compile(
    r"(?<![\w-])(?:(?P<n>a|one|two|three|four|nine)\s+)?(?<!first )(?<!second )(?<!other )(?<!latter )"
    r"(?P<part>half|thirds?|quarters?|fifths?|tenths?)\b"
    r"(?=\s+(?:of|the|all|our|its|their|them|those|these|my|your)\b|\s*(?:[?,.!;]|$))"
    r"|(?P<zh_n>[一二两三四五六七八九])(?P<zh>成)(?!\s*(?:是|就|会|要|得|该|应该|估计|不变))"
    r"|(?P<whole>一半|半数)")
_SHARE_COUNT = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "nine": 9}


def shares(text: str) -> tuple[str, frozenset[int]]:
    """The text with each share said in words written as a percentage ("三成" -> "30%", "a quarter of" ->
    "25% of"), and where each of those percentages starts in it: the figure readers take them as they take
    "30%", and bound them as the loose figures they are."""
    out: list[str] = []
    starts: set[int] = set()
    at = 0
    for m in _SHARE.finditer(text):
        if m.group("part") and m.group("n") is None and m.group("part") != "half":
            continue  # "third" alone is an ordinal ("the third retry")
        if m.group("part"):
            value = SHARES[m.group("part")] * (_SHARE_COUNT[m.group("n")] if m.group("n") else 1)
        elif m.group("zh"):
            value = SHARES["成"] * SPELLED_NUMBERS[m.group("zh_n")]
        else:
            value = SHARES[m.group("whole")]
        out.append(text[at:m.start()])
        starts.add(sum(map(len, out)))
        out.append(f"{value:.3g}%")
        at = m.end()
    out.append(text[at:])
    return "".join(out), frozenset(starts)


_CN_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CN_PLACES = {"十": 10, "百": 100, "千": 1000}
# A number written in Chinese characters with a place in it ("五百", "二十来万", "一千二"): a lone digit
# ("第一", "一直") and "十分" (very) are words, not figures. 来 / 多 / 余 between it and its scale say
# "about" / "more than" and move after the figure, where the bound readers look for them.
_CN_NUMBER = re.compile(r"(?:[零一二两三四五六七八九]*[十百千][零一二两三四五六七八九十百千]*|[一二两三四五六七八九](?=[来多余]?[万亿]))"
                        r"(?P<approx>[来多余])?(?P<scale>[万亿])?")


def _cn_value(said: str) -> int:
    total, digit = 0, 0
    for ch in said:
        if ch in _CN_DIGITS:
            digit = _CN_DIGITS[ch]
        else:
            total += (digit or 1) * _CN_PLACES[ch]
            digit = 0
    # "一千二": a last digit after a place counts in the next place down
    last_place = next((_CN_PLACES[ch] for ch in reversed(said) if ch in _CN_PLACES), 1)
    return total + (digit * last_place // 10 if said[-1] in _CN_DIGITS and len(said) > 1 and said[-2] in _CN_PLACES
                    and said[-2] != "十" else digit)


def arabic(text: str) -> str:
    """Chinese-character numbers in a text as digits, a scale word kept as SCALED reads it: "排到五百多了" ->
    "排到500多了", "二十来万" -> "20万左右"."""
    def digits(m: re.Match[str]) -> str:
        said = m.group(0).removesuffix(m.group("scale") or "").removesuffix(m.group("approx") or "")
        if said == "十" and text.startswith("分", m.end()):
            return m.group(0)
        return f"{_cn_value(said)}{m.group('scale') or ''}" + {"来": "左右", "多": "多", "余": "多"}.get(m.group("approx") or "", "")
    return _CN_NUMBER.sub(digits, text)


def scales(text: str) -> dict[str, float]:
    """The numbers of a text said with a scale word, and the scale: {"4.8": 1e6} of "4.8 million"."""
    return {m.group(1): SCALES[m.group(2)] for m in SCALED.finditer(normalize(text))}


def rounds_to(claimed: str, recorded: str, scale: float = 1.0) -> bool:
    """Whether a record's value (an entity value: "12.124s", "97.6", "4812331"), rounded to the
    precision the claim states it with, is the claim's: "12.1s" of 12124 ms, 98 (%) of 97.6,
    4.8 (million) of 4812331. A claim as precise as the record, or more, is not a rounding of it."""
    mine, theirs = _NUMBER_UNIT.fullmatch(claimed), _NUMBER_UNIT.fullmatch(recorded)
    if not mine or not theirs or mine.group(2) != theirs.group(2):
        return False
    places = len(mine.group(1).partition(".")[2])
    if scale == 1.0 and places >= len(theirs.group(1).partition(".")[2]):
        return False
    try:
        step = Decimal(1).scaleb(-places) * Decimal(scale)
        value = Decimal(mine.group(1)) * Decimal(scale)
        return value > 0 and (Decimal(theirs.group(1)) / step).to_integral_value(ROUND_HALF_UP) * step == value
    except InvalidOperation:
        return False


_EN_STOP = frozenset(
    "a an the is are was were be been of to in on at for and or with by from as it this that these those "
    "there has have had not no but into than then so such can could may might will would".split()
    # Pronouns, auxiliaries, a time zone and the halves a contraction leaves ("didn't" is "didn" and "t"; "not" is
    # above): no content a record could word.
    + "its their them they we our us since utc did does do didn doesn don isn wasn weren aren hasn haven".split()
)
_ZH_STOP = frozenset("的 了 和 与 在 是 有 为 及 或 对 从 被 把 也 都 而 并 等 中 上 下 个 出现 进行 当前 最近".split())


_LATIN_WORD = re.compile(r"[a-z0-9][a-z0-9_.\-]*[a-z0-9]|[a-z0-9]")


@lru_cache(maxsize=65536)
def keywords(text: str) -> frozenset[str]:
    """Content words: jieba for Chinese runs, whole tokens (payment-service, e_pay_timeout) for the rest."""
    norm = normalize(text)
    words: set[str] = set()
    for token in _LATIN_WORD.findall(CJK_RUN.sub(" ", norm)):
        if len(token) >= 2 and token not in _EN_STOP:
            words.add(token)
    runs = CJK_RUN.findall(norm)
    if runs:
        for run in runs:
            for token in segment.jieba().lcut(run):
                if len(token) >= 2 and token not in _ZH_STOP:
                    words.add(token)
    return frozenset(words)


# A quotation of a record: straight, curly, corner or back quotes around at least six characters
# (fewer quote a word, not a line). What stands inside is the record's wording, not the writer's:
# a quoted "JVM exiting due to ..." states no cause of the writer's own, a quoted "may" no guess.
QUOTED = re.compile(r'"([^"\n]{6,})"|“([^”\n]{6,})”|「([^」\n]{6,})」|`([^`\n]{6,})`')


def quotations(text: str) -> list[str]:
    """The texts a sentence quotes, in reading order, marks off."""
    return [next(g for g in m.groups() if g) for m in QUOTED.finditer(text)]


def unquoted(text: str, stand_in: str = "") -> str:
    """The text with each quotation replaced by a space (or a stand-in word): what its writer says
    in their own words."""
    return QUOTED.sub(f" {stand_in} " if stand_in else " ", text)


# Words that name one concept across Chinese and English (and common variants), for matching a
# text against another that may say the same in the other language.
SYNONYMS: tuple[tuple[str, ...], ...] = (
    ("超时", "timeout", "timed"), ("错误", "报错", "error", "errors"), ("异常", "exception", "error"),
    ("请求", "request", "requests"), ("连接", "connection", "connections"), ("连接池", "pool", "hikaripool"),
    ("延迟", "耗时", "latency", "slow", "p99", "p95", "elapsed", "duration"), ("内存", "memory", "heap", "堆"),
    ("使用率", "usage", "utilization", "util"), ("线程", "线程数", "thread", "threads"), ("core", "cores", "vcpu", "vcpus"),
    ("告警", "报警", "alert", "alerts", "firing"), ("失败", "fail", "failed", "failure"),
    ("数据库", "database", "db", "mysql", "postgres"), ("缓存", "cache", "redis"), ("支付", "payment"),
    ("订单", "order", "orders"), ("网关", "gateway"), ("发布", "部署", "deploy", "deployed", "release", "rollout"),
    ("重启", "restart", "restarted"), ("不可用", "unavailable", "not available"),
    ("拒绝", "refused", "rejected"), ("过高", "high", "飙高", "升高", "spike"), ("驱逐", "evicted", "eviction", "evict"),
    ("上游", "upstream"), ("下游", "downstream"), ("接口", "api", "endpoint"), ("饱和", "saturated", "saturation"),
    ("重试", "retry", "retries"), ("成功", "succeeded", "success"), ("发送", "send", "sent"),
    ("慢查询", "slow query"), ("查询", "query", "queries"), ("健康检查", "health check"), ("客户端", "client"), ("关闭", "closed", "close"),
    ("响应", "respond", "response"), ("排队", "queued", "queue"), ("扫描", "scan", "scanned"), ("任务", "job"),
    ("实例", "instance"), ("路由", "route"), ("阈值", "threshold"), ("配置", "config", "configuration", "setting"),
    ("版本", "version"), ("等待", "waiting", "wait"), ("金丝雀", "canary"), ("跳过", "skipped", "skip"),
    ("暂停", "停顿", "pause", "paused", "pauses"), ("最大", "maximum", "max"), ("淘汰", "evicted", "evicting", "evicts"),
    ("变更", "change", "changed"), ("进程", "process"), ("采样", "sampling", "sample"), ("热点", "hot"),
    ("分钟", "minute", "minutes"), ("次数", "times", "count"), ("节点", "node"), ("维护", "maintenance"),
    ("更新", "update", "updated"), ("规则", "rule", "rules", "ruleset"), ("风控", "risk"), ("评分", "scoring", "score"),
    ("同步", "sync"), ("批次", "batch", "batches"), ("启动", "started", "startup"), ("预热", "warmup", "warm-up"), ("空指针", "npe", "nullpointerexception"), ("秒杀", "flash-sale", "flash sale"),
    ("bgsave", "background saving", "background save"), ("oom", "outofmemoryerror", "out of memory", "内存溢出"),
    ("回退", "fallback", "falling back", "fall back", "fell back"), ("默认", "default"), ("头像", "avatar"),
)
_SYN_INDEX: dict[str, tuple[str, ...]] = {}
for _group in SYNONYMS:
    for _word in _group:
        _SYN_INDEX[_word] = tuple(sorted(set(_SYN_INDEX.get(_word, ())) | set(_group)))


def synonyms(word: str) -> tuple[str, ...]:
    """The word and every word of its SYNONYMS groups (sorted), or just the word."""
    return _SYN_INDEX.get(word, (word,))
