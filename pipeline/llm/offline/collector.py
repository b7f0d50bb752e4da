"""Offline Collector: runs the plan, then follows the alerts to services the plan did not cover."""

from __future__ import annotations

from pipeline.core.contracts import CollectionSummary, PlannerPlan, RetryContext, ToolArguments, ToolInvocation
from pipeline.core.messages import tr
from pipeline.text.primitives import extract_entities
from pipeline.tools.results import read_result
from pipeline.verdict.context import StageContext


def _firing_services(inv: ToolInvocation) -> list[str]:
    if inv.tool_name != "query_metrics" or inv.status != "ok":
        return []
    return [a.service for a in read_result(inv.output).of_kind("alert") if a.status == "firing" and a.service]


def collect(ctx: StageContext, plan: PlannerPlan, retry_context: RetryContext | None) -> CollectionSummary:
    done: list[ToolInvocation] = []
    if retry_context is None:
        for call in plan.tool_calls:
            done.append(ctx.run_tool(call.tool_name, call.arguments))
        queried = set(plan.services)
        for inv in list(done):
            for service in _firing_services(inv):
                if service not in queried:
                    queried.add(service)
                    done.append(ctx.run_tool("query_logs", {"service": service, "level": "WARN"}))
    else:
        # A retry widens the search: every level, and the services / entities the gaps name.
        gaps = " ".join([*retry_context.missing_info, *retry_context.unsupported_claims])
        services = sorted({e.value for e in extract_entities(gaps) if e.kind == "service"}) or plan.services
        for service in services or [""]:
            args: ToolArguments = {"level": "INFO", "limit": 500}
            if service:
                args["service"] = service
            done.append(ctx.run_tool("query_logs", args))
        done.append(ctx.run_tool("query_metrics", {"status": "all"}))
    ok = sum(1 for inv in done if inv.status == "ok")
    summary = tr("offline.collector.summary", ctx.language, calls=len(done), ok=ok)
    return CollectionSummary(collection_summary=summary, tool_invocation_ids=[inv.id for inv in done])
