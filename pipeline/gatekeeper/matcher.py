"""Locating an evidence excerpt in a (possibly huge, possibly JSON-escaped) tool output.

The naive way, `fuzz.partial_ratio(excerpt, whole_output)`, slides the excerpt over every
position of the output. Here an output is prepared once (pipeline/gatekeeper/prepared.py: JSON
escapes decoded, then a 1:1 character map folds case, full-width forms and punctuation, and
whitespace runs collapse) and kept with an offset map back to the decoded text. A faithful excerpt is then one `str.find`;
anything else is scored only on the few windows that its rarest tokens point to.

A JSON output of the seed's shape is matched as its records' lines (pipeline/tools/results.py:
values without keys, one record per line), anything else as its lines. A quote is found *by
structure* (docs/spec.md#quote-fidelity) when it is one contiguous span of that text after
folding, or pieces of it split only between adjacent records: the first piece ends its record,
the next lies in the following one, each at least _MIN_PIECE heavy. Reordered words, a dropped
word or a value taken from a sibling record are not found by structure, whatever their similarity.

Scores are Levenshtein similarities in [0, 1] between an excerpt segment and its best window:
unlike the Indel ratio behind partial_ratio, two unrelated sentences score low (~0.2-0.3), so
the 0.5 / 0.3 thresholds of docs/spec.md#rule-excerpt-similarity mean what they say.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice

from rapidfuzz import fuzz
from rapidfuzz.distance import Levenshtein

from pipeline.core.feature_shapes import Hunk
from pipeline.gatekeeper.folding import fold, fold_plain
from pipeline.gatekeeper.pieces import CLOSE, SHORT_GAP, TOKEN, Chain, chain, weight
from pipeline.gatekeeper.prepared import MAX_HITS, PreparedOutput
from pipeline.text.primitives import ELLIPSIS, is_cjk

_JSON_KEY = re.compile(r'"[A-Za-z_][\w.-]*"\s*:')
# Anchors: at most this many per segment (an anchor seen more than MAX_HITS times points nowhere).
# Both bound the work per excerpt, independent of output size.
_MAX_ANCHORS = 10
_MAX_LOOKUPS = 24
_MAX_WINDOWS = 8
_ANCHOR_LEN = 8
# A piece of a quote split between two records must weigh this much (pieces.weight: a digit or a
# Chinese character counts three) to say which record it comes from; what the rule then asks of
# the lightest piece is its minPieceWeight.
_MIN_PIECE = 8
_MAX_SPLITS = 3  # records one quote may run over without an elision mark, beyond the first


@dataclass
class SegmentMatch:
    """Where one excerpt segment sits in an output; spans are decoded-text offsets."""

    text: str  # the segment as written in the excerpt
    folded: str
    score: float  # Levenshtein similarity to the best window (1.0: found verbatim after folding)
    start: int | None = None
    end: int | None = None
    covered: float = 0.0  # 1.0: found by structure (one span, or pieces split between adjacent records)
    split: int = 0  # found split between records: the weight of its lightest piece (0: one span)
    before: str = ""  # folded output just before the match
    hunks: list[Hunk] = field(default_factory=list)  # where excerpt and output differ
    main: list[tuple[int, int]] = field(default_factory=list)  # decoded spans carrying the quote

    def __post_init__(self) -> None:
        if not self.main and self.start is not None and self.end is not None:
            self.main = [(self.start, self.end)]


def segments(excerpt: str) -> list[tuple[str, str]]:
    """An excerpt cut with "..." is several quotes, each located on its own: (quote, folded quote)."""
    out = []
    for part in ELLIPSIS.split(excerpt):
        # A quote copied from the JSON the model was shown keeps the keys, which a record's line
        # leaves out ('"level": "ERROR", "message": "HTTP 504' is the line's "ERROR HTTP 504").
        folded = fold(_JSON_KEY.sub(" ", part) if '":' in part else part)
        if len(folded) >= 2:
            out.append((part.strip(), folded))
    return out


def locate(segment: str, prepared: PreparedOutput, needle: str | None = None, *, placed: bool = True) -> SegmentMatch:
    """Where one excerpt segment (folded: needle) sits in a prepared output: by structure when it
    can be, else its best window by similarity, inside one record.

    With placed=False only the score is wanted: no decoded span, no added words.
    """
    if needle is None:
        needle = fold(segment)
    elif '":' in segment and needle != (kept := fold(segment)) and _structural(kept, prepared):
        # segments() left the JSON keys out, as a record's line does; a JSON-per-line log read as
        # text keeps them, so a quote of it (reflowed, or over two records) is found with them.
        needle = kept
    # A verbatim quote folds to a substring of the folded output, so an indexed output that lacks
    # the folded needle is spared the full scan of the decoded text.
    pos = _first_whole(prepared, needle) if prepared.indexed and needle else None
    if pos is None or pos >= 0:
        verbatim = _find_whole(prepared.decoded, segment)
        if verbatim >= 0 and prepared.numbers is None:  # contiguous text of one output: adjacent records
            before = _before(prepared.decoded, verbatim, prepared.decoded_record(verbatim)[0]) if placed else ""
            return SegmentMatch(segment, needle, 1.0, verbatim, verbatim + len(segment), 1.0, before=before)
    hay = prepared.folded
    found = _structural(needle, prepared) if len(needle) >= 2 else None
    if found:
        cut = [piece for a, b in found for piece in _by_record(prepared, a, b)]
        split = min(weight(hay, a, b) for a, b in cut) if len(cut) > 1 else 0
        if not placed:
            return SegmentMatch(segment, needle, 1.0, covered=1.0, split=split)
        main = [prepared.span(a, b) for a, b in found]
        first = found[0][0]
        return SegmentMatch(segment, needle, 1.0, main[0][0], main[-1][1], 1.0, split,
                            before=_folded_before(prepared, first), main=main)
    if len(needle) < 4:
        return SegmentMatch(segment, needle, 0.0)
    starts = _candidate_starts(needle, prepared)
    pieces = _best_chain(needle, hay, starts) if placed else None
    if pieces is not None and pieces.covered >= _CHAIN_LOCATES:
        # Most of the quote was found verbatim there: score it there, not where a look-alike
        # record of the same template happens to align a little better.
        starts = [pieces.start]
    aligned = _align(needle, hay, starts, pieces.end - pieces.start if pieces else len(needle))
    if aligned is None:
        return SegmentMatch(segment, needle, 0.0)
    score, fstart, fend = _refine(needle, hay, aligned[1], aligned[2])
    if not placed:
        return SegmentMatch(segment, needle, round(score, 4))
    if pieces is None or pieces.covered < _CHAIN_LOCATES:
        # Not located by a chain (a short quote, or one rewritten): the pieces where it aligns best.
        pieces = chain(needle, hay, max(0, fstart - SHORT_GAP), fstart + SHORT_GAP, short=0)
    if pieces is None:
        start, end = _one_record(prepared, *prepared.span(fstart, fend), [])
        return SegmentMatch(segment, needle, round(score, 4), start, end)
    if pieces.covered == 1.0:
        # Every word was found in order, yet not by structure (a value of a sibling record, a word
        # left out): the chain shows where, and its differences are the hunks.
        fstart, fend = pieces.start, pieces.end
    main = [prepared.span(a, b) for a, b in pieces.main[:_MAX_MAIN]]
    start, end = _one_record(prepared, *prepared.span(fstart, fend), main)
    return SegmentMatch(segment, needle, round(score, 4), start, end, 0.0, 0, _folded_before(prepared, pieces.start),
                        pieces.hunks, main)


def _one_record(prepared: PreparedOutput, start: int, end: int, main: list[tuple[int, int]]) -> tuple[int, int]:
    """The part of a decoded span inside one record, the one holding its longest piece: a quote
    not found by structure is judged against one record, so a value it took from a neighbour is
    not found in its window (the entity rule's swapped entity)."""
    anchor = max(main, key=lambda m: m[1] - m[0]) if main else (start, end)
    lo, hi = prepared.decoded_record(anchor[0])
    clipped = max(start, lo), min(end, hi)
    return clipped if clipped[0] < clipped[1] else anchor


def _structural(needle: str, prepared: PreparedOutput, within: int | None = None, depth: int = 0) -> list[tuple[int, int]] | None:
    """Folded spans of the needle found by structure (starting in record `within` if given): one
    contiguous span, or a first piece that ends its record and the rest found the same way from
    the next, adjacent record. The longest first piece is tried first."""
    for at in _hits(prepared, needle, within):
        if _runs_adjacent(prepared, at, at + len(needle)):
            return [(at, at + len(needle))]
    if depth >= _MAX_SPLITS:
        return None
    toks = [m.span() for m in TOKEN.finditer(needle)]
    # The first piece ends its record, so where it starts says where it ends: the starts of the
    # needle's longest prefix found anywhere are tried first, then of shorter ones while they are
    # rare enough to point at a record (a longer first piece is found at fewer places).
    heads = [toks[k - 1][1] for k in range(1, len(toks)) if weight(needle, 0, toks[k - 1][1]) >= _MIN_PIECE]
    lo, hi = 0, len(heads)  # heads[:lo] occur somewhere, heads[hi:] nowhere
    while lo < hi:
        mid = (lo + hi) // 2
        if next(_hits(prepared, needle[: heads[mid]], within, 1), None) is None:
            hi = mid
        else:
            lo = mid + 1
    tried: set[int] = set()
    for head_end in reversed(heads[:lo]):
        found = list(islice(_hits(prepared, needle[:head_end], within, MAX_HITS + 1), MAX_HITS + 1))
        if len(found) > MAX_HITS:
            break
        for at in found:
            if at not in tried:
                tried.add(at)
                split = _split_at(needle, prepared, at, depth)
                if split:
                    return split
    return None


def _split_at(needle: str, prepared: PreparedOutput, at: int, depth: int) -> list[tuple[int, int]] | None:
    """The needle found from folded position `at` to the end of its record, and the rest by
    structure from the next, adjacent record; None when it does not run to that record's end."""
    record = prepared.record_at(at)
    piece = prepared.folded[at : prepared.record_end(record)].rstrip()
    end = at + len(piece)
    if not (len(piece) < len(needle) and needle.startswith(piece) and _token_edge(needle, len(piece))):
        return None
    tail = needle[len(piece) :].lstrip()
    if weight(piece, 0, len(piece)) < _MIN_PIECE or weight(tail, 0, len(tail)) < _MIN_PIECE:
        return None
    if not prepared.adjacent(record) or not _runs_adjacent(prepared, at, end):
        return None
    rest = _structural(tail, prepared, record + 1, depth + 1)
    return [(at, end), *rest] if rest else None


def _token_edge(needle: str, at: int) -> bool:
    """Whether a folded needle may be cut at `at`: a space, or a Chinese character on either side."""
    return needle[at] == " " or is_cjk(needle[at]) or is_cjk(needle[at - 1])


def _hits(prepared: PreparedOutput, needle: str, within: int | None, limit: int = MAX_HITS) -> Iterator[int]:
    """Folded positions of a needle that cut no number or word: anywhere (at most `limit`), or starting in one record."""
    hay = prepared.folded

    def whole(at: int) -> bool:
        return not _cuts(hay, at, at + len(needle))

    if within is None:
        yield from (at for at in islice(prepared.finds(needle), limit) if whole(at))
        return
    lo, hi = int(prepared.record_starts[within]), prepared.record_end(within)
    at = hay.find(needle, lo, hi + len(needle))
    while 0 <= at < hi:
        if whole(at):
            yield at
        at = hay.find(needle, at + 1, hi + len(needle))


def _by_record(prepared: PreparedOutput, start: int, end: int) -> Iterator[tuple[int, int]]:
    """A folded span cut where records begin, each part without its edge spaces."""
    hay = prepared.folded
    first, last = prepared.record_at(start), prepared.record_at(max(start, end - 1))
    bounds = [start, *(int(prepared.record_starts[i]) for i in range(first + 1, last + 1)), end]
    for a, b in zip(bounds, bounds[1:], strict=False):
        while a < b and hay[a] == " ":
            a += 1
        while b > a and hay[b - 1] == " ":
            b -= 1
        if a < b:
            yield a, b


def _runs_adjacent(prepared: PreparedOutput, start: int, end: int) -> bool:
    """Whether a contiguous folded span runs only over adjacent records (always, in a whole output)."""
    if prepared.numbers is None:
        return True
    first, last = prepared.record_at(start), prepared.record_at(max(start, end - 1))
    return all(prepared.adjacent(i) for i in range(first, last))


_MAX_MAIN = 4


# A chain covering at least this share of a quote locates it (see locate); one covering
# _CHAIN_SETTLES (all of it) is not bettered by looking near the other candidate windows.
_CHAIN_LOCATES = 0.5
_CHAIN_SETTLES = 1.0


def _best_chain(needle: str, hay: str, starts: list[int]) -> Chain | None:
    """The chain covering most of the needle (then with the narrowest gaps) near any candidate start."""
    best: Chain | None = None
    tried: list[int] = []
    for wstart in starts:
        if any(abs(wstart - t) < len(needle) for t in tried):
            continue  # a neighbouring window: the same records, the same chain
        tried.append(wstart)
        # Reach back far enough for a quote whose first record precedes the voted window.
        found = chain(needle, hay, max(0, wstart - len(needle) - CLOSE), wstart + len(needle), near=wstart)
        if found is not None and (best is None or found.rank > best.rank):
            best = found
        if best is not None and best.covered >= _CHAIN_SETTLES and best.gap <= CLOSE:
            break
    return best


def _align(needle: str, hay: str, starts: list[int], width: int) -> tuple[float, int, int] | None:
    """(partial_ratio score, folded start, end) of the needle's best window among the candidates."""
    aligned: tuple[float, int, int] | None = None
    half = len(needle) // 2
    for wstart in starts:
        lo = max(0, wstart - half)
        window = hay[lo : wstart + max(width, len(needle)) + half]
        if not window:
            continue
        # A window scoring below the best so far is not wanted; rapidfuzz then stops early (None).
        align = fuzz.partial_ratio_alignment(needle, window, score_cutoff=aligned[0] if aligned else None)
        if align is not None and (aligned is None or align.score > aligned[0]):
            aligned = (align.score, lo + align.dest_start, lo + align.dest_end)
    return aligned


def _cuts(text: str, at: int, end: int) -> bool:
    """Whether text[at:end] cuts a number at either edge ("lag=3" is not in "lag=37"), or leaves
    of an edge word a single Latin letter: a quote cut short mid-word ("bank-gatew") keeps enough
    of it to say which word, but "FROM t" is not in "from test" (the "t" of "test" is no word "t")."""
    return (_glued(text[at - 1 : at], text[at : at + 1], text[at + 1 : at + 2])
            or _glued(text[end : end + 1], text[end - 1 : end], text[end - 2 : end - 1]))


def _glued(outside: str, edge: str, inside: str) -> bool:
    """Whether a quote's edge character continues into the text outside it: a digit into a digit,
    or a one-letter Latin word (`inside` ends it) into a letter."""
    if not (outside and edge):
        return False
    if outside.isdigit() and edge.isdigit():
        return True
    letters = outside.isascii() and edge.isascii() and outside.isalpha() and edge.isalpha()
    return letters and not (inside.isascii() and inside.isalnum())


def _first_whole(prepared: PreparedOutput, needle: str) -> int:
    """First position of a folded needle in the folded output that cuts no number or word."""
    hay = prepared.folded
    for count, at in enumerate(prepared.finds(needle)):
        if not _cuts(hay, at, at + len(needle)):
            return at
        if count >= MAX_HITS:
            break
    return -1


def _find_whole(text: str, segment: str) -> int:
    """First occurrence of segment in text that cuts no number or word."""
    at = text.find(segment)
    for _ in range(MAX_HITS):
        if at < 0 or not _cuts(text, at, at + len(segment)):
            return at
        at = text.find(segment, at + 1)
    return -1


# Output characters kept from just before a quote, inside its record: a word there ("no" before
# "OutOfMemoryError detected") may change what the quote means. The record's start (a line break,
# or where the matcher's record begins) ends that stretch: a "no" ending the previous line or
# record is that record's word, not one said of the quote.
BEFORE = 40


def _folded_before(prepared: PreparedOutput, fpos: int) -> str:
    """Folded output just before folded position fpos, within its record."""
    lo = max(int(prepared.record_starts[prepared.record_at(fpos)]), fpos - BEFORE)
    return prepared.folded[lo:fpos] if lo < fpos else ""


def _before(text: str, start: int, lo: int = 0) -> str:
    """Folded text just before text[start:] and from `lo` on (its record's start), ending in a
    space when a word boundary separates them."""
    # Plain folding (no number canonicalisation): only the words before the quote are wanted.
    raw = text[max(lo, start - BEFORE - 8) : start]
    plain = fold_plain(raw)
    folded = " ".join(plain.split())[-BEFORE:]
    prev = text[start - 1 : start]
    return folded + " " if folded and not (prev.isalnum() or prev == "") else folded


def _refine(needle: str, hay: str, start: int, end: int) -> tuple[float, int, int]:
    """Let the window grow or shrink so an added or dropped word is not charged twice.

    partial_ratio aligns windows as long as the needle; an excerpt with a word added or dropped
    matches a shorter or longer stretch. One global alignment against a padded window, trimmed to
    its first and last matching characters, finds that stretch.
    """
    reach = max(2, len(needle) // 4)
    lo = max(0, start - reach)
    padded = hay[lo : end + reach]
    equal = [op for op in Levenshtein.opcodes(needle, padded) if op.tag == "equal"]
    candidates = [(start, end)]
    if equal:
        candidates.append((lo + equal[0].dest_start - equal[0].src_start, lo + equal[-1].dest_end))
        candidates.append((lo + equal[0].dest_start, lo + equal[-1].dest_end + len(needle) - equal[-1].src_end))
    best = (-1.0, start, end)
    for a, b in candidates:
        a, b = max(0, a), min(len(hay), max(a + 1, b))
        score = Levenshtein.normalized_similarity(needle, hay[a:b])
        if score > best[0]:
            best = (score, a, b)
    return best


def _may_occur(anchor: str, prepared: PreparedOutput) -> bool:
    """False for a two-character Chinese anchor the output's word list lacks: too short for the
    trigram index, it would cost a full scan to find nothing."""
    return len(anchor) != 2 or anchor.isascii() or prepared.vocabulary.has_pair(anchor)


def _candidate_starts(needle: str, prepared: PreparedOutput) -> list[int]:
    """Window starts voted for by the needle's rarest anchors (tokens or token chunks)."""
    anchors: list[tuple[str, int]] = []
    offset = 0
    for token in needle.split(" "):
        if not token.isascii() and len(token) >= 2:
            # Chinese has no spaces: a run is cut into short chunks, each a word or two.
            step = 4 if len(token) > 6 else 2
            anchors.extend((token[i : i + step], offset + i) for i in range(0, len(token) - 1, step))
        elif len(token) >= 3:
            if len(token) <= _ANCHOR_LEN + 2:
                anchors.append((token, offset))
            else:
                anchors.extend((token[i : i + _ANCHOR_LEN], offset + i) for i in range(0, len(token) - 2, _ANCHOR_LEN))
        offset += len(token) + 1
    anchors.sort(key=lambda a: -len(a[0]))
    bucket = max(8, len(needle) // 4)
    votes: dict[int, float] = {}
    # A common anchor (a field name, a service every record names) points nowhere: of the longest
    # _MAX_LOOKUPS anchors, the _MAX_ANCHORS rarest vote (a timestamp or an id beats "checkout").
    found = [(hits, anchor, at) for anchor, at in anchors[:_MAX_LOOKUPS] if _may_occur(anchor, prepared)
             for hits in (prepared.anchor_hits(anchor),) if hits]
    found.sort(key=lambda f: len(f[0]))
    for hits, anchor, at in found[:_MAX_ANCHORS]:
        weight = len(anchor) / len(hits)  # a word found once says more than one found in every record
        for hit in hits:
            key = (hit - at) // bucket
            votes[key] = votes.get(key, 0.0) + weight
    ranked = sorted(votes.items(), key=lambda kv: -kv[1])[:_MAX_WINDOWS]
    return [max(0, key * bucket) for key, _ in ranked]
