"""The shapes of the gatekeeper's stored features, and the targets they are keyed by.

pipeline.gatekeeper.features computes them once per binding and digest; the rules, the fidelity
checks, the verifier's payload and the read side (pipeline.store.record validates them there)
read them. They sit apart from the computation so that what reads a feature needs nothing of how
it was found, and this is their one definition.
"""

from __future__ import annotations

import re
from typing import Required, TypeAlias

# pydantic validates these where the store is read, and on Python 3.11 only typing_extensions'
# TypedDict carries what it needs for that.
from typing_extensions import TypedDict

# Targets name an element by its written position in the executor output, malformed elements
# before it included, so a finding, a feature and a check of the same element share one key.
_TARGET = re.compile(r"^claims\[(\d+)\](?:\.evidence_bindings\[(\d+)\])?")


def claim_target(ci: int) -> str:
    return f"claims[{ci}]"


def binding_target(ci: int, bi: int) -> str:
    return f"{claim_target(ci)}.evidence_bindings[{bi}]"


def digest_target(di: int) -> str:
    return f"digests[{di}]"


def parse_target(target: str) -> tuple[int, int | None] | None:
    """The claim and binding a target lies in ("claims[2].evidence_bindings[0]" -> (2, 0),
    "claims[1].claim_text" -> (1, None)); None for a target outside the claims."""
    m = _TARGET.match(target)
    return (int(m.group(1)), int(m.group(2)) if m.group(2) is not None else None) if m else None


class FoundIn(TypedDict):
    """Where a quote not in the records it cites lies in its output after all."""

    invocation_id: int
    records: list[int]


class SourceEntry(TypedDict, total=False):
    """How an excerpt (or a digest's quote) matches one compared source. The output's entry says
    where; a digest text's holds its score alone."""

    score: Required[float | None]  # None: nothing to compare against
    covered: float  # share found by structure (1.0: all of it)
    split: int  # found split between records: the weight of its lightest piece (0: one span)
    invocation_id: int
    start: int | None  # decoded span of the longest placed segment in the whole output
    end: int | None
    spans: list[list[int]]  # decoded spans carrying the quote
    raw_offsets: bool  # the offsets also index the raw output text
    records: dict[str, list[int]]  # the records it cites, by invocation id
    record_spans: list[list[int]]  # where the cited records lie in the text the offsets index
    missing: list[str]  # citations of records that are not there
    found_in: FoundIn


class OtherMatch(TypedDict):
    """Another invocation of the session that the excerpt matches better than the cited one."""

    invocation_id: int
    tool_name: str
    score: float


class EntityMiss(TypedDict):
    """An entity of an excerpt segment that its matched record does not hold."""

    kind: str
    token: str
    value: str
    elsewhere: bool  # the output holds it somewhere else
    nearby: list[str]  # entities of that kind the record holds instead
    score: float  # the segment's score


class Hunk(TypedDict):
    """One junction where an excerpt and its output differ (each text clipped to MAX_HUNK_CHARS)."""

    ex: str  # the excerpt around the junction
    added: str  # what the excerpt has there that the output does not
    out: str  # the output around the junction
    gap: str  # what the output has there that the excerpt skips


class ScoredHunk(Hunk):
    """A hunk as a binding's features keep it: with the score of the segment it was found in."""

    score: float


class AddedWord(TypedDict):
    """An excerpt word the output lacks, as features stored before version 2 kept them (no hunks)."""

    text: str
    score: float


class TargetFeatures(TypedDict, total=False):
    """What the gatekeeper measured for one target, threshold-free. A binding's entry holds
    `sources` and the match facts, a digest's its `quote`, the root's ("$") the output's keys."""

    key: str  # fingerprint of what it was computed from: an equal key reuses the entry
    raw_keys: list[str]  # "$" only: the top-level keys the executor output was written with
    sources: dict[str, SourceEntry]  # "output", and a digest's "digest.source_quote" / "digest.summary"
    entities: list[EntityMiss]
    hunks: list[ScoredHunk]
    added: list[AddedWord]  # before version 2, in place of hunks
    before: list[str]  # the output's text just before each segment
    caps: list[str]  # upper-case words of the records the quote was found in
    invented: list[str]  # excerpt words none of the cited outputs holds
    other_match: OtherMatch | None
    quote: SourceEntry  # digests[i]: where its source_quote sits


def source_score(feats: TargetFeatures, name: str = "output") -> float | None:
    """A binding's similarity to one of its sources; None when there was nothing to compare."""
    source = feats.get("sources", {}).get(name)
    return None if source is None else source["score"]


# A session's features, by target (claim_target, binding_target, digest_target, or "$").
Features: TypeAlias = dict[str, TargetFeatures]
