"""Read models for the workbench: what each page shows, computed from stored sessions.

The pages only draw what these functions return, so everything a reviewer sees (which
gatekeeper error belongs to which claim, where an excerpt sits in its output, what the review
queue's charts count) is also reachable from the library and tested without a browser.
Nothing here produces HTML: highlight windows are plain (text, kind) segments and the UI
escapes them.
"""

from __future__ import annotations

import bisect
import difflib
import io
import itertools
import json
import re
import typing
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from sqlalchemy import select

from pipeline.core.config import Settings
from pipeline.core.contracts import (
    ClaimCheck,
    ComposerAction,
    ComposerGuardResult,
    ComposerHypothesis,
    DigestCheck,
    EvidenceDigest,
    GatekeeperError,
    GatekeeperResult,
    HypothesisCheck,
    RoundAudit,
    Verdict,
    VerdictImpact,
)
from pipeline.core.errors import RulesError
from pipeline.core.messages import Message, render
from pipeline.gatekeeper.features import binding_target
from pipeline.gatekeeper.kinds import Severity
from pipeline.gatekeeper.matcher import fold, record_text
from pipeline.gatekeeper.rules_schema import (
    INDEX_FILE,
    METADATA_FILE,
    RuleSet,
    RuleSpec,
    load_rules_from_text,
    parse_rules_yaml,
)
from pipeline.runs.record import (
    BindingFeatures,
    EntityMiss,
    OtherMatch,
    ReviewRecord,
    SessionRecord,
    SourceMatch,
    WrittenBinding,
    WrittenClaim,
    read_session,
)
from pipeline.store import Store
from pipeline.store.schema import DiagnosisSession, VerdictInForce
from pipeline.tools.results import read_result

SegmentKind = Literal["text", "match", "entity", "cited"]


# --- one session: claims, bindings and where their excerpts sit ------------------------------

GOOD_CHECKS = ("direct_observation", "reasonable_inference")


def under(target: str, prefix: str) -> bool:
    """Whether a gatekeeper target path lies at or below `prefix` ("claims[1]" is not under "claims[10]")."""
    return target == prefix or target.startswith((prefix + ".", prefix + "["))


def _gate_errors(record: SessionRecord) -> list[GatekeeperError]:
    return list(record.evaluation.gatekeeper_result.errors) if record.evaluation else []


@dataclass
class BindingView:
    target: str
    binding: WrittenBinding
    # Where the excerpt was found: invocation, similarity and decoded-text spans (None when not located).
    invocation_id: int | None
    score: float | None
    spans: list[tuple[int, int]]
    cited_spans: list[tuple[int, int]]  # the records the binding cites, marked in its window
    source_scores: dict[str, float | None]
    entity_misses: list[EntityMiss]
    added_words: list[str]
    other_match: OtherMatch | None
    errors: list[GatekeeperError]


@dataclass
class ClaimCard:
    index: int
    target: str
    claim: WrittenClaim
    claim_check: ClaimCheck | None
    errors: list[GatekeeperError]  # every gatekeeper error at or below claims[i]
    bindings: list[BindingView]
    composer: str  # "allowed" or where the composer-input filter moved it ("missing_info", ...)
    filter_reason: str = ""
    filter_msg: Message | None = None  # filter_reason as code + parameters, for the reader's language
    reviews: list[ReviewRecord] = field(default_factory=list)

    @property
    def has_findings(self) -> bool:
        """What a reviewer should look at: a gatekeeper error, a weak check, or kept from the answer."""
        check = self.claim_check.verification if self.claim_check else None
        return bool(self.errors) or check not in GOOD_CHECKS or self.composer != "allowed"


def claims_labelled_session_not(record: SessionRecord, cards: list[ClaimCard]) -> bool:
    """Every flagged claim among `cards` has a review but the session has none: the moment to offer
    the session's own label, which is what takes it out of the review queue."""
    flagged = [c for c in cards if c.has_findings]
    return bool(flagged) and not record.session_reviews and all(c.reviews for c in flagged)


def _binding_view(target: str, binding: WrittenBinding, feats: BindingFeatures | None,
                  errors: list[GatekeeperError]) -> BindingView:
    feats = feats or BindingFeatures()
    out = feats.sources.get("output") or SourceMatch()
    return BindingView(
        target=target,
        binding=binding,
        invocation_id=out.invocation_id,
        score=out.score,
        spans=[(s, e) for s, e in out.spans if s is not None and e is not None],
        cited_spans=list(out.record_spans),
        source_scores={name: s.score for name, s in feats.sources.items()},
        entity_misses=list(feats.entities),
        added_words=[a.text for a in feats.added],
        other_match=feats.other_match,
        errors=[e for e in errors if under(e.target, target)],
    )


def claim_cards(record: SessionRecord) -> list[ClaimCard]:
    """One card per executor claim, with everything the gatekeeper, verifier and filter said about it."""
    ev = record.evaluation
    errors = _gate_errors(record)
    checks = {c.claim_id: c for c in ev.claim_checks} if ev else {}
    allowed = {c.claim_id for c in ev.composer_input.allowed_claims} if ev and ev.composer_input else set()
    filtered = {f.source: f for f in ev.composer_filtered} if ev else {}
    cards = []
    for ci, claim in enumerate(record.claims):
        target = f"claims[{ci}]"
        own = [e for e in errors if under(e.target, target)]
        moved = filtered.get(target)
        cards.append(ClaimCard(
            index=ci,
            target=target,
            claim=claim,
            claim_check=checks.get(claim.claim_id),
            errors=own,
            bindings=[_binding_view(binding_target(ci, bi), b, record.features.get(binding_target(ci, bi)), own)
                      for bi, b in enumerate(claim.evidence_bindings)],
            composer="allowed" if claim.claim_id in allowed else (moved.moved_to if moved else "dropped"),
            filter_reason=moved.reason if moved else "",
            filter_msg=moved.msg if moved else None,
            reviews=record.claim_reviews(claim.claim_id),
        ))
    return cards


def in_language(text: str, lang: str) -> str:
    """One half of a bilingual "中文 / English" text from rules/index.yaml; other text unchanged."""
    zh, sep, en = text.partition(" / ")
    if not sep:
        return text
    return zh if lang == "zh" else en


def verdict_reasons(ev: RoundAudit, lang: str) -> list[str]:
    """Why the verdict is not PASS, in `lang`; a session stored before reasons had codes keeps its English."""
    return [render(m, lang) for m in ev.verdict_reasons] if ev.verdict_reasons else list(ev.verdict_guard_reasons)


def session_level_errors(record: SessionRecord) -> list[GatekeeperError]:
    """Gatekeeper errors that belong to no claim (root, hypotheses, digests ...)."""
    return [e for e in _gate_errors(record) if not e.target.startswith("claims[")]


@dataclass
class HypothesisRow:
    index: int
    text: str  # as the executor wrote it ("" when the check names an index it did not write)
    check: HypothesisCheck


def hypothesis_rows(record: SessionRecord) -> list[HypothesisRow]:
    checks = record.evaluation.hypothesis_checks if record.evaluation else []
    hyps = record.hypotheses
    return [HypothesisRow(h.hypothesis_index,
                          hyps[h.hypothesis_index].hypothesis_text if 0 <= h.hypothesis_index < len(hyps) else "", h)
            for h in checks]


@dataclass
class DigestRow:
    digest: EvidenceDigest
    target: str
    check: DigestCheck | None
    quote_score: float | None
    quote_invocation_id: int | None
    errors: list[GatekeeperError]


def digest_rows(record: SessionRecord) -> list[DigestRow]:
    """Each digest with its digest_check and quote-location features."""
    checks = {d.digest_id: d for d in record.evaluation.digest_checks} if record.evaluation else {}
    errors = _gate_errors(record)
    rows = []
    for di, d in enumerate(record.evidence_digests):
        target = f"digests[{di}]"
        feats = record.features.get(target)
        quote = (feats.quote if feats else None) or SourceMatch()
        rows.append(DigestRow(d, target, checks.get(d.digest_id), quote.score, quote.invocation_id,
                              [e for e in errors if under(e.target, target)]))
    return rows


# --- highlight windows -----------------------------------------------------------------------


@dataclass
class Window:
    """A slice of a decoded tool output around a match, cut into plain and marked segments."""

    segments: list[tuple[str, SegmentKind]]
    start: int
    end: int
    total: int
    line: int  # 1-based line of the first match in the decoded output


def _mark(text: str, base: int, spans: list[tuple[int, int, SegmentKind]]) -> list[tuple[str, SegmentKind]]:
    out: list[tuple[str, SegmentKind]] = []
    pos = 0
    for s, e, kind in sorted(spans):
        s, e = max(s - base, pos), min(e - base, len(text))
        if e <= s:
            continue
        if s > pos:
            out.append((text[pos:s], "text"))
        out.append((text[s:e], kind))
        pos = e
    if pos < len(text):
        out.append((text[pos:], "text"))
    return out


def _token_spans(text: str, base: int, tokens: list[str]) -> list[tuple[int, int, SegmentKind]]:
    spans: list[tuple[int, int, SegmentKind]] = []
    for token in dict.fromkeys(t for t in tokens if t):
        for m in re.finditer(re.escape(token), text, re.IGNORECASE):
            spans.append((base + m.start(), base + m.end(), "entity"))
    return spans


def _outside(span: tuple[int, int], marks: list[tuple[int, int, SegmentKind]]) -> list[tuple[int, int]]:
    """The parts of a span that no mark covers."""
    parts, at = [], span[0]
    for s, e, _ in sorted(marks):
        if e <= at or s >= span[1]:
            continue
        if s > at:
            parts.append((at, s))
        at = max(at, e)
    if at < span[1]:
        parts.append((at, span[1]))
    return parts


def highlight_window(
    decoded: str,
    spans: list[tuple[int, int]],
    *,
    entity_tokens: list[str] | None = None,
    cited: list[tuple[int, int]] | None = None,
    context: int = 360,
    max_spread: int = 3000,
) -> Window:
    """The window of `decoded` around the matched spans; entity tokens in it are marked too, and
    the records the binding cites (`cited`, decoded spans) where no other mark is.

    Spans far apart (an excerpt whose segments sit in different records) are cut to those
    near the longest one, so a window stays readable and small whatever the output size.
    """
    if not spans:
        head = decoded[: 2 * context]
        return Window(_mark(head, 0, _token_spans(head, 0, entity_tokens or [])), 0, len(head), len(decoded), 1)
    anchor = max(spans, key=lambda s: s[1] - s[0])
    near = [s for s in spans if abs(s[0] - anchor[0]) <= max_spread]
    lo = max(0, min(s[0] for s in near) - context)
    hi = min(len(decoded), max(s[1] for s in near) + context)
    text = decoded[lo:hi]
    marks: list[tuple[int, int, SegmentKind]] = [(s, e, "match") for s, e in near]
    # An entity inside a matched span is already marked; only those outside it get the entity mark.
    marks += [t for t in _token_spans(text, lo, entity_tokens or []) if not any(s <= t[0] < e for s, e in near)]
    marks += [(a, b, "cited") for s, e in cited or () for a, b in _outside((max(s, lo), min(e, hi)), marks)]
    line = decoded.count("\n", 0, min(s[0] for s in near)) + 1
    return Window(_mark(text, lo, marks), lo, hi, len(decoded), line)


def excerpt_segments(excerpt: str, misses: list[EntityMiss]) -> list[tuple[str, SegmentKind]]:
    """The excerpt with the entities its matched record lacks marked."""
    return _mark(excerpt, 0, _token_spans(excerpt, 0, [m.token for m in misses]))


def nearby_tokens(misses: list[EntityMiss]) -> list[str]:
    """What the output record holds instead of the excerpt's missing entities."""
    return [t for m in misses for t in m.nearby]


def decoded_output(output: str) -> str:
    """The text the gatekeeper's offsets index: a structured output's records one per line, else
    the output with JSON escapes decoded."""
    return record_text(output)[0]


@dataclass(frozen=True)
class NearRecord:
    number: int  # the record's number, the one a citation names
    score: float  # how much of the excerpt the record's text holds, 0..1
    line: str


def nearest_records(output: str, excerpt: str, k: int = 3) -> list[NearRecord]:
    """The k records of a stored output most like an excerpt that was not located in it: what a
    reviewer compares the quote with. Scored on folded text, so case, width and spacing do not count."""
    needle = fold(excerpt)
    if not needle.strip():
        return []
    scored = []
    for r in read_result(output).records:
        line = r.line
        matcher = difflib.SequenceMatcher(None, needle, fold(line), autojunk=False)
        if matcher.real_quick_ratio() == 0:
            continue
        held = sum(b.size for b in matcher.get_matching_blocks()) / len(needle)
        scored.append(NearRecord(r.number, round(held, 2), line))
    scored.sort(key=lambda n: (-n.score, n.number))
    return [n for n in scored[:k] if n.score > 0]


# --- full output viewer ----------------------------------------------------------------------


class OutputPages:
    """A tool output cut into numbered lines for paging and search, whatever its size.

    JSON is pretty-printed so each record reads on its own lines; any line longer than
    `wrap` characters is split, so a one-line 10 MB output still pages.
    """

    def __init__(self, output: str, *, wrap: int = 2000) -> None:
        self.text = self._readable(output)
        starts = [0]
        pos = 0
        text = self.text
        while True:
            nl = text.find("\n", pos)
            end = len(text) if nl < 0 else nl
            cut = pos + wrap
            while cut < end:
                starts.append(cut)
                cut += wrap
            if nl < 0:
                break
            pos = nl + 1
            starts.append(pos)
        self._starts = starts
        self._lower: str | None = None

    @staticmethod
    def _readable(output: str) -> str:
        stripped = output.lstrip()
        if stripped[:1] in ("{", "["):
            try:
                return json.dumps(json.loads(output), ensure_ascii=False, indent=1)
            except ValueError:
                pass
        return output

    @property
    def line_count(self) -> int:
        return len(self._starts)

    def line(self, n: int) -> str:
        end = self._starts[n + 1] if n + 1 < len(self._starts) else len(self.text)
        return self.text[self._starts[n] : end].rstrip("\n")

    def lines(self, first: int, count: int) -> list[tuple[int, str]]:
        """(0-based line number, text) for a page."""
        last = min(self.line_count, first + count)
        return [(n, self.line(n)) for n in range(max(0, first), last)]

    def search(self, query: str, limit: int = 10_000) -> list[int]:
        """Line numbers holding `query` (case-insensitive), at most `limit` of them."""
        if not query:
            return []
        if self._lower is None:
            self._lower = self.text.lower()
        needle = query.lower()
        hits: list[int] = []
        pos = self._lower.find(needle)
        while pos >= 0 and len(hits) < limit:
            n = bisect.bisect_right(self._starts, pos) - 1
            if not hits or hits[-1] != n:
                hits.append(n)
            pos = self._lower.find(needle, pos + 1)
        return hits


def query_segments(line: str, query: str) -> list[tuple[str, SegmentKind]]:
    """A viewer line with every occurrence of the search query marked."""
    if not query:
        return [(line, "text")]
    spans: list[tuple[int, int, SegmentKind]] = [
        (m.start(), m.end(), "match") for m in re.finditer(re.escape(query), line, re.IGNORECASE)
    ]
    return _mark(line, 0, spans)


# --- the Ask page's answer -------------------------------------------------------------------


@dataclass
class ConfirmedFact:
    claim_id: str
    claim_type: str
    claim_text: str
    evidence: list[WrittenBinding]


@dataclass
class AnswerView:
    verdict: Verdict | None
    final_answer: str
    # The answer's first sentence: what the page shows above the sections, which it does not repeat.
    lead: str
    confirmed: list[ConfirmedFact]
    hypotheses: list[ComposerHypothesis]
    missing_info: list[str]
    actions: list[ComposerAction]
    rationale: str
    guard: ComposerGuardResult | None


def answer_view(record: SessionRecord) -> AnswerView:
    """The composer input (what the answer may say), each confirmed fact with the evidence it cites.
    The next steps are the ones the answer gives (a template adds the safe steps when the input has
    none), so the section never says "none" below an answer that lists some."""
    ev = record.evaluation
    ci = ev.composer_input if ev else None
    out = ev.composer_output if ev else None
    bindings = {c.claim_id: c.evidence_bindings for c in record.claims}
    answer = record.final_answer or ""
    return AnswerView(
        verdict=record.verdict,
        final_answer=answer,
        lead=_lead(answer, out.answer_summary if out else ""),
        confirmed=[ConfirmedFact(c.claim_id, c.claim_type, c.claim_text, list(bindings.get(c.claim_id, [])))
                   for c in (ci.allowed_claims if ci else [])],
        hypotheses=list(ci.allowed_hypotheses) if ci else [],
        missing_info=list(ci.missing_info) if ci else [],
        actions=list(out.recommended_actions) if out and out.recommended_actions
        else list(ci.recommended_actions) if ci else [],
        rationale=ci.rationale if ci else "",
        guard=ev.composer_guard if ev else None,
    )


def _lead(answer: str, summary: str) -> str:
    """The answer's first sentence: the composer's summary, else the answer's first line."""
    return summary.strip() or next((line for line in answer.splitlines() if line.strip()), "")


# --- rules editing ---------------------------------------------------------------------------


VERDICT_IMPACTS: tuple[str, ...] = typing.get_args(VerdictImpact)
SEVERITIES: tuple[str, ...] = typing.get_args(Severity)


@dataclass
class ParamField:
    name: str
    kind: Literal["number", "count", "bool", "text_list", "choice_list", "choice"]  # number: a ratio in [0, 1]
    value: Any
    options: tuple[str, ...] = ()


def _literal_options(annotation: Any) -> tuple[str, ...]:
    return tuple(str(a) for a in typing.get_args(annotation)) if typing.get_origin(annotation) is Literal else ()


def param_fields(spec: RuleSpec) -> list[ParamField]:
    """How to edit each parameter of a rule, read from the rule kind's parameter model."""
    model = type(spec.params)
    values = spec.params.model_dump()
    out = []
    for name, info in model.model_fields.items():
        ann = info.annotation
        value = values.get(name)
        if typing.get_origin(ann) is list:
            (item,) = typing.get_args(ann)
            options = _literal_options(item)
            out.append(ParamField(name, "choice_list" if options else "text_list", value, options))
        elif _literal_options(ann):
            out.append(ParamField(name, "choice", value, _literal_options(ann)))
        elif isinstance(value, bool):
            out.append(ParamField(name, "bool", value))
        elif ann is int:
            out.append(ParamField(name, "count", value))
        else:
            out.append(ParamField(name, "number", value))
    return out


@dataclass
class RuleVersionView:
    """One entry of the rules history; version 0 is the rules/ directory the package ships."""

    id: int
    created_at: datetime | None
    author: str
    comment: str
    active: bool
    parent_id: int | None
    yaml: tuple[str, str]  # (index.yaml, metadata.yaml)


def rule_history(store: Store, shipped: tuple[str, str]) -> list[RuleVersionView]:
    """Applied versions newest first, then version 0: in force until the first Apply, and a
    rollback target like any other."""
    versions = [RuleVersionView(v["id"], v["created_at"], v["author"], v["comment"], bool(v["active"]),
                                v["parent_id"] if v["parent_id"] is not None else 0,
                                (v["index_yaml"], v["metadata_yaml"])) for v in store.rule_versions()]
    in_force = not any(v.active for v in versions)
    return [*versions, RuleVersionView(0, None, "shipped", "rules/ directory", in_force, None, shipped)]


def changed_rules(old: RuleSet, new: RuleSet) -> set[str]:
    """Ids of rules whose switch, impact, severity or parameters differ between two rule sets."""
    before = {r.id: r for r in old.rules}
    return {r.id for r in new.rules if before.get(r.id) != r} | {rid for rid in before if new.get(rid) is None}


def responsible_rules(listed: list[str], result: GatekeeperResult, edited: set[str]) -> list[str]:
    """The replay's own list, else the edited rules among those the replayed result names:
    an impact change moves a verdict without changing which rules fail."""
    if listed:
        return listed
    named = {*result.failed_rules, *result.warnings, *(e.rule_id for e in result.errors)}
    return sorted(named & edited)


def yaml_diff(old: tuple[str, str], new: tuple[str, str], old_name: str, new_name: str) -> str:
    """Unified diff of two (index.yaml, metadata.yaml) pairs."""
    parts: list[str] = []
    for fname, a, b in (("index.yaml", old[0], new[0]), ("metadata.yaml", old[1], new[1])):
        parts.extend(difflib.unified_diff(
            a.splitlines(keepends=True), b.splitlines(keepends=True),
            fromfile=f"{old_name}/{fname}", tofile=f"{new_name}/{fname}",
        ))
    return "".join(parts)


def histogram(values: list[float], width: float = 0.05) -> list[tuple[float, int]]:
    """(bin start, count) over [0, 1]; a chart gets 20 bars, not every stored score."""
    bins = round(1 / width)
    counts = Counter(min(int(v / width), bins - 1) for v in values)
    return [(round(b * width, 4), counts.get(b, 0)) for b in range(bins)]


def check_rules(index_yaml: str, metadata_yaml: str) -> tuple[RuleSet | None, list[str]]:
    """The candidate as a RuleSet, or None and every "file: field: problem" message."""
    try:
        return load_rules_from_text(index_yaml, metadata_yaml), []
    except RulesError as exc:
        return None, list(exc.messages)


def set_rule_field(
    index_yaml: str, metadata_yaml: str, rule_id: str, field_name: str, value: Any
) -> tuple[str, str]:
    """The two rule files with one field of one rule changed, unvalidated (the editor shows the
    errors); every other line as its author wrote it, comments included, so the change diffs as
    the lines it touched.

    `field_name` is "enabled", "severity", "verdictImpact" or "params.<name>".
    """
    # The guarded reader first (size, anchors and aliases, depth, duplicate keys): a bomb pasted
    # into the editor is refused, never expanded by the round trip; refused text is left as typed.
    refused: list[str] = []
    index = parse_rules_yaml(INDEX_FILE, index_yaml, refused)
    meta = parse_rules_yaml(METADATA_FILE, metadata_yaml, refused)
    if refused or not isinstance(index, dict) or not isinstance(meta, dict):
        return index_yaml, metadata_yaml
    if field_name == "enabled":
        doc = _round_trip(index_yaml)
        for entry in doc.get("rules") or []:
            if isinstance(entry, dict) and entry.get("id") == rule_id:
                _assign(entry, "enabled", value)
        return _emit(doc, index_yaml), metadata_yaml
    doc = _round_trip(metadata_yaml)
    entry = _child(_child(doc, "ruleMetadata"), rule_id)
    if field_name.startswith("params."):
        _assign(_child(entry, "params"), field_name.removeprefix("params."), value)
    else:
        _assign(entry, field_name, value)
    return index_yaml, _emit(doc, metadata_yaml)


def _yaml(text: str) -> YAML:
    """A round-trip reader and writer set to the text's own indentation: mappings by the first
    nested key's step, block sequences by how far the first dash sits under its key."""
    mapping, offset = 2, 2
    lines = [(len(line) - len(line.lstrip(" ")), line.strip()) for line in text.splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    for (indent, line), (below, nxt) in itertools.pairwise(lines):
        if line.endswith(":") and below > indent and not nxt.startswith("- "):
            mapping = below - indent
            break
    for (indent, line), (below, nxt) in itertools.pairwise(lines):
        if line.endswith(":") and nxt.startswith("- "):
            offset = below - indent
            break
    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    rt.width = 4096  # never re-wrap a long line the author kept on one
    rt.indent(mapping=mapping, sequence=offset + 2, offset=offset)
    return rt


def _round_trip(text: str) -> Any:
    return _yaml(text).load(text)


def _emit(doc: Any, like: str) -> str:
    out = io.StringIO()
    _yaml(like).dump(doc, out)
    return out.getvalue()


def _child(mapping: Any, key: str) -> Any:
    if not isinstance(mapping.get(key), dict):
        mapping[key] = CommentedMap()
    return mapping[key]


def _assign(mapping: Any, key: str, value: Any) -> None:
    """Set one value; a list keeps its flow or block style and the comments of its items."""
    old = mapping.get(key)
    if isinstance(old, CommentedSeq) and isinstance(value, list):
        old[:] = value
    elif isinstance(old, bool) != isinstance(value, bool) or old != value:
        mapping[key] = value


@dataclass
class VerdictChange:
    """A session whose outcome under the rule version in force differs from its outcome at ask,
    with the gatekeeper findings that came and went between the two."""

    at_ask: str | None
    version_at_ask: int | None  # None: stored before versions were recorded
    gatekeeper_at_ask: str | None
    in_force: str
    version_in_force: int
    gatekeeper_in_force: str
    ungated_in_force: bool  # judged with the gatekeeper or an evidence rule off (RuleSet.ungated_by)
    added: list[GatekeeperError]
    removed: list[GatekeeperError]


def verdict_change(settings: Settings, store: Store, session_id: str) -> VerdictChange | None:
    """The session's verdict in force beside its verdict at ask (None: they agree), its findings
    replayed under the version that gave the verdict in force."""
    from pipeline.replay.inputs import SessionInputCache
    from pipeline.replay.per_session import replay
    from pipeline.runs.rulebook import rules_of

    with store.engine.connect() as conn:
        row = conn.execute(select(VerdictInForce.verdict, VerdictInForce.gatekeeper_status,
                                  VerdictInForce.rules_version, VerdictInForce.ungated, DiagnosisSession.verdict,
                                  DiagnosisSession.gatekeeper_status, DiagnosisSession.rules_version)
                           .join(DiagnosisSession, DiagnosisSession.id == VerdictInForce.session_id)
                           .where(VerdictInForce.session_id == session_id)).first()
    if row is None:
        return None
    verdict, status, version, ungated, at_ask, status_at_ask, version_at_ask = row
    [replayed] = replay(SessionInputCache(store).inputs([session_id]), rules_of(settings, store, version))
    old = _gate_errors(read_session(store, session_id, with_llm_calls=False))
    new = replayed.result.errors

    def key(e: GatekeeperError) -> tuple[str, str, str]:
        return e.rule_id, e.target, e.message

    before, after = {key(e) for e in old}, {key(e) for e in new}
    return VerdictChange(at_ask, version_at_ask, status_at_ask, verdict, version, status, bool(ungated),
                         [e for e in new if key(e) not in before], [e for e in old if key(e) not in after])
