"""An excerpt as a chain of verbatim pieces of its output, and what lies between them.

A quote that is not found by structure (matcher.py: one span of a record, or pieces split only
between adjacent records) is not the tool's own, yet where it differs says what kind of wrong
it is. Its words, in order, are found as a few verbatim pieces of the output with stretches of
output between them: what the chain does not cover, and what it steps over, is where meaning
changes hide: an added "no", a dropped "not", "成功" where the output says "失败", INFO where the
record says ERROR, another record's number. Each such junction is kept as a hunk (the excerpt's
side and the output's side, with one word of matched context around both) for the rules to read
against their word lists.

Everything here is threshold-free: gaps are measured, never judged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pipeline.core.feature_shapes import Hunk
from pipeline.text.primitives import is_cjk

# Search bounds (how far to look, not what to accept): the next piece is looked for at most REACH
# folded characters after the previous one.
REACH = 400
# A piece this short ("no", "info", "92", "api-gateway", "失败"; see weight) chains only when it
# touches a neighbouring piece (SHORT_GAP characters or less between): alone in a stretch of
# output it is a coincidence, such as a service name picked up from the next record's fields.
SHORT = 16
SHORT_GAP = 12
# Pieces further apart than FAR (more than the fields between two log records) must both weigh
# at least 2 * SHORT: two adjacent alerts' descriptions chain, a service name 200 characters on does not.
FAR = 120
_MAX_NEAR = 64  # occurrences of a first piece compared for nearness
STARTS = 4  # occurrences of the first piece a chain is tried from
CLOSE = 320  # a complete chain with no wider gap than this is taken without trying further starts
MAX_HUNKS = 8
MAX_HUNK_CHARS = 160
_HEAVY = re.compile(r"[0-9\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
TOKEN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^ \u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


@dataclass
class Chain:
    covered: float  # share of the excerpt (by weight) found as in-order pieces
    gap: int  # the widest stretch of output (folded characters) skipped between two pieces
    start: int  # folded span of the output from the first piece's start to the last piece's end
    end: int
    hunks: list[Hunk] = field(default_factory=list)
    main: list[tuple[int, int]] = field(default_factory=list)  # folded spans of the pieces that carry the quote

    @property
    def rank(self) -> tuple[bool, float, int]:
        """Better chains rank higher: no gap wider than CLOSE, then more covered, then narrower gaps."""
        return self.gap <= CLOSE, self.covered, -self.gap


def chain(needle: str, hay: str, lo: int, hi: int, *, near: int | None = None, short: int = SHORT) -> Chain | None:
    """In-order pieces of a folded needle in hay, the first starting in [lo, hi). None when nothing is found.

    The first piece may occur in several records ("payment-service", "GET /actuator/health 200"),
    and only one of them starts the quote: the walk first starts from the occurrence nearest to
    `near` (where the quote's rare words point), then is tried from up to STARTS occurrences
    and the chain covering most of the needle, with the narrowest gaps, is kept (one without a
    gap wider than CLOSE first). short=0 lets short pieces chain anywhere: for a short quote
    already located by its similarity.
    """
    toks = [m.span() for m in TOKEN.finditer(needle)]
    weights = [weight(needle, a, b) for a, b in toks]
    total = sum(weights) or 1
    best: tuple[float, int, list[tuple[int, int, int, int]]] | None = None
    pos = lo
    for attempt in range(STARTS):
        pieces = _walk(needle, toks, hay, pos, hi, short, near if attempt == 0 else None)
        if not pieces:
            break
        covered = sum(weights[t] for p in pieces for t in range(p[0], p[1])) / total
        gap = max((len(hay[a[3] : b[2]].strip()) for a, b in zip(pieces, pieces[1:], strict=False)), default=0)
        if best is None or (gap <= CLOSE, covered, -gap) > (best[1] <= CLOSE, best[0], -best[1]):
            best = (covered, gap, pieces)
        if covered == 1.0 and gap <= CLOSE:
            break
        first = pieces[0]
        if _find(hay, needle[toks[first[0]][0] : toks[first[1] - 1][1]], first[2] + 1, hi) < 0:
            break  # the first piece occurs nowhere else: no other start to try
        if attempt:
            pos = first[2] + 1
    if best is None:
        return None
    covered, gap, pieces = best
    first, last = pieces[0], pieces[-1]
    # The quote's own records are those of its long pieces; a short one may sit in a neighbour.
    main = [(p[2], p[3]) for p in pieces if weight(hay, p[2], p[3]) >= SHORT] or [(p[2], p[3]) for p in pieces]
    return Chain(round(covered, 4), gap, first[2], last[3], _hunks(needle, toks, hay, pieces), main)


def _walk(needle: str, toks: list[tuple[int, int]], hay: str, lo: int, hi: int, short: int,
          near: int | None) -> list[tuple[int, int, int, int]]:
    """Greedy pieces (first token, stop token, hay start, hay end): each the longest run of the
    needle's next tokens found (whole words) within REACH of the previous piece; a token found
    nowhere near is left uncovered."""
    n = len(toks)
    pieces: list[tuple[int, int, int, int]] = []
    i, pos = 0, lo
    while i < n:
        limit = hi if not pieces else pieces[-1][3] + REACH
        found = _longest(needle, toks, i, hay, pos, limit, None if pieces else near)
        if found is None:
            i += 1
            continue
        k, at = found
        end = at + toks[k - 1][1] - toks[i][0]
        heft = weight(hay, at, end)
        if heft < short and k - i < n and not _touches(pieces, needle, toks, k, hay, at, end):
            i += 1
            continue
        if pieces and at - pieces[-1][3] > FAR and min(heft, weight(hay, *pieces[-1][2:])) < 2 * short:
            i += 1  # a long jump joins two whole records, not a record and a name picked up further on
            continue
        pieces.append((i, k, at, end))
        i, pos = k, end
    return pieces


def _longest(needle: str, toks: list[tuple[int, int]], i: int, hay: str, lo: int, hi: int,
             near: int | None = None) -> tuple[int, int] | None:
    """(stop token k, hay position) of the longest phrase toks[i:k] found starting in [lo, hi):
    its first occurrence, or the one nearest to `near`."""
    at = _find(hay, needle[toks[i][0] : toks[i][1]], lo, hi)
    if at < 0:
        return None
    good, bad, step = i + 1, len(toks) + 1, 1
    # If toks[i:k] occurs, so does every shorter prefix: gallop, then bisect.
    while good + step < bad:
        trial = min(len(toks), good + step)
        q = _find(hay, needle[toks[i][0] : toks[trial - 1][1]], lo, hi)
        if q < 0:
            bad = trial
            break
        good, at = trial, q
        if trial == len(toks):
            return good, at
        step *= 2
    while bad - good > 1:
        mid = (good + bad) // 2
        q = _find(hay, needle[toks[i][0] : toks[mid - 1][1]], lo, hi)
        if q >= 0:
            good, at = mid, q
        else:
            bad = mid
    if near is not None:
        phrase = needle[toks[i][0] : toks[good - 1][1]]
        q = at
        for _ in range(_MAX_NEAR):
            q = _find(hay, phrase, q + 1, hi)
            if q < 0:
                break
            if abs(q - near) < abs(at - near):
                at = q
    return good, at


def weight(hay: str, at: int, end: int) -> int:
    """A piece's length with each Chinese character and digit counted three times: a Chinese
    character carries a word's worth, and a number is what tells two records of one template apart."""
    return end - at + 2 * len(_HEAVY.findall(hay, at, end))


def _touches(pieces: list[tuple[int, int, int, int]], needle: str, toks: list[tuple[int, int]], k: int,
             hay: str, at: int, end: int) -> bool:
    """Whether a short piece at hay [at, end) sits right after the previous piece or right before the next token."""
    if pieces and at - pieces[-1][3] <= SHORT_GAP:
        return True
    return k < len(toks) and _find(hay, needle[toks[k][0] : toks[k][1]], end, end + SHORT_GAP) >= 0


def _find(hay: str, phrase: str, lo: int, hi: int) -> int:
    """First occurrence of phrase starting in [lo, hi) that does not cut a Latin word or number."""
    stop = hi + len(phrase)
    p = hay.find(phrase, lo, stop)
    while p >= 0:
        end = p + len(phrase)
        if not (_glued(hay, p - 1, phrase[0]) or _glued(hay, end, phrase[-1])):
            return p
        p = hay.find(phrase, p + 1, stop)
    return -1


def _glued(hay: str, at: int, edge: str) -> bool:
    if at < 0 or at >= len(hay):
        return False
    ch = hay[at]
    return ch != " " and not is_cjk(ch) and not is_cjk(edge) and edge != " "


def _context(needle: str, toks: list[tuple[int, int]], t: int, step: int) -> int:
    """Needle offset one word (or two Chinese characters) beyond token t in direction step."""
    j = t
    if is_cjk(needle[toks[t][0]]):
        nxt = t + step
        if 0 <= nxt < len(toks) and is_cjk(needle[toks[nxt][0]]):
            j = nxt
    return toks[j][0] if step < 0 else toks[j][1]


def _hunks(needle: str, toks: list[tuple[int, int]], hay: str, pieces: list[tuple[int, int, int, int]]) -> list[Hunk]:
    """Junctions where the excerpt and the output differ: before, between and after the pieces."""
    hunks: list[Hunk] = []
    first, last = pieces[0], pieces[-1]
    if first[0] > 0:
        head = _context(needle, toks, first[0], +1)
        ex_start, shown = 0, head - toks[first[0]][0]
        lead = max(0, first[2] - SHORT_GAP)
        hunks.append(_hunk(needle[ex_start:head], needle[: toks[first[0]][0]], hay[lead : first[2] + shown], hay[lead : first[2]]))
    for a, b in zip(pieces, pieces[1:], strict=False):
        added = needle[toks[a[1] - 1][1] : toks[b[0]][0]] if b[0] > a[1] else ""
        gap = hay[a[3] : b[2]]
        if not added.strip() and not gap.strip():
            continue
        tail = _context(needle, toks, a[1] - 1, -1)
        head = _context(needle, toks, b[0], +1)
        left, right = toks[a[1] - 1][1] - tail, head - toks[b[0]][0]
        hunks.append(_hunk(needle[tail:head], added, hay[a[3] - left : b[2] + right], gap))
    if last[1] < len(toks):
        tail = _context(needle, toks, last[1] - 1, -1)
        kept = toks[last[1] - 1][1] - tail
        follow = last[3] + SHORT_GAP
        hunks.append(_hunk(needle[tail:], needle[toks[last[1]][0] :], hay[last[3] - kept : follow], hay[last[3] : follow]))
    return hunks[:MAX_HUNKS]


def _hunk(ex: str, added: str, out: str, gap: str) -> Hunk:
    return {"ex": _clip(ex), "added": _clip(added), "out": _clip(out), "gap": _clip(gap)}


def _clip(text: str) -> str:
    """At most MAX_HUNK_CHARS: both ends of a long stretch (a record's level sits just before its message)."""
    text = text.strip()
    half = MAX_HUNK_CHARS // 2
    return text if len(text) <= MAX_HUNK_CHARS else f"{text[:half]} {text[-half:]}"
