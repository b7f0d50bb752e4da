"""An output prepared for matching: decoded once, folded and indexed on first need.

JSON escapes are decoded, then the output is folded (pipeline/gatekeeper/folding.py: a 1:1
character map, whitespace runs collapsed) and kept with an offset map back to the decoded text.
A JSON output of the seed's shape is prepared as its records' lines (pipeline/tools/results.py:
values without keys, one record per line), anything else as its lines. Short folded needles are
found with `str.find` until the scans have cost about as much as a trigram block index, which is
then built. OutputCache keeps prepared outputs by invocation, bounded by their size.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterator
from itertools import islice

import numpy as np

from pipeline.gatekeeper.folding import SPACE, fold_codes, number_noise
from pipeline.gatekeeper.vocabulary import Vocabulary
from pipeline.tools.results import parse_result

_JSON_ESCAPE = re.compile(r'\\(u[0-9a-fA-F]{4}|["\\/bfnrt])')
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
# An anchor seen more often than this is too common to point anywhere: it bounds the work per
# excerpt, independent of output size.
MAX_HITS = 48
_MAX_REMEMBERED = 4096  # anchors whose hits an output remembers
# How far the entity window may reach beyond the match when looking for the enclosing record.
RECORD_REACH = 400


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
            codes = fold_codes(self.decoded)
            space = codes == SPACE
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
        """Positions of an anchor in the folded text; None when there are more than MAX_HITS.

        Remembered per output: the bindings citing one output share most of their words.
        """
        if anchor in self._anchors:
            return self._anchors[anchor]
        found = tuple(islice(self.finds(anchor), MAX_HITS + 1))
        hits = found if len(found) <= MAX_HITS else None
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
