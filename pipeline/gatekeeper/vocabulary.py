"""Which words an output holds anywhere: the test for invented content in an excerpt.

An excerpt that quotes a tool output can rearrange, elide and reformat, but every content word
it uses comes from that output. The vocabulary of a folded output answers "does this word occur
anywhere?" without a scan: Latin-script words as a sorted list (a word counts when it starts an
output word, so "timeout" is found in "timeouts"), Chinese as the set of its character pairs (no
word segmentation needed: a run of excerpt characters whose pairs are all absent was not copied).
"""

from __future__ import annotations

import re
from bisect import bisect_left

from pipeline.text.primitives import CJK_IDEOGRAPHS, CJK_RUN

_NON_CJK_RUN = re.compile(f"[^\\s{CJK_IDEOGRAPHS}]+")


class Vocabulary:
    """Words and Chinese character pairs of one folded text."""

    def __init__(self, folded: str) -> None:
        words: set[str] = set()
        pairs: set[str] = set()
        chars: set[str] = set()
        for token in set(folded.split(" ")):
            if token.isascii():
                words.add(token)
                continue
            words.update(_NON_CJK_RUN.findall(token))
            for run in CJK_RUN.findall(token):
                chars.update(run)
                pairs.update(run[i : i + 2] for i in range(len(run) - 1))
        words.discard("")
        self._exact = words
        self._words = sorted(words)
        self._pairs = pairs
        self._chars = chars

    def has_word(self, word: str) -> bool:
        at = bisect_left(self._words, word)
        return at < len(self._words) and self._words[at].startswith(word)

    def has_exact(self, word: str) -> bool:
        """Whether the word is a whole output word (glued to Chinese at most)."""
        return word in self._exact

    def has_pair(self, pair: str) -> bool:
        return pair in self._pairs

    def has_char(self, ch: str) -> bool:
        return ch in self._chars


def absent_pieces(folded_excerpt: str, vocabularies: list[Vocabulary]) -> list[str]:
    """Pieces of a folded excerpt that none of the outputs holds: Latin words with a letter (a
    bare number is the entity rule's), and runs of Chinese characters none of whose pairs occur.

    A Chinese character counts as copied when a pair it belongs to occurs (or, alone between
    non-Chinese text, when the character does), so joining two copied records never invents.
    """
    found: list[str] = []
    for token in folded_excerpt.split(" "):
        for word in _NON_CJK_RUN.findall(token) if not token.isascii() else (token,):
            if word and not word.isdigit() and not any(v.has_word(word) for v in vocabularies):
                found.append(word)
        if token.isascii():
            continue
        for run in CJK_RUN.findall(token):
            found.extend(_uncovered(run, vocabularies))
    return list(dict.fromkeys(found))


def _uncovered(run: str, vocabularies: list[Vocabulary]) -> list[str]:
    if len(run) == 1:
        return [] if any(v.has_char(run) for v in vocabularies) else [run]
    covered = [False] * len(run)
    for i in range(len(run) - 1):
        if any(v.has_pair(run[i : i + 2]) for v in vocabularies):
            covered[i] = covered[i + 1] = True
    pieces, start = [], None
    for i, ok in enumerate([*covered, True]):
        if not ok and start is None:
            start = i
        elif ok and start is not None:
            pieces.append(run[start:i])
            start = None
    return pieces
