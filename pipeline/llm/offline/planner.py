"""Offline Planner: services from the catalogue, search words from the symptom vocabulary."""

from __future__ import annotations

import re
from datetime import datetime

from pipeline.contracts import PlannedToolCall, PlannerPlan
from pipeline.llm.offline.lexicon import SYMPTOMS
from pipeline.text import detect_language, normalize


def mentioned_services(question: str, services: list[str]) -> list[str]:
    """Services the question names, in full or by their stem as a whole word ("payment API")."""
    text = normalize(question)
    found = []
    for service in services:
        short = service.rsplit("-", 1)[0] if service.count("-") else service
        if service in text or (len(short) > 2 and re.search(rf"(?<![a-z]){re.escape(short)}(?![a-z])", text)):
            found.append(service)
    return found


def plan(question: str, services: list[str], window: tuple[datetime, datetime] | None) -> PlannerPlan:
    language = detect_language(question)
    text = normalize(question)
    targets = mentioned_services(question, services)
    words: list[str] = []
    for trigger, expansion in SYMPTOMS.items():
        if trigger in text:
            words.extend(w for w in expansion if w not in words)
    time_args = {"start": window[0].isoformat(), "end": window[1].isoformat()} if window else {}

    calls = [PlannedToolCall(tool_name="query_metrics", arguments={"status": "all", **time_args},
                             purpose="alerts firing or resolved around the incident")]
    for service in targets:
        calls.append(PlannedToolCall(tool_name="query_logs",
                                     arguments={"service": service, "level": "WARN", **time_args},
                                     purpose=f"warnings and errors of {service}"))
    if words or not targets:
        calls.append(PlannedToolCall(tool_name="query_logs",
                                     arguments={"keywords": words, "level": "INFO" if words else "WARN",
                                                **time_args},
                                     purpose="the symptom across all services"))
    calls.append(PlannedToolCall(tool_name="lookup_knowledge",
                                 arguments={"query": " ".join([question, *words[:4]]), "top_k": 3},
                                 purpose="runbooks for this symptom"))
    skill = "timeout_diagnosis" if any(w in words for w in ("timeout", "slow")) else (
        "error_diagnosis" if words else "general_diagnosis")
    steps = (
        ["查看告警", "查看相关服务的错误日志", "检索运维手册", "整理证据摘要", "区分事实与假设"]
        if language == "zh"
        else ["check alerts", "read error logs of the services involved", "search runbooks",
              "digest the evidence", "separate facts from hypotheses"]
    )
    return PlannerPlan(skill=skill, language=language, services=targets, keywords=words,  # type: ignore[arg-type]
                       steps=steps, tool_calls=calls)
