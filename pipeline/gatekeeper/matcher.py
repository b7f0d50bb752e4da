"""Locating an evidence excerpt in a (possibly huge, possibly JSON-escaped) tool output.

The naive way, `fuzz.partial_ratio(excerpt, whole_output)`, slides the excerpt over every
position of the output. Here an output is prepared once (JSON escapes decoded, then a 1:1
character map folds case, full-width forms and punctuation, and whitespace runs collapse) and
kept with an offset map back to the decoded text. A faithful excerpt is then one `str.find`;
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
import unicodedata
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import islice

import numpy as np
from rapidfuzz import fuzz
from rapidfuzz.distance import Levenshtein

from pipeline.gatekeeper.pieces import BEFORE, CLOSE, SHORT_GAP, TOKEN, Chain, chain, weight
from pipeline.gatekeeper.vocabulary import Vocabulary
from pipeline.text.primitives import is_cjk
from pipeline.tools.results import parse_result

_SPACE = 32
_ELLIPSIS = re.compile(r"(?:\.{3,}|…+|⋯+|\[\s*\.\.\.\s*\])")
_JSON_KEY = re.compile(r'"[A-Za-z_][\w.-]*"\s*:')
_JSON_ESCAPE = re.compile(r'\\(u[0-9a-fA-F]{4}|["\\/bfnrt])')
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
# Anchors: at most this many per segment, and an anchor seen more often than this is too
# common to point anywhere. Both bound the work per excerpt, independent of output size.
_MAX_ANCHORS = 10
_MAX_LOOKUPS = 24
_MAX_HITS = 48
_MAX_WINDOWS = 8
_ANCHOR_LEN = 8
_MAX_REMEMBERED = 4096  # anchors whose hits an output remembers
# How far the entity window may reach beyond the match when looking for the enclosing record.
RECORD_REACH = 400
# A piece of a quote split between two records must weigh this much (pieces.weight: a digit or a
# Chinese character counts three) to say which record it comes from; what the rule then asks of
# the lightest piece is its minPieceWeight.
_MIN_PIECE = 8
_MAX_SPLITS = 3  # records one quote may run over without an elision mark, beyond the first


@lru_cache(maxsize=1)
def _fold_table() -> np.ndarray:
    """Code point -> folded code point for the BMP: NFKC, lower case, non-alphanumerics -> space.

    One output character always maps to one character, so offsets survive folding.
    """
    table = np.empty(0x10000, dtype=np.uint32)
    for cp in range(0x10000):
        if 0xD800 <= cp <= 0xDFFF:
            table[cp] = _SPACE
            continue
        folded = unicodedata.normalize("NFKC", chr(cp)).lower()
        ch = folded[0] if folded else " "
        table[cp] = ord(ch) if ch.isalnum() else _SPACE
    return table


@lru_cache(maxsize=1)
def _ascii_table() -> np.ndarray:
    return _fold_table()[:128].astype(np.uint8)


@lru_cache(maxsize=1)
def _bmp_table() -> tuple[np.ndarray, str]:
    """The fold table as uint16, and the few BMP characters that fold outside the BMP (it cannot hold those)."""
    table = _fold_table()
    wide = np.flatnonzero(table > 0xFFFF)
    return table.astype(np.uint16), "".join(chr(cp) for cp in wide)


def _fold_codes(text: str) -> np.ndarray:
    """Folded code points of a text, one per character (uint8 for ASCII text, uint16 for the BMP:
    less memory to move than uint32)."""
    if text.isascii():
        return _ascii_table()[np.frombuffer(text.encode("ascii"), dtype=np.uint8)]
    table16, wide = _bmp_table()
    units = np.frombuffer(text.encode("utf-16-le", "surrogatepass"), dtype=np.uint16)
    # One UTF-16 unit per character unless the text leaves the BMP (a surrogate pair per character).
    if units.size == len(text) and not any(ch in text for ch in wide):
        return table16.take(units)
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    if codes.size and codes.max() > 0xFFFF:
        return np.where(codes < 0x10000, _fold_table()[np.minimum(codes, 0xFFFF)], codes)
    return _fold_table().take(codes)


@lru_cache(maxsize=1)
def _fold_dict() -> dict[int, int]:
    table = _fold_table()
    return {cp: int(table[cp]) for cp in range(0x10000) if table[cp] != cp}


_ASCII_NON_ALNUM = re.compile(r"[^a-z0-9]+")
# Characters that only spell a number differently: a thousands separator ("5,312", or full-width
# "5，312", which width folding would otherwise turn into a space first) and the trailing zeros
# of a fraction ("92.0", "1.50", "92．0"). Folding drops them, so 92 = 92.0 = 92.00 and
# 5,312 = 5312 on both sides, while 92.5 still differs. Dotted runs (10.0.3.7, v1.2.0) are left.
# Each pattern starts with one of two characters, so a scan of a 10 MB output jumps from comma to
# comma and point to point; what precedes the match (a digit, not a dotted run) is checked in code.
_THOUSANDS = re.compile(r"[,\uff0c](?=\d{3}(?!\d))")
_FRACTION_ZEROS = re.compile(r"[.\uff0e](\d*?)(0+)(?![\d.\uff0e]|[,\uff0c]\d)")

def number_noise(text: str) -> list[tuple[int, int]]:
    """[start, end) spans of a text that folding drops as number formatting, in order."""
    spans = [m.span() for m in _THOUSANDS.finditer(text) if text[m.start() - 1 : m.start()].isdigit()]
    for m in _FRACTION_ZEROS.finditer(text):
        dot = m.start()
        first = dot
        while first and text[first - 1].isdigit():
            first -= 1
        if first == dot or text[first - 1 : first] in (".", "\uff0e"):
            continue  # no integer part, or a dotted run such as 10.0.3.7
        # "92.0" loses ".0"; "1.50" keeps "1.5".
        spans.append((dot if not m.group(1) else m.start(2), m.end(2)))
    return sorted(spans)


def _without(text: str, spans: list[tuple[int, int]]) -> str:
    parts, at = [], 0
    for a, b in spans:
        parts.append(text[at:a])
        at = b
    parts.append(text[at:])
    return "".join(parts)


def fold(text: str) -> str:
    """The matching form of a short text (an excerpt): same folding as an output, runs collapsed."""
    if "." in text or "," in text or "\uff0c" in text or "\uff0e" in text:
        noise = number_noise(text)
        if noise:
            text = _without(text, noise)
    if text.isascii():
        return _ASCII_NON_ALNUM.sub(" ", text.lower()).strip()
    return " ".join(text.translate(_fold_dict()).split())


def decode_output(output: str) -> str:
    """The text an output is matched against and offsets refer to: JSON escapes decoded.

    Without backslashes this is the output itself, so offsets are raw offsets.
    """
    stripped = output.strip()
    if "\\" not in output or stripped[:1] not in ("{", "[") or stripped[-1:] not in ("}", "]"):
        return output
    if output.isascii():
        text = output.encode("ascii").decode("unicode_escape")
    else:
        text = _JSON_ESCAPE.sub(_unescape, output)
    if _SURROGATE.search(text):
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _unescape(m: re.Match[str]) -> str:
    esc = m.group(1)
    return chr(int(esc[1:], 16)) if esc[0] == "u" else _SIMPLE_ESCAPES[esc]


_BLOCK = 4096  # decoded characters per entry of the kept-count table behind offset lookups


class PreparedOutput:
    """An output ready for matching: decoded text, and (built on first need) its folded form.

    Verbatim excerpts are found in the decoded text directly, so most outputs are never folded.
    Short folded needles (anchors, entity tokens) are found with `str.find`; once those scans have
    cost about as much as an index would, a trigram block index (_GramIndex) is built and later
    searches only look inside the blocks that can hold the needle.
    """

    def __init__(self, output: str, records: tuple[str, list[int], list[int] | None] | None = None) -> None:
        """`records`: (text, record starts, record numbers) when the caller already has the records
        (the cited records of a binding); otherwise they are read from the output."""
        if records is None:
            records = record_text(output)
        text, starts, numbers = records
        self.decoded = text
        self.raw_offsets = self.decoded is output  # offsets also index the raw output text
        self.starts = np.asarray(starts if starts else [0], dtype=np.int64)  # decoded start of each record
        self.numbers = numbers  # each record's number in its output (None: its position here)
        self._fstarts: np.ndarray | None = None
        self._folded: tuple[str, np.ndarray, np.ndarray] | None = None
        self._index: _GramIndex | None = None
        self._scanned = 0  # folded characters searched without the index
        self._anchors: dict[str, tuple[int, ...] | None] = {}
        self._vocabulary: Vocabulary | None = None

    @classmethod
    def build(cls, output: str) -> PreparedOutput:
        return cls(output)

    def prepare(self) -> PreparedOutput:
        """Fold, index and list the words now (when the output is stored), not during a check."""
        hay = self.folded
        if self._index is None and len(hay) >= _INDEX_MIN_CHARS:
            self._index = _GramIndex(hay)
        self._vocabulary = self.vocabulary
        return self

    @property
    def vocabulary(self) -> Vocabulary:
        if self._vocabulary is None:
            self._vocabulary = Vocabulary(self.folded)
        return self._vocabulary

    @property
    def folded(self) -> str:
        return self._fold()[0]

    @property
    def indexed(self) -> bool:
        return self._index is not None

    def _fold(self) -> tuple[str, np.ndarray, np.ndarray]:
        """(folded text, keep mask packed as bits, kept-character counts before each _BLOCK of the decoded text)."""
        if self._folded is None:
            codes = _fold_codes(self.decoded)
            space = codes == _SPACE
            keep = np.empty_like(space)
            if space.size:
                keep[0] = not space[0]  # drops a leading space
                np.logical_not(space[1:] & space[:-1], out=keep[1:])
            noise = number_noise(self.decoded)
            if noise:
                # The spans are short and few: clear their characters by index, not with a
                # mask the size of the output.
                bounds = np.array(noise, dtype=np.int64)
                lengths = bounds[:, 1] - bounds[:, 0]
                firsts = np.repeat(bounds[:, 0] - (np.cumsum(lengths) - lengths), lengths)
                keep[firsts + np.arange(int(lengths.sum()))] = False
            kept = codes[keep]
            if kept.dtype == np.uint8:
                text = kept.tobytes().decode("ascii")
            elif kept.dtype == np.uint16:
                text = kept.tobytes().decode("utf-16-le", "surrogatepass")
            else:
                text = kept.astype(np.uint32, copy=False).tobytes().decode("utf-32-le", "replace")
            text = text.removesuffix(" ")
            self._fstarts = _kept_before(keep, self.starts)
            whole = keep.size // _BLOCK * _BLOCK
            per_block = keep[:whole].reshape(-1, _BLOCK).sum(axis=1, dtype=np.int64)
            # Kept as bits (an eighth of the memory): an offset lookup unpacks one block.
            self._folded = (text, np.packbits(keep), np.concatenate(([0], np.cumsum(per_block))))
        return self._folded

    def _offset(self, k: int) -> int:
        """Decoded index of folded index k (the k-th kept character)."""
        _, packed, table = self._fold()
        block = int(np.searchsorted(table, k, side="right")) - 1
        base = block * _BLOCK
        inside = np.flatnonzero(np.unpackbits(packed[base // 8 : (base + _BLOCK) // 8]))
        return base + int(inside[k - int(table[block])])

    def span(self, fstart: int, fend: int) -> tuple[int, int]:
        """Folded [fstart, fend) -> decoded [start, end)."""
        return self._offset(fstart), self._offset(fend - 1) + 1

    @property
    def record_starts(self) -> np.ndarray:
        """Folded start of each record."""
        self._fold()
        assert self._fstarts is not None
        return self._fstarts

    def record_at(self, fpos: int) -> int:
        """The record (its index here) holding folded position fpos."""
        return int(np.searchsorted(self.record_starts, fpos, side="right")) - 1

    def record_end(self, index: int) -> int:
        """Folded end of a record (the next one's start, or the text's end)."""
        starts = self.record_starts
        return int(starts[index + 1]) if index + 1 < len(starts) else len(self.folded)

    def adjacent(self, index: int) -> bool:
        """Whether record index + 1 directly follows record index in the output."""
        if index + 1 >= len(self.starts):
            return False
        return self.numbers is None or self.numbers[index + 1] == self.numbers[index] + 1

    def number(self, index: int) -> int:
        return self.numbers[index] if self.numbers is not None else index

    def record_span(self, index: int) -> tuple[int, int]:
        """Decoded [start, end) of a record (its newline left out)."""
        end = int(self.starts[index + 1]) - 1 if index + 1 < len(self.starts) else len(self.decoded)
        return int(self.starts[index]), end

    def decoded_index(self, dpos: int) -> int:
        """The number of the record holding decoded position dpos."""
        return self.number(int(np.searchsorted(self.starts, dpos, side="right")) - 1)

    def decoded_record(self, dpos: int) -> tuple[int, int]:
        """Decoded [start, end) of the record holding decoded position dpos (its newline left out)."""
        return self.record_span(int(np.searchsorted(self.starts, dpos, side="right")) - 1)

    def finds(self, needle: str) -> Iterator[int]:
        """Every position of needle in the folded text, in order (what repeated `str.find` gives)."""
        hay = self.folded
        if self._index is None and len(hay) >= _INDEX_MIN_CHARS and self._scanned >= _INDEX_AFTER_SCANS * len(hay):
            self._index = _GramIndex(hay)
        runs = self._index.runs(needle) if self._index is not None else None
        if runs is None:
            yield from self._scan(hay, needle)
            return
        width = _GramIndex.BLOCK
        for first, stop in runs:
            # Starts in these blocks belong to this run; an occurrence may reach past its last block.
            hi = stop * width + len(needle) - 1
            pos = hay.find(needle, first * width, hi)
            while pos >= 0:
                yield pos
                pos = hay.find(needle, pos + 1, hi)

    def anchor_hits(self, anchor: str) -> tuple[int, ...] | None:
        """Positions of an anchor in the folded text; None when there are more than _MAX_HITS.

        Remembered per output: the bindings citing one output share most of their words.
        """
        if anchor in self._anchors:
            return self._anchors[anchor]
        found = tuple(islice(self.finds(anchor), _MAX_HITS + 1))
        hits = found if len(found) <= _MAX_HITS else None
        if len(self._anchors) >= _MAX_REMEMBERED:
            self._anchors.clear()
        self._anchors[anchor] = hits
        return hits

    def _scan(self, hay: str, needle: str) -> Iterator[int]:
        done = 0
        pos = hay.find(needle)
        while True:
            self._scanned += (pos if pos >= 0 else len(hay)) - done
            if pos < 0:
                return
            yield pos
            done = pos
            pos = hay.find(needle, pos + 1)

    def record(self, start: int, end: int) -> tuple[int, int]:
        """The records around a decoded span, within RECORD_REACH of it."""
        lo = self.decoded_record(start)[0]
        hi = self.decoded_record(max(start, end - 1))[1]
        return max(lo, start - RECORD_REACH), min(hi, end + RECORD_REACH)

    def contains(self, folded_token: str) -> bool:
        """Whether the folded output holds the token, not glued to alphanumerics on either side (CJK may glue)."""
        if not folded_token:
            return False
        if folded_token.isascii():
            # The word list answers without a scan: a missing word rules the token out, and a
            # one-word token that is an output word is there, unglued by construction.
            words = folded_token.split(" ")
            if not all(self.vocabulary.has_exact(w) for w in words):
                return False
            if len(words) == 1:
                return True
        hay = self.folded
        for pos in self.finds(folded_token):
            before = hay[pos - 1] if pos else " "
            after = hay[pos + len(folded_token)] if pos + len(folded_token) < len(hay) else " "
            if not (_glues(before, folded_token[0]) or _glues(after, folded_token[-1])):
                return True
        return False


def _kept_before(keep: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Folded start of each record: the kept characters before its decoded start."""
    out = np.zeros(len(starts), dtype=np.int64)
    inside = starts[starts < keep.size]
    if len(inside) > 1:
        per = np.add.reduceat(keep.view(np.uint8), inside, dtype=np.int64)
        out[1 : len(inside)] = np.cumsum(per)[:-1]
    out[len(inside) :] = int(keep.sum())
    return out


def record_text(output: str) -> tuple[str, list[int], list[int] | None]:
    """(text, record starts, None): a structured output's record lines, else the decoded output by line."""
    stripped = output.lstrip()
    if stripped[:1] == "{":
        result = parse_result(output)
        if result.structured:
            text, starts = result.quotable()
            return text, starts, None
    text = decode_output(output)
    return text, [0, *(m.end() for m in _NEWLINE.finditer(text))], None


_NEWLINE = re.compile("\n")


def _glues(neighbour: str, edge: str) -> bool:
    return neighbour.isascii() and neighbour.isalnum() and edge.isascii() and edge.isalnum()


# Building the index costs about as much as this many full `str.find` scans of the folded text.
_INDEX_AFTER_SCANS = 8
_INDEX_MIN_CHARS = 1 << 16  # below this a scan is a few microseconds: never worth an index


class _GramIndex:
    """Which BLOCK-sized stretches of a folded text hold which trigrams (hashed to BITS bits).

    A needle can only start in a block that holds all of its first PROBE characters' trigrams, so
    a rare needle is looked for in a few blocks instead of the whole text. Each block also records
    the trigrams starting in the first PROBE characters of the next one, so a needle starting near
    a block's end is still seen as a whole. Half a byte per folded character, packed.
    """

    BLOCK = 2048
    BITS = 13
    PROBE = 64
    _MULT = (0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D)

    def __init__(self, hay: str) -> None:
        codes = np.frombuffer(hay.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        grams = self._hash(codes[:-2], codes[1:-1], codes[2:])
        self.count = (len(hay) + self.BLOCK - 1) // self.BLOCK
        shift = np.uint32(self.BLOCK.bit_length() - 1)
        starts = np.arange(grams.size, dtype=np.uint32)
        cells = grams * np.uint32(self.count)
        present = np.zeros((1 << self.BITS) * self.count, dtype=bool)
        present[cells + (starts >> shift)] = True
        # Trigrams near a block's start are also the previous block's overhang.
        near = np.flatnonzero((starts & np.uint32(self.BLOCK - 1)) < self.PROBE)
        near = near[near >= self.BLOCK]
        present[cells[near] + (starts[near] >> shift) - np.uint32(1)] = True
        self._packed = np.packbits(present.reshape(1 << self.BITS, self.count), axis=1, bitorder="little")
        self._rows: dict[int, int] = {}  # trigram hash -> its blocks as an int bit set, converted on first use
        self._by_text: dict[str, int] = {}  # trigram -> the same bit set

    @classmethod
    def _gram(cls, tri: str) -> int:
        """The hash of one trigram, as _hash computes it over the whole text."""
        a, b, c = (ord(ch) for ch in tri)
        ka, kb, kc = cls._MULT
        return (((a * ka) & _U32) ^ ((b * kb) & _U32) ^ ((c * kc) & _U32)) >> (32 - cls.BITS)

    def _row(self, gram: int) -> int:
        row = self._rows.get(gram)
        if row is None:
            row = self._rows[gram] = int.from_bytes(self._packed[gram].tobytes(), "little")
        return row

    @classmethod
    def _hash(cls, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        ka, kb, kc = (np.uint32(k) for k in cls._MULT)
        return ((a * ka) ^ (b * kb) ^ (c * kc)) >> np.uint32(32 - cls.BITS)

    def runs(self, needle: str) -> Iterator[tuple[int, int]] | None:
        """[first, stop) runs of consecutive blocks where needle may start, ascending.

        None when needle is too short to say; no runs at all when it is absent.
        """
        head = needle[: self.PROBE]
        if len(head) < 3:
            return None
        # Block sets by trigram text: the needles checked against one output share most trigrams,
        # and a dict lookup costs less than hashing the trigram again.
        known = self._by_text
        if len(known) >= _MAX_TRIGRAMS:
            known.clear()
        candidates = -1
        for i in range(len(head) - 2):
            tri = head[i : i + 3]
            row = known.get(tri)
            if row is None:
                row = known[tri] = self._row(self._gram(tri))
            candidates &= row
            if not candidates:
                return iter(())
        return _bit_runs(format(candidates, "b")[::-1])


_U32 = 0xFFFFFFFF
_MAX_TRIGRAMS = 65536  # trigrams whose block sets an index remembers by text


def _bit_runs(bits: str) -> Iterator[tuple[int, int]]:
    """[first, stop) index runs of the '1's of a bit string (bit i at index i)."""
    first = bits.find("1")
    while first >= 0:
        stop = bits.find("0", first)
        if stop < 0:
            stop = len(bits)
        yield first, stop
        first = bits.find("1", stop)


class OutputCache:
    """Prepared outputs by invocation id, bounded by total decoded characters (LRU).

    A prepared output holds about two bytes per character beside its text (the folded copy, the
    trigram index, the offset bits). The default bound (~250 MB of that) keeps six outputs at the
    default 20 MB storage cap: a session citing three of them must not evict one to check another,
    or every binding would fold and index its output again (tens of seconds per binding).
    """

    def __init__(self, max_chars: int = 128_000_000) -> None:
        self._items: OrderedDict[tuple[int, int], PreparedOutput] = OrderedDict()
        self._chars = 0
        self._max = max_chars

    def get(self, invocation_id: int, output: str, *, prepare: bool = False) -> PreparedOutput:
        key = (invocation_id, hash(output))
        item = self._items.get(key)
        if item is not None:
            self._items.move_to_end(key)
            return item.prepare() if prepare else item
        item = PreparedOutput.build(output)
        if prepare:
            item.prepare()
        self._items[key] = item
        self._chars += len(item.decoded)
        while self._chars > self._max and len(self._items) > 1:
            _, old = self._items.popitem(last=False)
            self._chars -= len(old.decoded)
        return item


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
    hunks: list[dict[str, str]] = field(default_factory=list)  # where excerpt and output differ
    main: list[tuple[int, int]] = field(default_factory=list)  # decoded spans carrying the quote

    def __post_init__(self) -> None:
        if not self.main and self.start is not None and self.end is not None:
            self.main = [(self.start, self.end)]


def segments(excerpt: str) -> list[tuple[str, str]]:
    """An excerpt cut with "..." is several quotes, each located on its own: (quote, folded quote)."""
    out = []
    for part in _ELLIPSIS.split(excerpt):
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
    # A verbatim quote folds to a substring of the folded output, so an indexed output that lacks
    # the folded needle is spared the full scan of the decoded text.
    pos = _first_whole(prepared, needle) if prepared.indexed and needle else None
    if pos is None or pos >= 0:
        verbatim = _find_whole_numbers(prepared.decoded, segment)
        if verbatim >= 0 and prepared.numbers is None:  # contiguous text of one output: adjacent records
            before = _before(prepared.decoded, verbatim) if placed else ""
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
                            before=hay[max(0, first - BEFORE) : first], main=main)
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
    return SegmentMatch(segment, needle, round(score, 4), start, end, 0.0, 0, pieces.before, pieces.hunks, main)


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
        found = list(islice(_hits(prepared, needle[:head_end], within, _MAX_HITS + 1), _MAX_HITS + 1))
        if len(found) > _MAX_HITS:
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


def _hits(prepared: PreparedOutput, needle: str, within: int | None, limit: int = _MAX_HITS) -> Iterator[int]:
    """Folded positions of a needle that cut no number: anywhere (at most `limit`), or starting in one record."""
    hay = prepared.folded
    head, tail = needle[:1].isdigit(), needle[-1:].isdigit()

    def whole(at: int) -> bool:
        return not ((head and hay[at - 1 : at].isdigit())
                    or (tail and hay[at + len(needle) : at + len(needle) + 1].isdigit()))

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


def _first_whole(prepared: PreparedOutput, needle: str) -> int:
    """First position of a folded needle in the folded output that does not cut a number."""
    hay = prepared.folded
    head, tail = needle[:1].isdigit(), needle[-1:].isdigit()
    for count, at in enumerate(prepared.finds(needle)):
        if not ((head and hay[at - 1 : at].isdigit()) or (tail and hay[at + len(needle) : at + len(needle) + 1].isdigit())):
            return at
        if count >= _MAX_HITS:
            break
    return -1


def _find_whole_numbers(text: str, segment: str) -> int:
    """First occurrence of segment in text that does not cut a number ("lag=3" is not in "lag=37")."""
    head, tail = segment[:1].isdigit(), segment[-1:].isdigit()
    at = text.find(segment)
    for _ in range(_MAX_HITS):
        if at < 0 or not ((head and text[at - 1 : at].isdigit()) or (tail and text[at + len(segment) : at + len(segment) + 1].isdigit())):
            return at
        at = text.find(segment, at + 1)
    return -1


def _before(text: str, start: int) -> str:
    """Folded text just before text[start:], ending in a space when a word boundary separates them."""
    # Plain folding (no number canonicalisation): only the words before the quote are wanted.
    raw = text[max(0, start - BEFORE - 8) : start]
    plain = _ASCII_NON_ALNUM.sub(" ", raw.lower()) if raw.isascii() else raw.translate(_fold_dict())
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
