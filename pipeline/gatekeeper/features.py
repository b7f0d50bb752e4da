"""Threshold-free facts about each evidence binding and digest, computed once and cached.

Everything here depends only on the executor output, the digests and the stored tool outputs,
never on a rule parameter: where an excerpt sits in its cited output, how similar it is, which
of its entities the matched record lacks, which words it added. Rules compare these facts with
thresholds, so a threshold change re-verdicts history from the cache without touching outputs.

Keys are target paths ("claims[0].evidence_bindings[1]", "digests[0]"); each entry carries a
fingerprint of its inputs, so a stale cache entry is recomputed rather than trusted.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.core.contracts import EvidenceDigest, ExecutorOutput, ToolInvocation, record_ids
from pipeline.core.feature_shapes import (
    EntityMiss,
    Features,
    OtherMatch,
    SourceEntry,
    TargetFeatures,
    binding_target,
    digest_target,
)
from pipeline.gatekeeper.fidelity import capitals
from pipeline.gatekeeper.folding import fold
from pipeline.gatekeeper.matcher import SegmentMatch, locate, segments
from pipeline.gatekeeper.prepared import OutputCache, PreparedOutput
from pipeline.gatekeeper.vocabulary import absent_pieces
from pipeline.text.primitives import EntityMatch, find_entities, normalize

FEATURES_VERSION = 5  # 5: the words before a quote are its record's only, a one-letter edge word cuts no longer word; 4: a JSON-per-line quote keeps its keys; 3: found by structure (covered, split), records as lines; 2: hunks, invented words
ROOT = "$"
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_MAX_NEARBY = 3
_MAX_INVENTED = 20
_MAX_CAPS = 24
_TOKEN_REACH = 40

_shared_outputs = OutputCache()


def prepare_output(invocation_id: int, output: str, outputs: OutputCache | None = None) -> PreparedOutput:
    """Fold and index an output as it is stored, so checking its bindings later finds it ready."""
    return (outputs or _shared_outputs).get(invocation_id, output, prepare=True)


def located_lines(invocation_id: int, output: str, spans: list[list[int]]) -> list[str]:
    """The lines of an output holding the decoded spans a quote was located at (a binding source's
    "spans"), in order, each once: what the verifier shows is where the gatekeeper found the quote."""
    decoded = _shared_outputs.get(invocation_id, output).decoded
    lines: list[str] = []
    for a, b in spans:
        lo, hi = decoded.rfind("\n", 0, a) + 1, decoded.find("\n", max(a, b - 1))
        for line in decoded[lo : hi if hi >= 0 else len(decoded)].split("\n"):
            if line.strip() and line not in lines:
                lines.append(line)
    return lines


def valid_ids(raw: Any) -> list[int]:
    """The integer ids of a source_invocation_ids value (bools are not ids)."""
    if type(raw) is not list:
        return []
    return [i for i in raw if type(i) is int]  # bool is a subclass of int, and not an id


@dataclass
class ExcerptMatch:
    score: float  # length-weighted over the excerpt's segments
    segments: list[SegmentMatch]

    @property
    def covered(self) -> float:
        """Length-weighted share of the excerpt found by structure (1.0: all of it)."""
        total = sum(len(s.folded) for s in self.segments)
        return round(sum(s.covered * len(s.folded) for s in self.segments) / total, 4) if total else 0.0

    def span(self) -> tuple[int, int] | None:
        placed = [s for s in self.segments if s.start is not None]
        if not placed:
            return None
        longest = max(placed, key=lambda s: len(s.folded))
        return longest.start, longest.end  # type: ignore[return-value]


def match_excerpt(excerpt: str | list[tuple[str, str]], prepared: PreparedOutput, *, placed: bool = True) -> ExcerptMatch:
    """The excerpt (or its segments, folded once by the caller) against one output."""
    quotes = segments(excerpt) if isinstance(excerpt, str) else excerpt
    parts = [locate(seg, prepared, needle, placed=placed) for seg, needle in quotes]
    total = sum(len(p.folded) for p in parts)
    score = sum(p.score * len(p.folded) for p in parts) / total if total else 0.0
    return ExcerptMatch(round(score, 4), parts)


def compute_features(
    session_invocations: Mapping[int, ToolInvocation],
    output: ExecutorOutput | None,
    digests: list[EvidenceDigest] | None,
    cache: Mapping[str, TargetFeatures] | None = None,
    outputs: OutputCache | None = None,
) -> Features:
    outputs = outputs or _shared_outputs
    cache = cache or {}
    features: Features = {ROOT: {"raw_keys": sorted(output.raw) if output is not None else []}}
    by_digest = {d.digest_id: d for d in digests or []}
    for ci, bi, binding in output.bindings() if output is not None else ():
        excerpt = binding.evidence_excerpt
        if excerpt is None or not excerpt.strip():
            continue
        ids = [i for i in binding.source_invocation_ids if i in session_invocations]
        cited = binding.source_record_ids
        digest = by_digest.get(binding.digest_id) if binding.digest_id is not None else None
        key = _fingerprint(excerpt, ids, digest.source_quote if digest else None, digest.summary if digest else None,
                           cited)
        target = binding_target(ci, bi)
        cached = cache.get(target)
        if cached is not None and cached.get("key") == key:
            features[target] = cached
            continue
        features[target] = _binding_features(key, excerpt, Cited.of(ids, cited), digest, session_invocations, outputs)
    for di, digest in enumerate(digests or []):
        ids = [i for i in valid_ids(digest.source_invocation_ids) if i in session_invocations]
        key = _fingerprint(digest.source_quote, ids, None, None, digest.source_record_ids)
        target = digest_target(di)
        cached = cache.get(target)
        if cached is not None and cached.get("key") == key:
            features[target] = cached
            continue
        where = Cited.of(ids, digest.source_record_ids)
        best = _best_match(digest.source_quote, where, session_invocations, outputs)
        features[target] = {"key": key, "quote": _source_entry(best, where, session_invocations, outputs)}
    return features


def _fingerprint(excerpt: str, ids: list[int], quote: str | None, summary: str | None, cited: Any) -> str:
    records = ",".join(map(str, cited)) if isinstance(cited, list) else ""
    blob = "\x1f".join([str(FEATURES_VERSION), excerpt, ",".join(map(str, ids)), quote or "", summary or "", records])
    return hashlib.blake2b(blob.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


@dataclass(frozen=True)
class Cited:
    """Where an excerpt is looked for: its invocations, and the records it cites in them (None:
    no record cited, the whole outputs; docs/spec.md#record-citations)."""

    ids: list[int]
    records: dict[int, list[int]] | None = None
    unread: tuple[str, ...] = ()  # citations that are not "<invocation id>#<record number>"

    @classmethod
    def of(cls, ids: list[int], raw: Any) -> Cited:
        if not isinstance(raw, list) or not raw:
            return cls(ids)
        records, unread = record_ids(raw)
        # A record of an invocation the binding does not cite is not where its quote may lie.
        unread += [f"{i}#{n}" for i, numbers in records.items() if i not in ids for n in numbers]
        return cls(ids, {i: numbers for i, numbers in records.items() if i in ids}, tuple(unread))


@dataclass
class Found:
    """The best match of an excerpt: the invocation, the prepared text it was matched in (the
    cited records alone, or the whole output) and the whole output, which offsets are kept in."""

    inv_id: int
    prepared: PreparedOutput
    match: ExcerptMatch
    whole: PreparedOutput

    def offset(self, pos: int) -> int:
        """A decoded offset in `prepared` as an offset in the whole output's text."""
        if self.prepared is self.whole:
            return pos
        sub = self.prepared
        i = int(np.searchsorted(sub.starts, pos, side="right")) - 1
        return int(self.whole.starts[sub.number(i)]) + pos - int(sub.starts[i])


def cited_records(whole: PreparedOutput, numbers: list[int]) -> PreparedOutput:
    """The cited records of an output as a prepared text of their own (numbers it lacks left out):
    checking a quote against them costs their size, not the output's."""
    count = len(whole.starts)
    present = [n for n in numbers if 0 <= n < count]
    lines = [whole.decoded[slice(*whole.record_span(n))] for n in present]
    starts, at = [], 0
    for line in lines:
        starts.append(at)
        at += len(line) + 1
    return PreparedOutput("", records=("\n".join(lines), starts, present))


def _best_match(
    text: str | list[tuple[str, str]], where: Cited, invocations: Mapping[int, ToolInvocation], outputs: OutputCache
) -> Found | None:
    best = None
    for inv_id in where.ids:
        whole = outputs.get(inv_id, invocations[inv_id].output)
        if where.records is not None:
            if inv_id not in where.records:
                continue
            prepared = cited_records(whole, where.records[inv_id])
        else:
            prepared = whole
        found = match_excerpt(text, prepared)
        if best is None or found.score > best.match.score:
            best = Found(inv_id, prepared, found, whole)
        if found.score == 1.0:
            break
    return best


def _source_entry(best: Found | None, where: Cited, invocations: Mapping[int, ToolInvocation],
                  outputs: OutputCache) -> SourceEntry:
    entry: SourceEntry = {"score": None}
    if best is not None:
        found = best.match
        span = found.span()
        entry = {
            "score": found.score,
            "covered": found.covered,
            "split": min((s.split for s in found.segments if s.split), default=0),
            "invocation_id": best.inv_id,
            "start": best.offset(span[0]) if span else None,
            "end": best.offset(span[1]) if span else None,
            "spans": [[best.offset(a), best.offset(b)] for s in found.segments for a, b in s.main],
            "raw_offsets": best.whole.raw_offsets,
        }
    if where.records is None:
        return entry
    if best is None and where.ids:
        # It cites records, none of them of its invocations: nothing there holds the quote.
        entry = {"score": 0.0, "covered": 0.0, "split": 0, "invocation_id": where.ids[0], "start": None,
                 "end": None, "spans": [], "raw_offsets": False}
    entry["records"] = {str(i): numbers for i, numbers in where.records.items()}
    shown = entry.get("invocation_id")
    if shown is not None and shown in where.records:
        # Where the cited records lie in the text the offsets index: Trace marks them.
        whole = outputs.get(shown, invocations[shown].output)
        entry["record_spans"] = [list(whole.record_span(n)) for n in where.records[shown] if n < len(whole.starts)]
    missing = [f"{i}#{n}" for i, numbers in where.records.items()
               for n in numbers if n >= len(outputs.get(i, invocations[i].output).starts)]
    if missing or where.unread:
        # A citation of a record that is not there is a forged reference, wherever the quote is.
        entry["missing"] = [*where.unread, *missing]
        entry["covered"] = 0.0
    if best is not None and best.match.covered < 1.0:
        # Not in the records it cites: say where in the output it is, if anywhere.
        quotes = [(seg.text, seg.folded) for seg in best.match.segments]
        elsewhere = _best_match(quotes, Cited(where.ids), invocations, outputs)
        if elsewhere is not None and elsewhere.match.covered == 1.0:
            whole = elsewhere.whole
            entry["found_in"] = {"invocation_id": elsewhere.inv_id,
                                 "records": sorted({whole.decoded_index(a) for seg in elsewhere.match.segments
                                                    for a, _ in seg.main})}
    return entry


def _binding_features(
    key: str,
    excerpt: str,
    where: Cited,
    digest: EvidenceDigest | None,
    invocations: Mapping[int, ToolInvocation],
    outputs: OutputCache,
) -> TargetFeatures:
    quotes = segments(excerpt)
    best = _best_match(quotes, where, invocations, outputs)
    sources: dict[str, SourceEntry] = {"output": _source_entry(best, where, invocations, outputs)}
    entry: TargetFeatures = {"key": key, "sources": sources}
    if digest is not None:
        for name, text in (("digest.source_quote", digest.source_quote), ("digest.summary", digest.summary)):
            sources[name] = {"score": match_excerpt(quotes, PreparedOutput.build(text), placed=False).score}
    if best is None:
        entry["entities"], entry["hunks"], entry["before"], entry["invented"], entry["other_match"] = [], [], [], [], None
        return entry
    prepared, found = best.prepared, best.match
    entry["entities"] = [m for seg in found.segments for m in _entity_misses(seg, prepared)]
    entry["hunks"] = [{**hunk, "score": seg.score} for seg in found.segments for hunk in seg.hunks]
    entry["before"] = [seg.before for seg in found.segments]
    entry["caps"] = _record_caps(found, prepared)
    entry["invented"] = _invented(found, where.ids, invocations, outputs)
    entry["other_match"] = _other_match(quotes, where.ids, found.score, invocations, outputs)
    return entry


def _record_caps(found: ExcerptMatch, prepared: PreparedOutput) -> list[str]:
    """Upper-case words (ERROR, WARN, GET, HTTP ...) of the records the quote was found in: a log
    level the excerpt states is checked against these, not against a neighbouring record's."""
    caps: set[str] = set()
    for seg in found.segments:
        for start, end in seg.main:
            lo, hi = prepared.record(start, end)
            caps.update(capitals(prepared.decoded[lo:hi]))
    return sorted(caps)[:_MAX_CAPS]


def _invented(found: ExcerptMatch, ids: list[int], invocations: Mapping[int, ToolInvocation], outputs: OutputCache) -> list[str]:
    """Excerpt words (Chinese: character runs) that none of the cited outputs holds anywhere."""
    if found.score == 1.0:
        return []  # every segment was found verbatim after folding
    vocabularies = [outputs.get(i, invocations[i].output).vocabulary for i in ids]
    return absent_pieces(" ".join(s.folded for s in found.segments if s.score < 1.0), vocabularies)[:_MAX_INVENTED]


def _other_match(
    quotes: list[tuple[str, str]],
    cited: list[int],
    score: float,
    invocations: Mapping[int, ToolInvocation],
    outputs: OutputCache,
) -> OtherMatch | None:
    """Another invocation of this session that the excerpt matches better than the cited one."""
    if score == 1.0:
        return None
    best: OtherMatch | None = None
    for inv_id, inv in invocations.items():
        if inv_id in cited:
            continue
        found = match_excerpt(quotes, outputs.get(inv_id, inv.output), placed=False)
        if found.score > score and (best is None or found.score > best["score"]):
            best = {"invocation_id": inv_id, "tool_name": inv.tool_name, "score": found.score}
    return best


def _entity_misses(seg: SegmentMatch, prepared: PreparedOutput) -> list[EntityMiss]:
    """Entities of an excerpt segment that the matched output record does not hold."""
    if seg.score == 1.0:
        # Equal after folding case, width, punctuation and spaces: every entity token is there.
        return []
    ents = find_entities(seg.text)
    if not ents:
        return []
    placed = seg.start is not None
    window = window_folded = ""
    if placed:
        # Confirm against the matched stretch (whole tokens), not the whole record: a record often
        # names two services, and the excerpt must quote the one where it matched.
        lo, hi = _token_bounds(prepared.decoded, seg.start, seg.end)  # type: ignore[arg-type]
        window = prepared.decoded[lo:hi]
        window_folded = f" {fold(window)} "
    seg_len = len(normalize(seg.text))
    # The cheap test first: an entity whose token the window holds as written is there. The
    # window's own entities (a dozen regex scans) are extracted only when some entity is not.
    unseen = []
    for ent in ents:
        token = fold(ent.token)
        at_edge = ent.start == 0 or ent.end >= seg_len
        if placed and token and (token in window_folded if at_edge else f" {token} " in window_folded):
            continue
        unseen.append((ent, token))
    if not unseen:
        return []
    window_ents = find_entities(window) if placed else ()
    # The record's entities are extracted only if the window holds none of a missed kind.
    record_ents: tuple[EntityMatch, ...] | None = None if placed else ()
    window_values = {(e.kind, e.value) for e in window_ents}
    window_numbers = {e.value for e in window_ents if e.kind == "number"}
    own_values = {e.value for e in ents}
    misses: list[EntityMiss] = []
    for ent, token in unseen:
        if placed:
            if (ent.kind, ent.value) in window_values:
                continue
            number = _NUMBER.search(ent.token)
            if ent.kind == "quantity" and number and _plain(number.group(0)) in window_numbers:
                continue
        nearby = [e.token for e in window_ents if e.kind == ent.kind and e.value not in own_values]
        if not nearby:
            if record_ents is None:
                rlo, rhi = prepared.record(seg.start, seg.end)  # type: ignore[arg-type]
                record_ents = find_entities(prepared.decoded[rlo:rhi])
            nearby = [e.token for e in record_ents if e.kind == ent.kind and e.value not in own_values]
        misses.append(
            {
                "kind": ent.kind,
                "token": ent.token,
                "value": ent.value,
                "elsewhere": prepared.contains(token),
                "nearby": list(dict.fromkeys(nearby))[:_MAX_NEARBY],
                "score": seg.score,
            }
        )
    return misses


def _token_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen a span to whole tokens (a match may start or end inside a number or a name)."""
    lo, hi = start, end
    floor, ceil = max(0, start - _TOKEN_REACH), min(len(text), end + _TOKEN_REACH)
    while lo > floor and _in_token(text[lo - 1]):
        lo -= 1
    while hi < ceil and _in_token(text[hi]):
        hi += 1
    return lo, hi


def _in_token(ch: str) -> bool:
    return ch.isalnum() or ch in "-_.%"


def _plain(number: str) -> str:
    value = float(number)
    return str(int(value)) if value.is_integer() else repr(value)
