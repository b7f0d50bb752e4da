"""Offline Planner: one log query per asked service (known or not), the symptom across all
services, the alerts, and the runbooks for the symptom."""

from __future__ import annotations

from datetime import datetime

from pipeline.contracts import PlannedToolCall, PlannerPlan, QuestionScope
from pipeline.scope import symptom_words


def search_words(scope: QuestionScope) -> list[str]:
    return symptom_words(t.strip() for t in scope.symptom.split(",") if t.strip())


def plan(question: str, scope: QuestionScope, window: tuple[datetime, datetime] | None) -> PlannerPlan:
    words = search_words(scope)
    time_args = {"start": window[0].isoformat(), "end": window[1].isoformat()} if window else {}

    calls = [PlannedToolCall(tool_name="query_metrics", arguments={"status": "all", **time_args},
                             purpose="alerts firing or resolved around the incident")]
    for service in scope.services:
        # Every level: a healthy service is shown healthy by its ordinary lines, and a service no
        # backend knows gets a no-data answer of its own rather than silence.
        calls.append(PlannedToolCall(tool_name="query_logs",
                                     arguments={"service": service, "level": "INFO", **time_args},
                                     purpose=f"what {service} logged"))
    if words or not scope.services:
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
        ["查看告警", "查看所问服务的日志", "检索运维手册", "整理证据摘要", "区分事实与假设"]
        if scope.language == "zh"
        else ["check alerts", "read the logs of the services asked about", "search runbooks",
              "digest the evidence", "separate facts from hypotheses"]
    )
    return PlannerPlan(skill=skill, language=scope.language, services=list(scope.services), keywords=words,
                       steps=steps, tool_calls=calls)
