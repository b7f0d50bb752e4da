"""The matching form of a text: how an output and an excerpt are compared.

A 1:1 character map folds case, full-width forms and punctuation (NFKC, lower case, anything not
alphanumeric -> space), so one output character is always one folded character and offsets
survive folding. Characters that only spell a number differently (a thousands separator, a
fraction's trailing zeros) are dropped on both sides. An output is folded with its offset map
(pipeline/gatekeeper/prepared.py); a short text such as an excerpt by `fold`, its runs collapsed.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import numpy as np

SPACE = 32  # what every character that is not alphanumeric folds to

@lru_cache(maxsize=1)
def _fold_table() -> np.ndarray:
    """Code point -> folded code point for the BMP: NFKC, lower case, non-alphanumerics -> space.

    One output character always maps to one character, so offsets survive folding.
    """
    table = np.empty(0x10000, dtype=np.uint32)
    for cp in range(0x10000):
        if 0xD800 <= cp <= 0xDFFF:
            table[cp] = SPACE
            continue
        folded = unicodedata.normalize("NFKC", chr(cp)).lower()
        ch = folded[0] if folded else " "
        table[cp] = ord(ch) if ch.isalnum() else SPACE
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


def fold_codes(text: str) -> np.ndarray:
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


def fold_plain(text: str) -> str:
    """A text folded character for character, without number canonicalisation or collapsed runs."""
    return _ASCII_NON_ALNUM.sub(" ", text.lower()) if text.isascii() else text.translate(_fold_dict())
