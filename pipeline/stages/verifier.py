"""Verifier V2 stage (docs/spec.md#verifier-payload): the payload, the call, and the scores derived from it.

The verifier judges claims against the tool outputs they cite, but a tool output can be 10 MB.
So the payload carries, per evidence binding, bounded *windows* of the cited output: the records
where the gatekeeper's matcher located the excerpt (or the digest's source_quote), as its features
store it, plus the records that mention the claim's own entities. An LLM verifier and the offline one read the same windows.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pipeline.core.contracts import (
    ClaimCheck,
    EvidenceDigest,
    ExecutorOutput,
    FactChecked,
    FactVerification,
    GatekeeperResult,
    ParseStatus,
    RetryContext,
    ToolInvocation,
    ToolTraceSummaryItem,
    VerifierOutput,
)
from pipeline.core.errors import StageFailure
from pipeline.core.feature_shapes import Features, TargetFeatures, binding_target, digest_target
from pipeline.core.messages import tr
from pipeline.gatekeeper.features import located_lines, match_excerpt, prepare_output
from pipeline.text.bounds import loads_bounded
from pipeline.text.primitives import (
    CLOCK_TIME,
    ELLIPSIS,
    Entity,
    clock_times,
    extract_entities,
    find_entities,
    in_order,
    normalize,
    quotations,
)
from pipeline.tools.results import read_result
from pipeline.verdict.context import StageContext
from pipeline.verdict.payload import (
    BindingFeatures,
    CitedBinding,
    CitedClaim,
    DigestEvidence,
    MissShown,
    Tally,
    VerifierPayload,
    Window,
)
from pipeline.verdict.policy import CRITICAL_TYPES, groundedness
from pipeline.verdict.provider import Verifies

FACT_VERIFICATION: dict[str, FactVerification] = {
    "direct_observation": "direct_evidence",
    "reasonable_inference": "indirect_support",
    "overstated": "indirect_support",
    "unsupported": "no_evidence",
    "external_unknown": "no_evidence",
    "contradicted": "contradicted",
}

# Window bounds: enough context for a judgement, never the whole output.
LINE_CHARS = 400
ANCHOR_LINES = 2
RELATED_LINES = 3
SUMMARY_CHARS = 1200
# Records counted as like the cited text (an output can hold millions): beyond, the count is a lower bound.
TALLY_RECORDS = 1000
# Records like the cited one shown for the values and times a claim lists ("orders 118, 123 and 131").
KIN_LINES = 12


# --- locating cited text in a tool output ---------------------------------------------------


def _records(output: str) -> list[str]:
    """The evidence records of one output, one line each (a packed runbook text by its lines)."""
    lines: list[str] = []
    for r in read_result(output).records:
        if r.kind == "pack":
            lines.extend(s for s in r.text.splitlines() if s.strip())
        elif r.line.strip():
            lines.append(r.line)
    return lines


@dataclass
class _Indexed:
    """One invocation's records, normalised once per payload build."""

    lines: list[str]
    norm_lines: list[str] = field(default_factory=list)
    joined: str = ""
    starts: list[int] = field(default_factory=list)
    # A multi-line record's later lines ("java.lang.NullPointerException: ...", a stack's "at ...")
    # name no writer: each maps to its record's first line, which does.
    heads: dict[str, str] = field(default_factory=dict)

    @classmethod
    def build(cls, inv: ToolInvocation) -> _Indexed:
        lines = _records(inv.output)
        norm_lines = [normalize(line) for line in lines]
        starts, pos = [], 0
        for n in norm_lines:
            starts.append(pos)
            pos += len(n) + 1
        heads = {later: head for line in lines if "\n" in line
                 for head, *rest in [line.split("\n")] for later in rest if later.strip()}
        return cls(lines=lines, norm_lines=norm_lines, joined="\n".join(norm_lines), starts=starts, heads=heads)

    @cached_property
    def levels(self) -> dict[str, int]:
        """How many records the output holds, in all ("all") and by the level each states first."""
        found = Counter(m.group(1).upper() for line in self.lines for m in [_LEVEL.search(line)] if m)
        return {"all": len(self.lines), **found}

    def whole(self, needle: str) -> bool:
        """Whether the cited text (normalised) is one record's whole line."""
        hit = self.occurrences(needle, limit=1)
        return bool(hit) and self.norm_lines[hit[0]] == needle

    def alike(self, needle: str, whole: bool) -> tuple[list[int], bool]:
        """The records like the cited text (normalised), at most TALLY_RECORDS of them, and whether
        that bound was reached: those of a cited whole record's shape, else those holding each piece
        of the quote in order (a glob's "*" and a cut's "..." stand for anything)."""
        if whole:
            return self._of_shape(needle, record_shape)
        pieces = [p.strip() for p in _GLOB.split(needle) if p.strip()]
        if not pieces:
            return [], False
        candidates = self.occurrences(max(pieces, key=len), limit=TALLY_RECORDS)
        return [i for i in candidates if in_order(pieces, self.norm_lines[i])], len(candidates) == TALLY_RECORDS

    def coarse(self, needle: str) -> int | None:
        """How many records share a cited whole record's shape once its paths and methods are let go
        too ("upstream order-service 500 on GET /api/orders/history" and "... on POST /api/orders":
        the 50 500s a writer counts together); None when the count reached the bound."""
        found, capped = self._of_shape(needle, _coarse)
        return None if capped else len(found)

    def _of_shape(self, needle: str, shape_of: Callable[[str], str]) -> tuple[list[int], bool]:
        """The records whose shape (`shape_of`) is a whole record's, and whether the bound was reached.
        Only the lines holding its longest piece are read: a bounded scan, whatever the output's size."""
        shape = shape_of(needle)
        pieces = [p.strip() for p in shape.split("#") if p.strip()]
        if not pieces:
            return [], False
        candidates = self.occurrences(max(pieces, key=len), limit=TALLY_RECORDS)
        return [i for i in candidates if shape_of(self.norm_lines[i]) == shape], len(candidates) == TALLY_RECORDS

    def occurrences(self, needle: str, limit: int = 200) -> list[int]:
        """Line indexes whose normalised text contains `needle` (already normalised)."""
        found: list[int] = []
        if not needle:
            return found
        pos = self.joined.find(needle)
        while pos != -1 and len(found) < limit:
            idx = bisect_right(self.starts, pos) - 1
            if not found or found[-1] != idx:
                found.append(idx)
            pos = self.joined.find(needle, self.starts[idx] + len(self.norm_lines[idx]) + 1)
        return found


_LEVEL = re.compile(r"\b(ERROR|WARN|WARNING|INFO|DEBUG|FATAL|CRITICAL)\b")
# A word holding a digit: a time, an id, a host, a value. A record's shape is its other words.
_DIGIT_WORD = re.compile(r"\S*\d\S*")
_GLOB = re.compile(rf"{ELLIPSIS.pattern}|\*")


def record_shape(norm_line: str) -> str:
    """What records of one kind share (a normalised line): the prose reader binds a count to the kind it counts."""
    return _DIGIT_WORD.sub("#", norm_line)


_ROUTE_WORD = re.compile(r"(?<!\S)(?:/\S*|get|post|put|patch|delete|head|options)(?!\S)")


def _coarse(norm_line: str) -> str:
    return re.sub(r"#(?:\s+#)+", "#", _ROUTE_WORD.sub("#", record_shape(norm_line)))


def _tally(idx: _Indexed, alike: list[int], capped: bool, claim_text: str) -> Tally:
    by_instance: Counter[str] = Counter()
    by_instance_in_span: Counter[str] = Counter()
    span = _span(claim_text)
    in_span = 0
    for i in alike:
        instances = [ent.value for ent in extract_entities(idx.lines[i]) if ent.kind == "instance"]
        by_instance.update(instances)
        at = _SECONDS_AT.search(idx.norm_lines[i])
        if span is not None and at is not None and span[0] <= _seconds(at) <= span[1]:
            in_span += 1
            by_instance_in_span.update(instances)
    tally: Tally = {"records": len(alike), "capped": capped, "by_instance": dict(by_instance), "levels": idx.levels}
    if span is not None:
        tally["in_span"] = in_span
        tally["by_instance_in_span"] = dict(by_instance_in_span)
    return tally


# A record's time of day ("T16:20:48.164Z"); a claim's span from its own times: two bound it, one
# with "from"/"起" opens it, with "to"/"到" closes it; a time to the minute covers its minute.
_SECONDS_AT = re.compile(r"(?<!\d)(\d{1,2}):(\d{2})(?::(\d{2}))?(?!\d)")
_OPENS = re.compile(r"\b(?:from|since|after|starting)\s*$|(?:从|自)\s*$")
_CLOSES = re.compile(r"\b(?:to|until|till|up to|before|by)\s*$|(?:到|至)\s*$")


def _seconds(m: re.Match[str]) -> int:
    return int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3) or 0)


def _span(claim_text: str) -> tuple[int, int] | None:
    norm = normalize(claim_text)
    times = [(m, _seconds(m), _seconds(m) + (59 if m.group(3) is None else 0)) for m in _SECONDS_AT.finditer(norm)]
    if len(times) >= 2:
        return min(t[1] for t in times), max(t[2] for t in times)
    if len(times) == 1:
        m, low, high = times[0]
        before, after = norm[:m.start()], norm[m.end():]
        if _OPENS.search(before) or re.match(r"\s*(?:起|以来|之后|onwards?|on\b)", after):
            return low, 24 * 3600
        if _CLOSES.search(before) or re.match(r"\s*(?:为止|之前)", after):
            return 0, high
    return None


def _listed(claim_text: str) -> list[re.Pattern[str]]:
    """The values and clock times a claim names, each as a pattern a record holds it by (a number
    not inside a longer one: 123 is not in 1234 or 0.123)."""
    norm = normalize(claim_text)
    values = [e.value for e in find_entities(CLOCK_TIME.sub(" ", norm)) if e.kind != "service"]
    # A quantity is searched by its number: the record may write "850ms" where the claim reads "0.85 s".
    values = [re.sub(r"[^\d.]", "", v) if v[:1].isdigit() else v for v in values]
    return [re.compile(rf"(?<![\d.]){re.escape(v)}(?!\d|\.\d)")
            for v in dict.fromkeys(values + sorted(clock_times(norm)))]


def _kin(idx: _Indexed, alike: list[int], anchor_lines: list[str], claim_text: str) -> list[int]:
    """For each value or time the claim lists that its anchor lacks, the first record like the cited
    one that holds it: "ERR_TIMEOUT hit orders 118, 123 and 131", "at 19:46, 20:00 and 20:15" name
    several records of one kind, where the anchor is one of them."""
    shown = normalize("\n".join(anchor_lines))
    kin: list[int] = []
    for held in _listed(claim_text):
        if held.search(shown):
            continue
        at = next((i for i in alike if held.search(idx.norm_lines[i])), None)
        if at is not None and at not in kin:
            kin.append(at)
        if len(kin) >= KIN_LINES:
            break
    return kin


def _clip(line: str, needle: str) -> str:
    """At most LINE_CHARS of a line, or the quote's extent and a margin, from a third of that
    before where `needle` sits in it: a quote of a long stack-trace line is shown whole, and one
    cut with "..." from its first piece to its last."""
    if len(line) <= LINE_CHARS:
        return line
    norm = normalize(line)
    pieces = [p.strip() for p in ELLIPSIS.split(needle) if p.strip()]
    at = norm.find(pieces[0]) if pieces else -1
    last = norm.find(pieces[-1], at) if at >= 0 else -1
    extent = (last + len(pieces[-1]) - at) if last >= 0 else len(needle)
    width = max(LINE_CHARS, extent + LINE_CHARS // 2)
    if len(line) <= width:
        return line
    start = max(0, min(at - LINE_CHARS // 3, len(line) - width)) if at >= 0 else 0
    text = line[start : start + width]
    return ("…" if start else "") + text + ("…" if start + width < len(line) else "")


def _claim_needles(claim_text: str) -> list[str]:
    """Literal strings to look for when gathering records that mention the claim's entities."""
    needles = []
    # In the claim's reading order: which related lines a window shows must not depend on the
    # process's string hashing (over a set, a hypothesis was judged on other evidence run to run).
    for ent in dict.fromkeys(Entity(m.kind, m.value) for m in find_entities(claim_text)):
        if ent.kind == "number":
            continue  # a bare number matches timestamps everywhere; it is checked, not searched
        needles.append(ent.value.rstrip("s") if ent.kind == "quantity" else ent.value)
    return needles


def _window(idx: _Indexed, inv: ToolInvocation, cited: str, claim_text: str, located: Located) -> Window:
    """The records of one output that show the cited text, where the gatekeeper's matcher located
    it (`located`), and the records naming the claim's entities."""
    needle = normalize(cited)
    found, anchor_lines = located
    related: list[int] = []
    for lit in _claim_needles(claim_text):
        for i in idx.occurrences(lit, limit=50):
            if idx.lines[i] in anchor_lines or i in related:
                continue
            if set(extract_entities(idx.lines[i])) & set(extract_entities(claim_text)):
                related.append(i)
                break
        if len(related) >= RELATED_LINES:
            break
    whole = idx.whole(needle)
    alike, capped = idx.alike(needle, whole)
    tally = _tally(idx, alike, capped, claim_text)
    coarse = idx.coarse(needle) if whole else None
    if coarse is not None and coarse != tally["records"]:
        tally["coarse"] = coarse
    return {
        "invocation_id": inv.id,
        "tool_name": inv.tool_name,
        "status": inv.status,
        "available": True,
        "found": found,
        # A quote of a record's later line is shown with the record's first line: who wrote it.
        "anchor": [_clip(line, needle) if line not in idx.heads else f"{_clip(idx.heads[line], '')}\n{_clip(line, needle)}"
                   for line in anchor_lines],
        "related": [_clip(idx.lines[i], "") for i in related],
        "tally": tally,
        "kin": [_clip(idx.lines[i], "") for i in _kin(idx, alike, anchor_lines, claim_text)],
        "record_count": len(idx.lines),
    }


Located = tuple[bool, list[str]]  # (found by structure, the lines holding it or, when it is not there, its nearest window)
_LOCATED_LINES = 2 * ANCHOR_LINES  # a quote over adjacent records, or cut by "...", shows each of its lines


def _stored_location(source: object, inv: ToolInvocation) -> Located | None:
    """Where the gatekeeper's matcher located a quote in this invocation, as its features store it
    (a binding's output source, a digest's quote), so the verifier reads the quote where the
    gatekeeper judged it. "Found" is the gatekeeper's (by structure, in the records the quote
    cites); None when the gatekeeper did not judge the quote against this invocation."""
    if not isinstance(source, dict) or source.get("invocation_id") != inv.id:
        return None
    lines = located_lines(inv.id, inv.output, source.get("spans") or [])[:_LOCATED_LINES]
    return source.get("covered") == 1.0, lines


def _location(source: object, inv: ToolInvocation, text: str) -> Located:
    """The stored location, else the same matcher run on this output: a quote whose best match the
    gatekeeper kept in another cited output, or features written before digests' quotes were placed."""
    stored = _stored_location(source, inv)
    if stored is not None:
        return stored
    found = match_excerpt(text, prepare_output(inv.id, inv.output))
    spans = [[a, b] for seg in found.segments for a, b in seg.main]
    return found.covered == 1.0, located_lines(inv.id, inv.output, spans)[:_LOCATED_LINES]


def _source(feat: object, *path: str) -> object:
    """The value at `path` in a features mapping, None where a level is missing or not a mapping."""
    for key in path:
        feat = feat.get(key) if isinstance(feat, dict) else None
    return feat


def build_payload(
    *,
    question: str,
    raw_output: str,
    parse_status: ParseStatus,
    structured: ExecutorOutput | None,
    invocations: list[ToolInvocation],
    digests: list[EvidenceDigest] | None,
    gatekeeper_result: GatekeeperResult,
    retry_context: RetryContext | None,
    features: Features | None = None,
) -> VerifierPayload:
    """The docs/spec.md#verifier-payload payload plus `evidence_digests` (split shape), `cited_evidence` and
    `digest_evidence` (bounded windows of the cited outputs).

    `features` are the gatekeeper's threshold-free measurements keyed by binding path
    ("claims[0].evidence_bindings[1]"); a compact view of each (similarity per source, entity
    misses, a better match in another invocation) rides on its binding, so the verifier sees
    what the gatekeeper measured.
    """
    by_id = {inv.id: inv for inv in invocations}
    digest_by_id = {d.digest_id: d for d in digests or []}
    digest_index = {d.digest_id: i for i, d in enumerate(digests or [])}
    indexed: dict[int, _Indexed] = {}

    def index(inv_id: int) -> _Indexed | None:
        if inv_id not in by_id:
            return None
        if inv_id not in indexed:
            indexed[inv_id] = _Indexed.build(by_id[inv_id])
        return indexed[inv_id]

    cited_lines: dict[int, list[str]] = {}
    cited_evidence: list[CitedClaim] = []
    valid = structured if parse_status.status == "valid" else None
    # Written positions: claim_index and the features' "claims[i].evidence_bindings[j]" name the
    # same element as the gatekeeper's targets, malformed elements before it included.
    for ci, claim in enumerate(valid.claims if valid is not None else ()):
        if not claim.written_as_object:
            continue
        claim_text = claim.claim_text or ""
        bindings_out: list[CitedBinding] = []
        for bi, binding in enumerate(claim.evidence_bindings or ()):
            if not binding.written_as_object:
                continue
            path = binding_target(ci, bi)
            feat = features.get(path) if features else None
            excerpt = binding.evidence_excerpt or ""
            digest = digest_by_id.get(binding.digest_id) if binding.digest_id else None
            windows: list[Window] = []
            for inv_id in binding.source_invocation_ids:
                idx = index(inv_id)
                if idx is None:
                    windows.append({"invocation_id": inv_id, "available": False})
                    continue
                inv = by_id[inv_id]
                win = _window(idx, inv, excerpt, claim_text, _location(_source(feat, "sources", "output"), inv, excerpt))
                if not win["found"] and digest is not None and digest.source_quote:
                    quote = _source(features, digest_target(digest_index[digest.digest_id]), "quote")
                    win = _window(idx, inv, digest.source_quote, claim_text, _location(quote, inv, digest.source_quote))
                cited_lines.setdefault(inv_id, []).extend(win["anchor"])
                windows.append(win)
            entry: CitedBinding = {
                "binding_index": bi,
                "tool_name": binding.tool_name,
                "source_invocation_ids": binding.source_invocation_ids,
                "digest_id": binding.digest_id,
                "evidence_excerpt": excerpt,
                "digest": (
                    {"summary": digest.summary, "source_quote": digest.source_quote} if digest else None
                ),
                "windows": windows,
            }
            if isinstance(feat, dict):
                entry["gatekeeper_features"] = _compact_features(feat)
            bindings_out.append(entry)
        cited_evidence.append(
            {
                "claim_id": claim.claim_id,
                "claim_index": ci,
                "claim_type": claim.claim_type,
                "support_level": claim.support_level,
                "claim_text": claim_text,
                "bindings": bindings_out,
            }
        )

    # A hypothesis's basis quoting a record no claim cites ("the evidence “Redis内存使用率过高: 98.0%”
    # fits this pattern"): the record is shown in its output's summary, or the basis reads as invented.
    for hyp in valid.hypotheses if valid is not None else ():
        for quote in (normalize(q) for q in quotations(hyp.basis or "") if len(q) >= 12):
            for inv_id in by_id:
                idx = index(inv_id)
                hits = idx.occurrences(quote, limit=1) if idx is not None else []
                if hits and idx is not None:
                    cited_lines.setdefault(inv_id, []).append(_clip(idx.lines[hits[0]], quote))
                    break

    digest_evidence: list[DigestEvidence] = []
    for di, d in enumerate(digests or []):
        windows = []
        quote = _source(features, digest_target(di), "quote")
        for inv_id in d.source_invocation_ids:
            idx = index(inv_id)
            if idx is None:
                windows.append({"invocation_id": inv_id, "available": False})
                continue
            win = _window(idx, by_id[inv_id], d.source_quote, d.summary, _location(quote, by_id[inv_id], d.source_quote))
            windows.append(win)
        digest_evidence.append({"digest_id": d.digest_id, "windows": windows})

    payload: VerifierPayload = {
        "original_query": question,
        "executor_raw_output": raw_output,
        "executor_final_answer": raw_output,  # deprecated alias (docs/spec.md#verifier-payload, docs/spec.md#facts-checked)
        "executor_structured_output": valid.raw if valid is not None else None,
        "executor_output_parse_status": parse_status.model_dump(),
        "tool_trace_summary": [
            item.model_dump() for item in _trace_summary(invocations, cited_lines, index)
        ],
        "gatekeeper_result": gatekeeper_result.model_dump(),
        "retry_context": retry_context.model_dump() if retry_context else None,
        "cited_evidence": cited_evidence,
    }
    if digests is not None:
        payload["evidence_digests"] = [d.model_dump() for d in digests]
        payload["digest_evidence"] = digest_evidence
    return payload


def _compact_features(feat: TargetFeatures) -> BindingFeatures:
    """The judgement-relevant part of a binding's gatekeeper features (no offsets or spans)."""
    sources = feat.get("sources") or {}
    misses: list[MissShown] = [
        {"kind": m.get("kind"), "value": m.get("value"), "nearby": m.get("nearby"), "elsewhere": m.get("elsewhere")}
        for m in feat.get("entities") or []
    ]
    return {
        "similarity": {name: (src or {}).get("score") for name, src in sources.items()},
        "entity_misses": misses,
        "better_match_elsewhere": feat.get("other_match"),
    }


def _trace_summary(
    invocations: Sequence[ToolInvocation], cited_lines: Mapping[int, list[str]], index: Any
) -> list[ToolTraceSummaryItem]:
    items = []
    for inv in invocations:
        lines = list(dict.fromkeys(cited_lines.get(inv.id, [])))
        if not lines and inv.status == "ok":
            lines = [_clip(line, "") for line in index(inv.id).lines[:3]]
        if inv.status == "error":
            lines = [f"error: {inv.error or inv.output[:200]}"]
        text = "\n".join(lines)
        if len(text) > SUMMARY_CHARS:
            text = text[:SUMMARY_CHARS] + "…"
        if inv.status == "ok":
            text = f"[{len(index(inv.id).lines)} records] {text}"
        items.append(
            ToolTraceSummaryItem(
                invocation_id=inv.id, tool_name=inv.tool_name, status=inv.status, output_summary=text
            )
        )
    return items


# --- scores and compatibility records ---------------------------------------------------------


def facts_checked(claim_checks: list[ClaimCheck], structured: ExecutorOutput | None) -> list[FactChecked]:
    """docs/spec.md#facts-checked: the legacy facts_checked list, derived from claim_checks only."""
    claims = {c.key: c for c in structured.claim_objects()} if structured is not None else {}
    facts = []
    for check in claim_checks:
        claim = claims.get(check.claim_id)
        facts.append(
            FactChecked(
                fact=f"{check.claim_id}: {(claim.claim_text if claim else None) or ''}",
                verification=FACT_VERIFICATION[check.verification],
                is_critical=claim is not None and claim.claim_type in CRITICAL_TYPES,
                evidence_refs=check.evidence_refs,
            )
        )
    return facts


# --- the stage ---------------------------------------------------------------------------------

def _fallback(rationale: str) -> VerifierOutput:
    return VerifierOutput(verdict="LOW_CONFID", groundedness_score=0.0, rationale=rationale)


def run_verifier(
    ctx: StageContext, provider: Verifies, payload: VerifierPayload, output: ExecutorOutput | None
) -> VerifierOutput:
    """Call the verifier unless there is nothing structured to verify (docs/spec.md#parse-status);
    `payload` is build_payload's for `output`.

    The returned output is normalised in code: a claim the verifier skipped gets an explicit
    `unsupported` check, checks for claims that do not exist are dropped, and
    groundedness_score is recomputed with `pipeline.verdict.policy.groundedness` from the claim_checks.
    """
    status = payload.get("executor_output_parse_status") or {}
    if status.get("status") != "valid":
        return _fallback(tr("verifier.parse", ctx.language, status=status.get("status", "missing"),
                                   detail=status.get("detail", "")))
    try:
        raw = provider.verify(ctx, payload)
        out = raw if isinstance(raw, VerifierOutput) else VerifierOutput.model_validate(
            loads_bounded(raw) if isinstance(raw, str) else raw
        )
    except StageFailure as exc:
        return _fallback(tr("verifier.failure", ctx.language, error=str(exc)))
    except (ValueError, TypeError) as exc:  # pydantic ValidationError is a ValueError
        unusable = f"unusable verifier output ({type(exc).__name__}: {str(exc)[:200]})"
        return _fallback(tr("verifier.failure", ctx.language, error=unusable))

    claims = output.claim_objects() if output is not None else []
    known = [c.key for c in claims]
    checks = [c for c in out.claim_checks if c.claim_id in known]
    seen = {c.claim_id for c in checks}
    checks += [
        ClaimCheck(claim_id=cid, verification="unsupported", detail=tr("verifier.no_check", ctx.language))
        for cid in known
        if cid not in seen
    ]
    return out.model_copy(update={"claim_checks": checks, "groundedness_score": groundedness(checks, claims)})
