"""An excerpt as a chain of verbatim pieces of its output, and what lies between them.

A faithful quote is not always one substring: it may run over two adjacent records, skip a
field ("payment-service ERROR Request timeout" against a JSON record whose `level` and
`message` keys sit between), or leave a word out. Such a quote is a chain: its words, in order,
as a few verbatim pieces of the output with short stretches of output between them. What the
chain does not cover, and what it steps over, is where meaning changes hide: an added "no", a
dropped "not", "成功" where the output says "失败", INFO where the record says ERROR. Each such
junction is kept as a hunk (the excerpt's side and the output's side, with one word of matched
context around both) for the rules to read against their word lists.

Everything here is threshold-free: gaps are measured, never judged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pipeline.gatekeeper.vocabulary import is_cjk

# Search bounds (how far to look, not what to accept): the next piece is looked for at most REACH
# folded characters after the previous one; the rule's maxPieceGap decides what gap is fine.
REACH = 400
# A piece this short ("no", "info", "92", "失败"; see _weight) chains only when it touches a neighbouring piece
# (SHORT_GAP characters or less between): alone in a stretch of output it is a coincidence.
SHORT = 8
SHORT_GAP = 12
BEFORE = 40  # output characters kept from just before the first piece
MAX_HUNKS = 8
MAX_HUNK_CHARS = 160
_TOKEN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^ \u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


@dataclass
class Chain:
    covered: float  # share of the excerpt's characters found as in-order pieces
    gap: int  # the widest stretch of output (folded characters) skipped between two pieces
    start: int  # folded span of the output from the first piece's start to the last piece's end
    end: int
    before: str  # folded output just before the first piece
    hunks: list[dict[str, str]] = field(default_factory=list)


def chain(needle: str, hay: str, lo: int, hi: int) -> Chain | None:
    """Greedy in-order pieces of a folded needle in hay, the first starting in [lo, hi).

    Each piece is the longest run of the needle's next tokens found (whole words) within REACH of
    the previous piece; a token found nowhere near is left uncovered. None when nothing is found.
    """
    toks = [m.span() for m in _TOKEN.finditer(needle)]
    n = len(toks)
    pieces: list[tuple[int, int, int, int]] = []  # (first token, stop token, hay start, hay end)
    i, pos = 0, lo
    while i < n:
        limit = hi if not pieces else pieces[-1][3] + REACH
        found = _longest(needle, toks, i, hay, pos, limit)
        if found is None:
            i += 1
            continue
        k, at = found
        end = at + toks[k - 1][1] - toks[i][0]
        if _weight(hay, at, end) < SHORT and k - i < n and not _touches(pieces, needle, toks, k, hay, at, end):
            i += 1
            continue
        pieces.append((i, k, at, end))
        i, pos = k, end
    if not pieces:
        return None
    size = sum(b - a for a, b in toks) or 1
    covered = sum(toks[t][1] - toks[t][0] for p in pieces for t in range(p[0], p[1]))
    gap = max((len(hay[a[3] : b[2]].strip()) for a, b in zip(pieces, pieces[1:])), default=0)
    first, last = pieces[0], pieces[-1]
    out = Chain(round(covered / size, 4), gap, first[2], last[3], hay[max(0, first[2] - BEFORE) : first[2]])
    out.hunks = _hunks(needle, toks, hay, pieces)
    return out


def _longest(needle: str, toks: list[tuple[int, int]], i: int, hay: str, lo: int, hi: int) -> tuple[int, int] | None:
    """(stop token k, hay position) of the longest phrase toks[i:k] found starting in [lo, hi)."""
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
    return good, at


def _weight(hay: str, at: int, end: int) -> int:
    """A piece's length with each Chinese character counted three times (one carries a word's worth)."""
    return end - at + 2 * sum(1 for ch in hay[at:end] if is_cjk(ch))


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


def _hunks(needle: str, toks: list[tuple[int, int]], hay: str, pieces: list[tuple[int, int, int, int]]) -> list[dict[str, str]]:
    """Junctions where the excerpt and the output differ: before, between and after the pieces."""
    hunks: list[dict[str, str]] = []
    first, last = pieces[0], pieces[-1]
    if first[0] > 0:
        head = _context(needle, toks, first[0], +1)
        ex_start, shown = 0, head - toks[first[0]][0]
        hunks.append(_hunk(needle[ex_start:head], needle[:toks[first[0]][0]],
                           hay[max(0, first[2] - SHORT_GAP) : first[2] + shown], ""))
    for a, b in zip(pieces, pieces[1:]):
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
        hunks.append(_hunk(needle[tail:], needle[toks[last[1]][0] :], hay[last[3] - kept : last[3] + SHORT_GAP], ""))
    return hunks[:MAX_HUNKS]


def _hunk(ex: str, added: str, out: str, gap: str) -> dict[str, str]:
    return {"ex": ex.strip()[:MAX_HUNK_CHARS], "added": added.strip()[:MAX_HUNK_CHARS],
            "out": out.strip()[:MAX_HUNK_CHARS], "gap": gap.strip()[:MAX_HUNK_CHARS]}
