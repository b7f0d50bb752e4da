"""Checking the arguments a model chose for a tool call against what this session supports.

A small model fills a schema's slots with whatever reads like an answer: `queryLogs` with service
"...", a level "high", a window in another year. Run as asked, such a call returns nothing and the
session goes on with no data while looking as if it had searched. Each argument the catalogue or
the question constrains is checked here: a service must be one the catalogue, the question or the
plan names (any well-formed name when no catalogue is known), and a placeholder ("...", "<service>",
"xxx") is never one, even where a plan copied from its prompt's example lists it; a level must be a log level; a
window must parse, run forwards and meet the question's window. What fails is corrected from the
plan or the question when there is exactly one right value, else the call is refused; either way
with a note the collector records.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pipeline.core.contracts import PlannerPlan, QuestionScope, ToolArguments
from pipeline.text.echoes import is_placeholder
from pipeline.tools.logfiles import normalize_level, parse_timestamp
from pipeline.tools.registry import persisted_name

# A service name as backends spell them (payment-service, api.gateway, orders_v2).
_SERVICE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,127}")
_TOOLS_WITH_SERVICE = ("query_logs", "query_metrics")


@dataclass
class CheckedCall:
    """The arguments to run (None: refused) and what was changed or why it was refused."""

    arguments: ToolArguments | None
    notes: list[str] = field(default_factory=list)

    @property
    def refused(self) -> bool:
        return self.arguments is None


@dataclass(frozen=True)
class ArgumentPolicy:
    """What one session supports: its catalogue, its question's scope and the planner's plan."""

    plan: PlannerPlan
    scope: QuestionScope | None = None
    catalogue: tuple[str, ...] = ()

    def check(self, tool: str, arguments: ToolArguments) -> CheckedCall:
        name = persisted_name(tool) or tool
        call = CheckedCall(dict(arguments))
        if name in _TOOLS_WITH_SERVICE and arguments.get("service") is not None:
            self._service(name, call)
        if call.arguments is not None and name == "query_logs" and arguments.get("level") is not None:
            self._level(name, call)
        if call.arguments is not None and ("start" in arguments or "end" in arguments):
            self._window(call)
        if call.arguments is not None and name == "lookup_knowledge":
            self._query(name, call)
        return call

    # --- service -----------------------------------------------------------------------------

    def _supported_services(self) -> list[str]:
        asked = self.scope.services if self.scope else []
        return [s for s in dict.fromkeys([*self.catalogue, *asked, *self.plan.services]) if not is_placeholder(s)]

    def _planned(self, tool: str) -> list[ToolArguments]:
        return [c.arguments for c in self.plan.tool_calls if (persisted_name(c.tool_name) or c.tool_name) == tool]

    def _service(self, tool: str, call: CheckedCall) -> None:
        assert call.arguments is not None
        given = call.arguments.get("service")
        text = given.strip() if isinstance(given, str) else ""
        supported = self._supported_services()
        by_fold = {s.casefold(): s for s in supported}
        if text.casefold() in by_fold:
            call.arguments["service"] = by_fold[text.casefold()]
            return
        if text and _SERVICE_NAME.fullmatch(text) and not self.catalogue and not is_placeholder(text):
            return  # no catalogue to hold it against: a well-formed name is the backend's to answer
        # The one service this question is about, from the question first, then the plan.
        asked = (self.scope.services if self.scope else []) or [s for s in self.plan.services if not is_placeholder(s)]
        if len(asked) == 1:
            call.arguments["service"] = asked[0]
            call.notes.append(f"{tool}: service {given!r} is not a service of this question or catalogue; "
                              f"corrected to {asked[0]!r} from the {'question' if self.scope and self.scope.services else 'plan'}")
            return
        known = ", ".join(supported) or "none known"
        call.notes.append(f"{tool}: refused service {given!r}: not a service of this question or catalogue ({known})")
        call.arguments = None

    # --- level -------------------------------------------------------------------------------

    def _level(self, tool: str, call: CheckedCall) -> None:
        assert call.arguments is not None
        given = call.arguments["level"]
        if normalize_level(given) is not None:
            return
        service = call.arguments.get("service")
        planned = next((a.get("level") for a in self._planned(tool)
                        if a.get("service") == service and normalize_level(a.get("level")) is not None), None)
        if planned is not None:
            call.arguments["level"] = planned
            call.notes.append(f"{tool}: level {given!r} is not a log level; corrected to {planned!r} from the plan")
        else:
            del call.arguments["level"]
            call.notes.append(f"{tool}: level {given!r} is not a log level; dropped (all levels)")

    # --- window ------------------------------------------------------------------------------

    def _window(self, call: CheckedCall) -> None:
        assert call.arguments is not None
        given_start, given_end = call.arguments.get("start"), call.arguments.get("end")
        start = parse_timestamp(given_start) if given_start is not None else None
        end = parse_timestamp(given_end) if given_end is not None else None
        asked = self.scope.time_window if self.scope else None
        problem = ""
        if (given_start is not None and start is None) or (given_end is not None and end is None):
            problem = "is not a time"
        elif start is not None and end is not None and start > end:
            problem = "ends before it starts"
        elif asked is not None and ((asked.end and start and start > asked.end) or
                                    (asked.start and end and end < asked.start)):
            problem = "lies outside the question's window"
        if not problem:
            return
        for key in ("start", "end"):
            call.arguments.pop(key, None)
        shown = f"{given_start!r}..{given_end!r}"
        if asked is not None and (asked.start or asked.end):
            if asked.start:
                call.arguments["start"] = asked.start.isoformat()
            if asked.end:
                call.arguments["end"] = asked.end.isoformat()
            call.notes.append(f"window {shown} {problem}; corrected to the question's window ({asked.text or 'as read'})")
        else:
            call.notes.append(f"window {shown} {problem}; dropped (no window)")

    # --- knowledge query ---------------------------------------------------------------------

    def _query(self, tool: str, call: CheckedCall) -> None:
        assert call.arguments is not None
        given = call.arguments.get("query")
        if isinstance(given, str) and any(ch.isalnum() for ch in given):
            return
        planned = next((a.get("query") for a in self._planned(tool) if isinstance(a.get("query"), str)), None)
        if planned:
            call.arguments["query"] = planned
            call.notes.append(f"{tool}: query {given!r} says nothing; corrected to the plan's {planned!r}")
            return
        call.notes.append(f"{tool}: refused query {given!r}: it says nothing to search for")
        call.arguments = None
