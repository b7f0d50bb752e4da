"""query_logs over a folder of log files, one or more per service.

Files are `<service>*.log` or `<service>*.jsonl`. Each line is detected on its own: a JSON
object (ts/timestamp/time, level, message/msg, service) or a text line
"2026-11-28T10:02:13Z ERROR message". Files are streamed in blocks, and when the query has
keywords (or a minimum level) a regex over the raw bytes of a whole block finds the candidate
lines before any line is decoded or parsed, so a 1 GB file costs a scan, not a parse.
"""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipeline.core.config import BackendSettings
from pipeline.core.contracts import EvidenceTime
from pipeline.tools.http import decode_counting
from pipeline.tools.queries import LogQuery, NoData
from pipeline.tools.results import LogItem, LogsOutput

LEVEL_RANK = {"TRACE": 0, "DEBUG": 0, "INFO": 1, "WARN": 2, "ERROR": 3, "FATAL": 4}
_LEVEL_ALIASES = {
    "WARNING": "WARN",
    "ERR": "ERROR",
    "CRITICAL": "FATAL",
    "CRIT": "FATAL",
    "SEVERE": "ERROR",
    "NOTICE": "INFO",
    "INFORMATION": "INFO",
}
# Spellings of each level, for the raw-bytes prefilter of "level >= X".
_LEVEL_WORDS = {
    "TRACE": ["trace"],
    "DEBUG": ["debug"],
    "INFO": ["info", "notice"],
    "WARN": ["warn", "warning"],
    "ERROR": ["error", "err", "severe"],
    "FATAL": ["fatal", "critical", "crit"],
}

_BLOCK = 1 << 20
# How much of a file's end is read for its latest line (a partial first line is dropped).
_TAIL = 1 << 16
# A "line" longer than this is cut; the rest up to the next newline is skipped.
MAX_LINE = 1 << 20

_TEXT_LINE = re.compile(
    r"^\s*\[?(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\]?"
    r"\s+\[?([A-Za-z]+)\]?:?\s+(.*)$",
    re.S,
)
_TS_KEYS = ("ts", "timestamp", "time", "@timestamp", "datetime")
_MSG_KEYS = ("message", "msg", "log", "text")
_SERVICE_SUFFIX = re.compile(r"[-_.]\d[\d\-_.T:]*$")


def normalize_level(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    up = value.strip().upper()
    up = _LEVEL_ALIASES.get(up, up)
    return up if up in LEVEL_RANK else None


def parse_timestamp(value: Any) -> datetime | None:
    """ISO 8601 text or epoch seconds/ms/us/ns; naive times are taken as UTC."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)) or (isinstance(value, str) and re.fullmatch(r"\d{9,19}(\.\d+)?", value)):
        num = float(value)
        # Epoch seconds, milliseconds, microseconds or nanoseconds, told apart by magnitude.
        for threshold, scale in ((1e17, 1e9), (1e14, 1e6), (1e11, 1e3)):
            if num > threshold:
                num /= scale
                break
        try:
            return datetime.fromtimestamp(num, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str):
        return None
    text = value.strip().replace(",", ".")
    if text.endswith("Z") or text.endswith("z"):
        text = text[:-1] + "+00:00"
    try:
        ts = datetime.fromisoformat(text)
    except ValueError:
        return None
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


@dataclass(frozen=True)
class LogLine:
    timestamp: datetime | None
    level: str | None
    service: str | None
    message: str


def parse_line(text: str) -> LogLine:
    """One log line, JSON or text; a line in neither shape keeps its text with no time/level."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            obj = json.loads(stripped)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            ts = next((parse_timestamp(obj[k]) for k in _TS_KEYS if k in obj), None)
            msg = next((obj[k] for k in _MSG_KEYS if isinstance(obj.get(k), str)), stripped)
            service = obj.get("service") or obj.get("app") or obj.get("service_name")
            return LogLine(
                ts,
                normalize_level(obj.get("level") or obj.get("severity") or obj.get("lvl")),
                service if isinstance(service, str) else None,
                msg,
            )
    m = _TEXT_LINE.match(stripped)
    if m:
        level = normalize_level(m.group(2))
        if level is not None:
            return LogLine(parse_timestamp(m.group(1)), level, None, m.group(3))
        return LogLine(parse_timestamp(m.group(1)), None, None, f"{m.group(2)} {m.group(3)}")
    return LogLine(None, None, None, stripped)


def service_of_file(path: Path) -> str:
    """payment-service.log, payment-service.1.log, payment-service-2026-11-28.jsonl -> payment-service."""
    return _SERVICE_SUFFIX.sub("", path.name.rsplit(".", 1)[0])


def utc(ts: datetime | None) -> datetime | None:
    """Aware UTC; a naive datetime is taken to be UTC already."""
    if ts is None:
        return None
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def iso(ts: datetime | None) -> str | None:
    """RFC 3339 in UTC with a Z; milliseconds only when the source had a fraction."""
    if ts is None:
        return None
    spec = "milliseconds" if ts.microsecond else "seconds"
    return ts.astimezone(UTC).isoformat(timespec=spec).replace("+00:00", "Z")


def level_words(min_level: str) -> list[str]:
    """Every spelling of every level at or above min_level."""
    rank = LEVEL_RANK[min_level]
    return [w for lv, ws in _LEVEL_WORDS.items() if LEVEL_RANK[lv] >= rank for w in ws]


def needles(words: list[str]) -> tuple[bytes, ...]:
    """Byte strings to find in an ASCII-lower-cased block: each word lower-cased, plus its own
    and upper-case spelling, since bytes.lower() leaves non-ASCII letters as they are."""
    forms = {f.encode().lower() for w in words if w.strip() and "\n" not in w for f in (w.lower(), w, w.upper())}
    # A needle holding a shorter needle can only hit lines the shorter one already hits.
    return tuple(sorted(n for n in forms if not any(o != n and o in n for o in forms)))


def iter_lines(path: Path, prefilter: tuple[bytes, ...] | None) -> Iterator[tuple[int, bytes]]:
    """(line number, raw line) of a file, read in blocks; with a prefilter, only the lines
    holding one of its needles (case-insensitively for ASCII)."""
    with path.open("rb") as fh:
        carry = b""
        line_no = 0  # lines before the start of `carry`
        skipping_long = False
        while True:
            chunk = fh.read(_BLOCK)
            if not chunk:
                if carry and not skipping_long:
                    yield from _scan(carry + b"\n", line_no, prefilter)
                return
            if skipping_long:
                nl = chunk.find(b"\n")
                if nl < 0:
                    continue
                chunk = chunk[nl + 1 :]
                skipping_long = False
                line_no += 1
            data = carry + chunk
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                if len(data) > MAX_LINE:
                    yield from _scan(data[:MAX_LINE] + b"\n", line_no, prefilter)
                    carry, skipping_long = b"", True
                else:
                    carry = data
                continue
            yield from _scan(data[:cut], line_no, prefilter)
            line_no += data.count(b"\n", 0, cut)
            carry = data[cut:]


def _scan(block: bytes, first_line: int, prefilter: tuple[bytes, ...] | None) -> Iterator[tuple[int, bytes]]:
    """Lines of a block of whole lines (ending in a newline) that hold a prefilter needle."""
    if prefilter is None:
        for i, line in enumerate(block.split(b"\n")[:-1]):
            yield first_line + i + 1, line
        return
    # bytes.lower() and bytes.find() run at memory speed; a case-insensitive regex does not.
    lowered = block.lower()
    upcoming = {n: lowered.find(n) for n in prefilter}
    counted_to, line_no = 0, first_line
    while True:
        hit = min((p for p in upcoming.values() if p >= 0), default=-1)
        if hit < 0:
            return
        start = block.rfind(b"\n", 0, hit) + 1
        end = block.find(b"\n", hit)
        line_no += block.count(b"\n", counted_to, start)
        counted_to = start
        yield line_no + 1, block[start:end]
        for n, p in upcoming.items():
            if 0 <= p <= end:
                upcoming[n] = lowered.find(n, end + 1)


class LogFiles:
    """The query_logs backend over cfg.path, a folder of per-service log files."""

    def __init__(self, cfg: BackendSettings) -> None:
        if not cfg.path:
            raise ValueError("query_logs backend 'files' needs backends.query_logs.path")
        self.cfg = cfg
        self.root = Path(cfg.path)

    def files(self) -> list[Path]:
        if not self.root.is_dir():
            raise FileNotFoundError(f"log folder not found: {self.root}")
        return sorted(p for p in self.root.rglob("*") if p.is_file() and p.suffix in (".log", ".jsonl"))

    def latest_evidence(self, services: Sequence[str]) -> EvidenceTime | None:
        """The latest line of `services` (of any, when none is named) among the last lines of
        each file: a log file is written in time order, so its newest lines are at its end."""
        latest: tuple[datetime, str] | None = None
        for path in self.files():
            owner = service_of_file(path)
            if services and owner not in services and path.suffix != ".jsonl":
                continue
            with path.open("rb") as fh:
                start = fh.seek(max(0, fh.seek(0, 2) - _TAIL))
                lines = fh.read(_TAIL).split(b"\n")
            for raw in lines[1:] if start else lines:
                entry = parse_line(decode_counting(raw.rstrip(b"\r"))[0])
                service, at = entry.service or owner, utc(entry.timestamp)
                if at is not None and (not services or service in services) and (latest is None or at > latest[0]):
                    latest = (at, service)
        return EvidenceTime(at=latest[0], service=latest[1], kind="log") if latest else None

    def query_logs(self, q: LogQuery) -> LogsOutput:
        files = self.files()
        if not files:
            raise FileNotFoundError(f"no *.log or *.jsonl files in {self.root}")
        limit = min(q.limit, self.cfg.limit)
        min_level = normalize_level(q.level) if q.level else None
        start, end = utc(q.start), utc(q.end)
        keywords = [k.lower() for k in q.keywords if k.strip()]

        # The prefilter must keep every line the real filter keeps: keywords are an exact
        # requirement; the level words are, except for lines without a level, which a level
        # filter drops anyway.
        prefilter: tuple[bytes, ...] | None = None
        if keywords:
            prefilter = needles(keywords)
        elif min_level and LEVEL_RANK[min_level] > 0:
            prefilter = needles(level_words(min_level))

        # Min-heap of the newest `limit` matches; dicts are built only for the ones kept.
        kept: list[tuple[float, int, LogLine, str, str, int]] = []
        total = 0
        decode_errors = 0
        scanned: list[str] = []
        seq = 0
        for path in files:
            own = bool(q.service) and path.name.startswith(q.service)  # type: ignore[arg-type]
            if q.service and not own and path.suffix != ".jsonl":
                # Only a mixed JSON file can hold another service's lines (each names its service).
                continue
            file_service = q.service if own and q.service else service_of_file(path)
            scanned.append(path.relative_to(self.root).as_posix())
            for line_no, raw in iter_lines(path, prefilter):
                text, bad = decode_counting(raw.rstrip(b"\r"))
                if not text.strip():
                    continue
                entry = parse_line(text)
                service = entry.service or file_service
                if q.service and service != q.service:
                    continue
                if min_level and (entry.level is None or LEVEL_RANK[entry.level] < LEVEL_RANK[min_level]):
                    continue
                if (start or end) and entry.timestamp is None:
                    continue
                if start and entry.timestamp < start:  # type: ignore[operator]
                    continue
                if end and entry.timestamp > end:  # type: ignore[operator]
                    continue
                if keywords and not any(k in text.lower() for k in keywords):
                    continue
                total += 1
                decode_errors += bad
                key = entry.timestamp.timestamp() if entry.timestamp else float("-inf")
                seq += 1
                if len(kept) < limit:
                    heapq.heappush(kept, (key, seq, entry, service, scanned[-1], line_no))
                elif key >= kept[0][0]:
                    heapq.heappushpop(kept, (key, seq, entry, service, scanned[-1], line_no))
        if not scanned:
            raise NoData(f"no log file for service {q.service!r} in {self.root}")
        if total == 0:
            raise NoData("no log line matches the query")
        logs: list[LogItem] = [
            {
                "timestamp": iso(entry.timestamp),
                "service": service,
                "level": entry.level,
                "message": entry.message,
                "labels": {"file": file, "line": str(line_no)},
            }
            for _, _, entry, service, file, line_no in sorted(kept, key=lambda t: (t[0], t[1]))
        ]
        return {
            "logs": logs,
            "total": total,
            "truncated": total > len(logs),
            "decode_errors": decode_errors,
            "files": scanned,
            "source": f"files:{self.root}",
        }

