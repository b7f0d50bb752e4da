"""The time window a question names, in Chinese or English, as UTC datetimes.

"最近30分钟", "近1小时", "过去两小时", "last hour", "past 2h" are relative to `now`;
"since 10:00", "今天10点以来", "from 10:00 to 11:30", "10点到11点半" are clock times in the
caller's time zone (by default `now`'s), on today's date unless the question says yesterday
or the time is still ahead of `now`. A clock time without a day word is read on the day of
`anchor` when the caller gives one (the latest evidence the question can reach): the data an
SRE asks about "since 10:00" may be days old, and today's 10:00 would find none of it. A
question without a window gives None: the tools then use their own default rather than a
guessed one.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, tzinfo

from pipeline.text.primitives import SPELLED_NUMBERS

_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_NUM = r"\d+(?:\.\d+)?|[零一二两三四五六七八九十]+|半|an?|one|two|three|four|five|six|ten|twelve"
_UNITS = [
    (r"分钟|分|minutes?|mins?|m\b", timedelta(minutes=1)),
    (r"个?小时|个?钟头|hours?|hrs?|h\b", timedelta(hours=1)),
    (r"天|日|days?|d\b", timedelta(days=1)),
]
_RELATIVE = re.compile(
    r"(?:最近|近|过去|前|last|past|previous|in\s+the\s+(?:last|past))\s*"
    rf"(?P<n>{_NUM})?\s*(?P<unit>{'|'.join(u for u, _ in _UNITS)})",
    re.I,
)


def _clock(tag: str, *, bare: bool = False) -> str:
    """A clock time, optionally with a day word and a part of day; group names prefixed by tag.
    `bare`: a lone hour is one too (the end of "9:30 to 10", whose start says it is a time)."""
    minutes = (rf"(?:[:：](?P<{tag}m>[0-5]\d)|\s*点\s*(?:(?P<{tag}half>半)|(?P<{tag}zm>[0-5]?\d)\s*分?)?"
               rf"|(?=\s*(?:am|pm)\b))")
    return (
        rf"(?:(?P<{tag}day>今天|昨天|today|yesterday)\s*)?(?:(?P<{tag}part>上午|下午|晚上|中午|凌晨|早上)\s*)?"
        rf"(?P<{tag}h>[01]?\d|2[0-3])"
        + (rf"(?:{minutes}|(?![\d:.]))" if bare else minutes)
        + rf"(?:\s*(?P<{tag}ampm>am|pm)\b)?"
    )


_RANGE = re.compile(
    rf"(?:from|between|从|自)?\s*{_clock('a')}\s*(?:to|until|till|and|-|–|~|到|至)\s*{_clock('b', bare=True)}", re.I
)
_SINCE = re.compile(
    rf"(?:(?:since|after|from|从|自)\s*{_clock('a')}|{_clock('b')}\s*(?:以来|之后|以后|开始|起))", re.I
)
_DAY_ONLY = re.compile(r"今天|today|昨天|yesterday", re.I)


def _number(text: str | None) -> float:
    if not text:
        return 1.0
    low = text.lower()
    if low in SPELLED_NUMBERS:
        return float(SPELLED_NUMBERS[low])
    if low == "半":
        return 0.5
    if re.fullmatch(r"[零一二两三四五六七八九十]+", text):
        if "十" in text:
            tens, _, ones = text.partition("十")
            return float((_ZH_DIGITS.get(tens, 1) if tens else 1) * 10 + (_ZH_DIGITS.get(ones, 0) if ones else 0))
        return float(_ZH_DIGITS[text[-1]])
    return float(text)


def _clock_value(m: re.Match[str], tag: str, now_local: datetime) -> datetime | None:
    hour = m.group(f"{tag}h")
    if hour is None:
        return None
    h = int(hour)
    minute = 30 if m.group(f"{tag}half") else int(m.group(f"{tag}m") or m.group(f"{tag}zm") or 0)
    part = m.group(f"{tag}part")
    ampm = (m.group(f"{tag}ampm") or "").lower()
    if (part in ("下午", "晚上") or ampm == "pm") and h < 12:
        h += 12
    if (part == "凌晨" or ampm == "am") and h == 12:
        h = 0
    when = now_local.replace(hour=h, minute=minute, second=0, microsecond=0)
    if (m.group(f"{tag}day") or "").lower() in ("昨天", "yesterday"):
        when -= timedelta(days=1)
    return when


def _utc(dt: datetime) -> datetime:
    return dt.astimezone(UTC)


def clock_without_date(question: str) -> bool:
    """Whether the window the question names is a clock time with no day word ("since 10:00",
    "10点以后", "between 9:30 and 10"): the one kind of window an anchor moves."""
    for pattern in (_RANGE, _SINCE):
        m = pattern.search(question)
        if m:
            return not (m.group("aday") or m.group("bday"))
    return False


def parse_time_window(
    question: str, now: datetime, *, tz: tzinfo | None = None, anchor: datetime | None = None
) -> tuple[datetime, datetime] | None:
    """(start, end) in UTC of the window the question names, or None. `anchor` (not after
    `now`) is the day a clock time without a day word is read on, in place of today."""
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    now_local = now.astimezone(tz or now.tzinfo)
    if anchor is not None and anchor.tzinfo is None:
        anchor = anchor.replace(tzinfo=UTC)
    undated = anchor.astimezone(now_local.tzinfo) if anchor is not None and anchor <= now else now_local

    m = _RANGE.search(question)
    if m:
        base = now_local if m.group("aday") or m.group("bday") else undated
        start = _clock_value(m, "a", base)
        end = _clock_value(m, "b", base)
        if start and end:
            if m.group("bday") is None and m.group("aday"):
                end = end.replace(year=start.year, month=start.month, day=start.day)
            if end <= start:
                start -= timedelta(days=1)
            if start > base:
                start, end = start - timedelta(days=1), end - timedelta(days=1)
            return _utc(start), _utc(end)

    m = _SINCE.search(question)
    if m:
        explicit_day = m.group("aday") or m.group("bday")
        base = now_local if explicit_day else undated
        start = _clock_value(m, "a", base) or _clock_value(m, "b", base)
        if start:
            if start > base and not explicit_day:
                start -= timedelta(days=1)
            return _utc(start), _utc(now)

    m = _RELATIVE.search(question)
    if m:
        unit = next(delta for pattern, delta in _UNITS if re.fullmatch(pattern, m.group("unit"), re.I))
        return _utc(now - unit * _number(m.group("n"))), _utc(now)

    m = _DAY_ONLY.search(question)
    if m:
        midnight = now_local.replace(hour=0, minute=0, second=0, microsecond=0)
        if m.group(0).lower() in ("昨天", "yesterday"):
            return _utc(midnight - timedelta(days=1)), _utc(midnight)
        return _utc(midnight), _utc(now)
    return None


def window_phrase(question: str) -> str:
    """The words of the question that name its window ("最近30分钟", "since 10:00"), for display."""
    for pattern in (_RANGE, _SINCE, _RELATIVE, _DAY_ONLY):
        m = pattern.search(question)
        if m:
            return m.group(0).strip()
    return ""
