"""Quote fidelity: the rule-side reading of a binding's cached features (features.py, pieces.py).

Features say, without any threshold, how an excerpt sits in its output: the pieces it was found
as and the gaps between them, the words it holds that the output lacks anywhere, and the hunks
where it differs from the output. The functions here apply a rule's parameters (gap limit,
word-length limits, negation terms, antonym pairs, log levels) to those facts, so a tuner's edit
re-judges stored sessions without reading a tool output again.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from pipeline.core.feature_shapes import Hunk, ScoredHunk, SourceEntry, TargetFeatures
from pipeline.gatekeeper.folding import fold
from pipeline.text.primitives import is_cjk


def by_structure(source: SourceEntry, min_piece: int) -> bool:
    """Whether the excerpt was found in its output by structure: every segment one span of a
    record, or pieces split between adjacent records whose lightest weighs at least min_piece."""
    split = source.get("split", 0)
    return source.get("covered") == 1.0 and (split == 0 or split >= min_piece)


def effective_score(source: SourceEntry, name: str, min_piece: int) -> float:
    """A source's score as the similarity rule compares it: for the output, 1.0 when the excerpt
    is found by structure and 0.0 when it is not, whatever its similarity (a reordered or stitched
    quote is close to the output and still not the tool's own); a digest's texts by similarity."""
    if name == "output":
        return 1.0 if by_structure(source, min_piece) else 0.0
    score = source["score"]
    if score is None:  # the rules compare scored sources only
        raise TypeError(f"the {name} source has no score")
    return float(score)


def invented(feats: TargetFeatures, min_letters: int, min_cjk_run: int) -> list[str]:
    """The binding's words found nowhere in its cited outputs that are long enough to count."""
    out = []
    for piece in feats.get("invented", ()):
        if is_cjk(piece[0]):
            if len(piece) >= min_cjk_run:
                out.append(piece)
        elif sum(ch.isalpha() for ch in piece) >= min_letters:
            out.append(piece)
    return out


@lru_cache(maxsize=256)
def term_pattern(term: str) -> re.Pattern[str] | None:
    """A word-list entry as it is looked for in folded text: whole words for Latin, anywhere for CJK."""
    folded = fold(term)
    if not folded:
        return None
    escaped = re.escape(folded)
    if not is_cjk(folded[0]):
        escaped = r"(?<![a-z0-9])" + escaped
    if not is_cjk(folded[-1]):
        escaped += r"(?![a-z0-9])"
    return re.compile(escaped)


def _has(text: str, term: str) -> bool:
    pattern = term_pattern(term)
    return pattern is not None and pattern.search(text) is not None


def hunks(feats: TargetFeatures) -> list[ScoredHunk]:
    """The binding's hunks; features stored before version 2 only kept the excerpt's added words."""
    if "hunks" in feats:
        return list(feats["hunks"])
    return [{"ex": a["text"], "added": a["text"], "out": "", "gap": "", "score": a["score"]} for a in feats.get("added", ())]


def befores(feats: TargetFeatures) -> list[str]:
    return [b for b in feats.get("before", ()) if b]


def added_negations(hunk: Hunk, terms: tuple[str, ...]) -> Iterator[str]:
    for term in terms:
        if _has(hunk["added"], term) and not _has(hunk["out"], term):
            yield term


def dropped_negations(hunk: Hunk, terms: tuple[str, ...]) -> Iterator[str]:
    for term in terms:
        if _has(hunk["gap"], term) and not _has(hunk["ex"], term):
            yield term


def changed_number(hunk: Hunk) -> tuple[str, str] | None:
    """(excerpt number, output number) where the excerpt puts another bare number in the output's
    place (also numbers no entity pattern knows: an address part, a lag or a count). A number with
    a unit is the entity rule's: 5300ms and 5.3 秒 are one duration."""
    said = [t for t in hunk["added"].split(" ") if t.isdigit()]
    held = [t for t in hunk["gap"].split(" ") if t.isdigit()]
    if said and held and set(said) != set(held):
        return said[0], held[0]
    return None


def preceding_word(before: str) -> str:
    """The output's word right before a quote ("" when the quote starts inside a word); for
    Chinese, the two characters before it."""
    if before.endswith(" "):
        return before.rstrip().rsplit(" ", 1)[-1]
    if before and is_cjk(before[-1]):
        return before[-2:]
    return ""


# A quote opening with a field's key ("Merge_passes: 0", "user=alice") starts a field of its own:
# the word right before it is the previous field's value ("Filesort_on_disk: No"), said of that
# key, not a negation of the quote.
_OPENS_FIELD = re.compile(r"^\W*[A-Za-z_][\w.\-]*[ \t]*[:=](?!//)")


def opens_field(quote: str) -> bool:
    return _OPENS_FIELD.match(quote) is not None


def negation_before(word: str, terms: tuple[str, ...]) -> str | None:
    """A negation that directly precedes the quote in the output ("no" before "OutOfMemoryError detected")."""
    whole, tails = _negation_index(terms)
    if word in whole:
        return whole[word]
    for folded, term in tails:
        if word.endswith(folded):
            return term
    return None


@lru_cache(maxsize=32)
def _negation_index(terms: tuple[str, ...]) -> tuple[dict[str, str], tuple[tuple[str, str], ...]]:
    """Folded Latin terms (whole words) and folded Chinese ones (ending the two characters)."""
    whole: dict[str, str] = {}
    tails: list[tuple[str, str]] = []
    for term in terms:
        folded = fold(term)
        if folded and is_cjk(folded[-1]):
            tails.append((folded, term))
        elif folded:
            whole.setdefault(folded, term)
    return whole, tuple(tails)


def flipped(hunk: Hunk, pairs: tuple[tuple[str, str], ...]) -> tuple[str, str] | None:
    """(excerpt word, output word) of an antonym pair the hunk swaps (成功 where the output says 失败)."""
    ex, out = hunk["ex"], hunk["out"]
    for a, b in pairs:
        for said, held in ((a, b), (b, a)):
            if _has(ex, said) and not _has(out, said) and _has(out, held) and not _has(ex, held):
                return said, held
    return None


def changed_level(hunk: Hunk, others: list[str], levels: tuple[tuple[str, ...], ...]) -> tuple[str, str] | None:
    """(excerpt level, output level) when the excerpt adds a log level and the record says another.

    The record's level is looked for in what the chain stepped over and just before the quote.
    """
    said = _level_of(hunk["added"], levels)
    if said is None:
        return None
    for text in (hunk["gap"], *others):
        held = _level_of(text, levels, but=said[0])
        if held is not None and not _has(hunk["ex"], held[1]):
            return said[1], held[1]
    return None


_CAPITALS = re.compile(r"(?<![A-Za-z])[A-Z]{3,}(?![A-Za-z])")


def capitals(text: str) -> list[str]:
    """Words written in capitals (ERROR, WARN, GET): how a log level is written."""
    return _CAPITALS.findall(text)


def stated_level(said_caps: frozenset[str], record_caps: frozenset[str], levels: tuple[tuple[str, ...], ...],
                 groups: dict[str, int]) -> tuple[str, str] | None:
    """(excerpt level, record level) when the excerpt writes a log level in capitals and the
    records it was found in hold only levels of other groups (groups: capitals -> level group)."""
    said = {groups[w] for w in said_caps if w in groups}
    if not said:
        return None
    held = {groups[w]: w for w in record_caps if w in groups}
    if held and not said & held.keys():
        return levels[min(said)][0], min(held.values())
    return None


def _level_of(text: str, levels: tuple[tuple[str, ...], ...], but: int | None = None) -> tuple[int, str] | None:
    for group, words in enumerate(levels):
        if group == but:
            continue
        for word in words:
            if _has(text, word):
                return group, word
    return None
