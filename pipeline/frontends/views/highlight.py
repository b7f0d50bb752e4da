"""Highlighting shared by the pages: a slice of a decoded tool output or a line cut into plain and
marked (text, kind) segments. Nothing here produces HTML; the UI escapes every segment."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pipeline.core.feature_shapes import EntityMiss

SegmentKind = Literal["text", "match", "entity", "cited"]


@dataclass
class Window:
    """A slice of a decoded tool output around a match, cut into plain and marked segments."""

    segments: list[tuple[str, SegmentKind]]
    start: int
    end: int
    total: int
    line: int  # 1-based line of the first match in the decoded output


def _mark(text: str, base: int, spans: list[tuple[int, int, SegmentKind]]) -> list[tuple[str, SegmentKind]]:
    out: list[tuple[str, SegmentKind]] = []
    pos = 0
    for s, e, kind in sorted(spans):
        s, e = max(s - base, pos), min(e - base, len(text))
        if e <= s:
            continue
        if s > pos:
            out.append((text[pos:s], "text"))
        out.append((text[s:e], kind))
        pos = e
    if pos < len(text):
        out.append((text[pos:], "text"))
    return out


def _token_spans(text: str, base: int, tokens: list[str]) -> list[tuple[int, int, SegmentKind]]:
    spans: list[tuple[int, int, SegmentKind]] = []
    for token in dict.fromkeys(t for t in tokens if t):
        for m in re.finditer(re.escape(token), text, re.IGNORECASE):
            spans.append((base + m.start(), base + m.end(), "entity"))
    return spans


def _outside(span: tuple[int, int], marks: list[tuple[int, int, SegmentKind]]) -> list[tuple[int, int]]:
    """The parts of a span that no mark covers."""
    parts, at = [], span[0]
    for s, e, _ in sorted(marks):
        if e <= at or s >= span[1]:
            continue
        if s > at:
            parts.append((at, s))
        at = max(at, e)
    if at < span[1]:
        parts.append((at, span[1]))
    return parts


def highlight_window(
    decoded: str,
    spans: list[tuple[int, int]],
    *,
    entity_tokens: list[str] | None = None,
    cited: list[tuple[int, int]] | None = None,
    context: int = 360,
    max_spread: int = 3000,
) -> Window:
    """The window of `decoded` around the matched spans; entity tokens in it are marked too, and
    the records the binding cites (`cited`, decoded spans) where no other mark is.

    Spans far apart (an excerpt whose segments sit in different records) are cut to those
    near the longest one, so a window stays readable and small whatever the output size.
    """
    if not spans:
        head = decoded[: 2 * context]
        return Window(_mark(head, 0, _token_spans(head, 0, entity_tokens or [])), 0, len(head), len(decoded), 1)
    anchor = max(spans, key=lambda s: s[1] - s[0])
    near = [s for s in spans if abs(s[0] - anchor[0]) <= max_spread]
    lo = max(0, min(s[0] for s in near) - context)
    hi = min(len(decoded), max(s[1] for s in near) + context)
    text = decoded[lo:hi]
    marks: list[tuple[int, int, SegmentKind]] = [(s, e, "match") for s, e in near]
    # An entity inside a matched span is already marked; only those outside it get the entity mark.
    marks += [t for t in _token_spans(text, lo, entity_tokens or []) if not any(s <= t[0] < e for s, e in near)]
    marks += [(a, b, "cited") for s, e in cited or () for a, b in _outside((max(s, lo), min(e, hi)), marks)]
    line = decoded.count("\n", 0, min(s[0] for s in near)) + 1
    return Window(_mark(text, lo, marks), lo, hi, len(decoded), line)


def excerpt_segments(excerpt: str, misses: list[EntityMiss]) -> list[tuple[str, SegmentKind]]:
    """The excerpt with the entities its matched record lacks marked."""
    return _mark(excerpt, 0, _token_spans(excerpt, 0, [m["token"] for m in misses]))


def nearby_tokens(misses: list[EntityMiss]) -> list[str]:
    """What the output record holds instead of the excerpt's missing entities."""
    return [t for m in misses for t in m["nearby"]]


def query_segments(line: str, query: str) -> list[tuple[str, SegmentKind]]:
    """A viewer line with every occurrence of the search query marked."""
    if not query:
        return [(line, "text")]
    spans: list[tuple[int, int, SegmentKind]] = [
        (m.start(), m.end(), "match") for m in re.finditer(re.escape(query), line, re.IGNORECASE)
    ]
    return _mark(line, 0, spans)
