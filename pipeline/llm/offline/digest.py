"""Offline Evidence Digest: extractive. Each digest quotes one output line verbatim and says no more.

docs/spec.md#split-chain: a digest summarises, cites its invocation, and never adds causality or fixes. Being
extractive, the offline digest cannot be unfaithful by construction; the summary only restates
the quote with its service and level.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from pipeline.core.contracts import EvidenceDigest, ToolInvocation
from pipeline.core.messages import tr
from pipeline.llm.offline.signatures import ERROR_WORDS
from pipeline.text.primitives import extract_entities, keywords, normalize
from pipeline.tools.results import ToolRecord, read_result

LEVEL_WEIGHT = {"ERROR": 3.0, "FATAL": 3.0, "WARN": 2.0, "WARNING": 2.0, "INFO": 0.5, "DEBUG": 0.0}
MAX_LOG_DIGESTS_PER_CALL = 5
MAX_DIGESTS = 14
_DIGITS = re.compile(r"\d+")


@dataclass
class Focus:
    """What the question is about: its services, search words and content words."""

    services: set[str]
    words: list[str]
    terms: frozenset[str] = field(default_factory=frozenset)
    # The services the question asks about (scope), a subset of `services`.
    asked: tuple[str, ...] = ()


def _cite(inv: ToolInvocation, record: ToolRecord) -> str:
    """The record a digest quotes, as source_record_ids writes it (docs/spec.md#record-citations)."""
    return f"{inv.id}#{record.number}"


def _alert_digests(inv: ToolInvocation, focus: Focus, lang: str) -> list[tuple[float, EvidenceDigest]]:
    out = []
    for alert in read_result(inv.output).of_kind("alert"):
        description = alert.text.strip()
        service, status = alert.service, alert.status
        critical = alert.severity == "critical"
        if not description or not (service in focus.services or (status == "firing" and critical)):
            continue
        name = alert.get("alertname")
        summary = tr("offline.digest.alert", lang, name=name, service=service, status=status, description=description)
        score = (4.0 if status == "firing" else 1.0) + (3.0 if service in focus.services else 0.0)
        out.append((score, EvidenceDigest(digest_id="", source_invocation_ids=[inv.id], tool=inv.tool_name,
                                          source_record_ids=[_cite(inv, alert)], domain="alerts", summary=summary,
                                          source_quote=description)))
    return out


def _log_digests(inv: ToolInvocation, focus: Focus, lang: str) -> list[tuple[float, EvidenceDigest]]:
    logs = read_result(inv.output).of_kind("log")
    groups: dict[tuple[str, str], list[ToolRecord]] = {}
    for line in logs:
        norm = normalize(line.text)
        level = line.level or "INFO"
        asked = any(normalize(w) in norm for w in focus.words)
        alarming = LEVEL_WEIGHT.get(level, 0.5) >= 2.0 or any(w in norm for w in ERROR_WORDS)
        in_focus = line.service in focus.services
        # Outside the services in focus only errors that also match the question's words count, and
        # lines another service logs about an asked one ("inventory-service timed out after 2000ms").
        names_asked = any(normalize(a) in norm for a in focus.asked)
        relevant = (in_focus and (alarming or asked)) or (asked and (level in ("ERROR", "FATAL") or names_asked))
        if relevant:
            groups.setdefault((line.service, _DIGITS.sub("#", norm)), []).append(line)
    # An asked service with nothing alarming still gets its most frequent line as a digest: the
    # evidence that shows it healthy (law 8), instead of no word about it at all.
    for service in focus.asked:
        if any(key[0] == service for key in groups):
            continue
        ordinary = [line for line in logs if line.service == service and (line.level or "INFO") == "INFO"]
        if ordinary:
            templates: dict[str, list[ToolRecord]] = {}
            for line in ordinary:
                templates.setdefault(_DIGITS.sub("#", normalize(line.text)), []).append(line)
            key, lines = max(templates.items(), key=lambda kv: len(kv[1]))
            groups[(service, key)] = lines
    scored = []
    for (service, template), lines in groups.items():
        first = lines[0]
        level = first.level or "INFO"
        hits = sum(1 for w in focus.words if normalize(w) in template)
        overlap = len(keywords(first.text) & focus.terms)
        score = (LEVEL_WEIGHT.get(level, 0.5) + 2.0 * hits + overlap
                 + (2.0 if service in focus.services else 0.0)
                 + (3.0 if service in focus.asked else 0.0)) * (1.0 + math.log(len(lines)))
        quote = first.text.strip()
        repeated = len(lines) > 1
        summary = (tr("offline.digest.logged_repeatedly", lang, service=service, level=level, quote=quote) if repeated
                   else tr("offline.digest.logged", lang, service=service, level=level, quote=quote))
        scored.append((score, EvidenceDigest(digest_id="", source_invocation_ids=[inv.id], tool=inv.tool_name,
                                             source_record_ids=[_cite(inv, first)], domain="logs", summary=summary,
                                             source_quote=quote)))
    scored.sort(key=lambda item: -item[0])
    return scored[:MAX_LOG_DIGESTS_PER_CALL]


def _best_sentence(content: str, focus: Focus) -> str:
    sentences = [s.strip() for s in re.split(r"(?<=[。！？.!?])\s+|\n+", content) if len(s.strip()) > 8]
    if not sentences:
        return content.strip()[:300]
    return max(sentences, key=lambda s: len(keywords(s) & focus.terms))


def _knowledge_digests(inv: ToolInvocation, focus: Focus, lang: str) -> list[tuple[float, EvidenceDigest]]:
    out = []
    for block in read_result(inv.output).of_kind("block")[:2]:
        quote = _best_sentence(block.text, focus)
        title = block.get("title")
        summary = tr("offline.digest.runbook", lang, title=title, quote=quote)
        out.append((0.5, EvidenceDigest(digest_id="", source_invocation_ids=[inv.id], tool=inv.tool_name,
                                        source_record_ids=[_cite(inv, block)], domain="knowledge", summary=summary,
                                        source_quote=quote)))
    return out


_BY_TOOL = {"query_metrics": _alert_digests, "query_logs": _log_digests, "lookup_knowledge": _knowledge_digests}


def alarmed_services(invocations: list[ToolInvocation]) -> set[str]:
    """Services a firing critical alert is about or names: where the monitoring system points."""
    services: set[str] = set()
    for inv in invocations:
        if inv.tool_name != "query_metrics" or inv.status != "ok":
            continue
        for alert in read_result(inv.output).of_kind("alert"):
            if alert.status == "firing" and alert.severity == "critical":
                services.add(alert.service)
                services.update(e.value for e in extract_entities(alert.text) if e.kind == "service")
    services.discard("")
    return services


def digest(invocations: list[ToolInvocation], focus: Focus, lang: str, round_: int = 1) -> list[EvidenceDigest]:
    focus = Focus(services=focus.services | alarmed_services(invocations), words=focus.words, terms=focus.terms,
                  asked=focus.asked)
    scored: list[tuple[float, EvidenceDigest]] = []
    seen_quotes: set[str] = set()
    for inv in invocations:
        if inv.status != "ok" or inv.tool_name not in _BY_TOOL:
            continue
        for score, d in _BY_TOOL[inv.tool_name](inv, focus, lang):
            key = normalize(d.source_quote)
            if key not in seen_quotes:
                seen_quotes.add(key)
                scored.append((score, d))
    # Firing alerts first (they are the monitoring system's own judgement), then logs, then
    # runbooks; within each, the most relevant first.
    order = {"alerts": 0, "logs": 1, "knowledge": 2}
    scored.sort(key=lambda item: (order[item[1].domain], -item[0]))
    prefix = "digest" if round_ == 1 else f"digest-r{round_}"
    kept = [d for _, d in scored[:MAX_DIGESTS]]
    return [d.model_copy(update={"digest_id": f"{prefix}-{i}"}) for i, d in enumerate(kept, 1)]
