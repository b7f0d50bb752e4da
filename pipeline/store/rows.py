"""The rows the store's reads hand out, as the columns they select (tests/test_store.py holds each
shape's keys equal to those columns). Readers keep indexing them by column name; what a key holds
is now checked where it is read. The stage documents of a session (plan, digests, verifier output,
composer output, audit record) stay the JSON the pipeline's contracts wrote: `pipeline.store.record`
validates them into those contracts.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypedDict, TypeVar, cast

from pipeline.core.contracts import ToolArguments, Trigger
from pipeline.core.feature_shapes import Features

_Row = TypeVar("_Row")


def shaped(shape: type[_Row], columns: Mapping[str, object]) -> _Row:
    """A result row (column name -> value) as the shape that names its columns: the one place a
    row the database hands back untyped is given its type."""
    return cast(_Row, dict(columns))


class SessionColumns(TypedDict):
    """A whole diagnosis_session row (`Store.get_session`)."""

    id: str
    created_at: datetime
    updated_at: datetime
    question: str
    world: str | None
    shape: str
    provider: str
    model: str
    status: str
    stage: str
    error: str | None
    verdict: str | None
    gatekeeper_status: str | None
    failed_rules: list[str]
    groundedness: float | None
    services: str
    final_answer: str | None
    rounds: int
    planner_plan: dict[str, Any] | None
    evidence_digests: list[Any] | None
    executor_raw_output: str | None
    verifier_output: dict[str, Any] | None
    composer_output: dict[str, Any] | None
    self_evaluation: dict[str, Any] | None
    gatekeeper_features: Features | None
    timings_ms: dict[str, float]
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    imported_id_map: dict[str, int] | None
    heartbeat_at: datetime | None
    trigger: Trigger | None
    trigger_key: str | None
    rerun_of: str | None
    composer_findings: bool
    provenance: str | None
    ungated: bool
    rules_version: int | None


class ListedSession(TypedDict):
    """A row of `Store.list_sessions`: the list columns and the latest session-level label."""

    id: str
    created_at: datetime
    question: str
    status: str
    verdict: str | None
    gatekeeper_status: str | None
    failed_rules: list[str]
    groundedness: float | None
    services: str
    provider: str
    shape: str
    ungated: bool
    provenance: str | None
    review_label: str | None


class InvocationMetaColumns(TypedDict):
    """A tool_invocation row without its output (`Store.invocation_meta`)."""

    id: int
    round: int
    tool_name: str
    model_tool_name: str
    arguments: ToolArguments
    status: str
    error: str | None
    latency_ms: float
    output_bytes: int
    stored_cut_bytes: int
    output_preview: str


class LlmCallColumns(TypedDict):
    """A whole llm_call row (`Store.llm_calls`)."""

    id: int
    session_id: str
    stage: str
    round: int
    provider: str
    model: str
    prompt_file: str
    prompt_version: str
    messages: list[Any]
    raw_response: str
    parse_status: str
    attempt: int
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    error: str | None
    json_mode: str | None
    finish_reason: str | None
    created_at: datetime


class ReviewColumns(TypedDict):
    """A whole review row (`Store.reviews`)."""

    id: int
    session_id: str
    claim_id: str | None
    label: str
    note: str
    reviewer: str
    created_at: datetime


class RuleVersionColumns(TypedDict):
    """A whole rule_version row and whether it is the version in force (`Store.rule_versions`)."""

    id: int
    created_at: datetime
    author: str
    comment: str
    index_yaml: str
    metadata_yaml: str
    parent_id: int | None
    active: bool


class SessionOutcome(TypedDict):
    """A session's verdict in force and at ask, with the rule version of each (`listing.session_outcome`)."""

    verdict: str | None
    verdict_at_ask: str | None
    rules_version: int | None
    rules_version_at_ask: int | None


class SessionListing(SessionOutcome):
    """A row of `workbench sessions` (`listing.session_list`): what started a session, where it is,
    how it ended."""

    id: str
    question: str
    trigger: Trigger | None
    status: str
    stage: str
    provenance: str | None
    created_at: datetime
    rerun_of: str | None
    error: str | None
    ungated: bool
    ungated_at_ask: bool
