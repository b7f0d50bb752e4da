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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.contracts import EvidenceDigest, ToolInvocation
from pipeline.gatekeeper.fidelity import capitals
from pipeline.gatekeeper.matcher import OutputCache, PreparedOutput, SegmentMatch, fold, locate, segments
from pipeline.gatekeeper.vocabulary import absent_pieces
from pipeline.text import EntityMatch, find_entities, normalize

FEATURES_VERSION = 3  # 3: found by structure (covered, split), records as lines; 2: hunks, invented words
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


def claim_bindings(structured: Any) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(claim index, binding index, binding) for every well-formed-enough claim binding."""
    if not isinstance(structured, dict) or not isinstance(structured.get("claims"), list):
        return
    for ci, claim in enumerate(structured["claims"]):
        if not isinstance(claim, dict) or not isinstance(claim.get("evidence_bindings"), list):
            continue
        for bi, binding in enumerate(claim["evidence_bindings"]):
            if isinstance(binding, dict):
                yield ci, bi, binding


def binding_target(ci: int, bi: int) -> str:
    return f"claims[{ci}].evidence_bindings[{bi}]"


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
    structured: Any,
    digests: list[EvidenceDigest] | None,
    cache: Mapping[str, dict[str, Any]] | None = None,
    outputs: OutputCache | None = None,
) -> dict[str, dict[str, Any]]:
    outputs = outputs or _shared_outputs
    cache = cache or {}
    features: dict[str, dict[str, Any]] = {ROOT: {"raw_keys": sorted(structured) if isinstance(structured, dict) else []}}
    by_digest = {d.digest_id: d for d in digests or []}
    for ci, bi, binding in claim_bindings(structured):
        excerpt = binding.get("evidence_excerpt")
        if not isinstance(excerpt, str) or not excerpt.strip():
            continue
        ids = [i for i in valid_ids(binding.get("source_invocation_ids")) if i in session_invocations]
        digest_id = binding.get("digest_id")
        digest = by_digest.get(digest_id) if isinstance(digest_id, str) else None
        key = _fingerprint(excerpt, ids, digest.source_quote if digest else None, digest.summary if digest else None)
        target = binding_target(ci, bi)
        cached = cache.get(target)
        if cached is not None and cached.get("key") == key:
            features[target] = cached
            continue
        features[target] = _binding_features(key, excerpt, ids, digest, session_invocations, outputs)
    for di, digest in enumerate(digests or []):
        ids = [i for i in valid_ids(digest.source_invocation_ids) if i in session_invocations]
        key = _fingerprint(digest.source_quote, ids, None, None)
        target = f"digests[{di}]"
        cached = cache.get(target)
        if cached is not None and cached.get("key") == key:
            features[target] = cached
            continue
        best = _best_match(digest.source_quote, ids, session_invocations, outputs)
        features[target] = {"key": key, "quote": _source_entry(best)}
    return features


def _fingerprint(excerpt: str, ids: list[int], quote: str | None, summary: str | None) -> str:
    blob = "\x1f".join([str(FEATURES_VERSION), excerpt, ",".join(map(str, ids)), quote or "", summary or ""])
    return hashlib.blake2b(blob.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def _best_match(
    text: str | list[tuple[str, str]], ids: list[int], invocations: Mapping[int, ToolInvocation], outputs: OutputCache
) -> tuple[int, PreparedOutput, ExcerptMatch] | None:
    best = None
    for inv_id in ids:
        prepared = outputs.get(inv_id, invocations[inv_id].output)
        found = match_excerpt(text, prepared)
        if best is None or found.score > best[2].score:
            best = (inv_id, prepared, found)
        if found.score == 1.0:
            break
    return best


def _source_entry(best: tuple[int, PreparedOutput, ExcerptMatch] | None) -> dict[str, Any]:
    if best is None:
        return {"score": None}
    inv_id, prepared, found = best
    span = found.span()
    return {
        "score": found.score,
        "covered": found.covered,
        "split": min((s.split for s in found.segments if s.split), default=0),
        "invocation_id": inv_id,
        "start": span[0] if span else None,
        "end": span[1] if span else None,
        "spans": [[s.start, s.end] for s in found.segments if s.start is not None],
        "raw_offsets": prepared.raw_offsets,
    }


def _binding_features(
    key: str,
    excerpt: str,
    ids: list[int],
    digest: EvidenceDigest | None,
    invocations: Mapping[int, ToolInvocation],
    outputs: OutputCache,
) -> dict[str, Any]:
    quotes = segments(excerpt)
    best = _best_match(quotes, ids, invocations, outputs)
    entry: dict[str, Any] = {"key": key, "sources": {"output": _source_entry(best)}}
    if digest is not None:
        for name, text in (("digest.source_quote", digest.source_quote), ("digest.summary", digest.summary)):
            entry["sources"][name] = {"score": match_excerpt(quotes, PreparedOutput.build(text), placed=False).score}
    if best is None:
        entry["entities"], entry["hunks"], entry["before"], entry["invented"], entry["other_match"] = [], [], [], [], None
        return entry
    _, prepared, found = best
    entry["entities"] = [m for seg in found.segments for m in _entity_misses(seg, prepared)]
    entry["hunks"] = [{**hunk, "score": seg.score} for seg in found.segments for hunk in seg.hunks]
    entry["before"] = [seg.before for seg in found.segments]
    entry["caps"] = _record_caps(found, prepared)
    entry["invented"] = _invented(found, ids, invocations, outputs)
    entry["other_match"] = _other_match(quotes, ids, found.score, invocations, outputs)
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
) -> dict[str, Any] | None:
    """Another invocation of this session that the excerpt matches better than the cited one."""
    if score == 1.0:
        return None
    best: dict[str, Any] | None = None
    for inv_id, inv in invocations.items():
        if inv_id in cited:
            continue
        found = match_excerpt(quotes, outputs.get(inv_id, inv.output), placed=False)
        if found.score > score and (best is None or found.score > best["score"]):
            best = {"invocation_id": inv_id, "tool_name": inv.tool_name, "score": found.score}
    return best


def _entity_misses(seg: SegmentMatch, prepared: PreparedOutput) -> list[dict[str, Any]]:
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
    misses = []
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
