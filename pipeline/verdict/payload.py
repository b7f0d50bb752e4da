"""The verifier payload (docs/spec.md#verifier-payload): the JSON document the verifier stage
builds (pipeline.stages.verifier.build_payload) and a provider's verifier reads, the LLM one as
text and the offline one by key. It stays a JSON object at run time, so what an LLM is shown and
what the offline verifier reads are the same document.

The parts the stage writes itself are typed here. The executor output rides as written (the
object judged, whatever its shape), and the records that are dumps of contract models
(parse status, trace summary, gatekeeper result, retry context, digests) are those models' JSON.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

from pydantic import JsonValue

from pipeline.core.contracts import ToolStatus
from pipeline.core.feature_shapes import OtherMatch


class Tally(TypedDict):
    """How many records of one output are like the cited text: the records holding a quote (a
    glob's "*" and a cut's "..." match anything), or those of a cited whole record's shape (its
    words without the ones holding a digit: "upstream x returned 500" at any time, from any host).
    A count an answer states ("68 errors", "seven times") is an aggregate no one record holds."""

    records: int
    capped: bool  # counting stopped at the bound: `records` is a lower bound, no exact count
    by_instance: dict[str, int]  # of those records, how many name each instance (a pod, a host)
    # Of those records, how many fall in the span the claim's own times bound ("between 16:20:48 and
    # 16:54:48, 52 ...", "16:20:48 起 59 次", "到 17:29:28 45 次"), in all and per instance; absent when
    # the claim names no time.
    in_span: NotRequired[int]
    by_instance_in_span: NotRequired[dict[str, int]]
    # The whole output's records, in all and by level ("54 WARN/ERROR lines, 13 of them ERROR").
    levels: NotRequired[dict[str, int]]
    # Of a cited whole record, the records of its shape but for its paths and methods ("50 500s" over
    # GET and POST routes); absent when that is the `records` count.
    coarse: NotRequired[int]


class Window(TypedDict):
    """Bounded records of one cited output. An invocation the session does not have is
    `available: false` with its id alone."""

    invocation_id: int
    available: bool
    tool_name: NotRequired[str]
    status: NotRequired[ToolStatus]
    found: NotRequired[bool]  # the excerpt (or the digest's quote) occurs in the output after folding
    anchor: NotRequired[list[str]]  # the records where it was located (or the nearest ones)
    related: NotRequired[list[str]]  # other records naming the claim's entities
    tally: NotRequired[Tally]  # the records like the cited text
    kin: NotRequired[list[str]]  # records like it holding a value or time the claim lists and the anchor lacks
    record_count: NotRequired[int]


class MissShown(TypedDict):
    """The part of an entity miss (pipeline.core.feature_shapes.EntityMiss) the verifier is shown:
    what the matched record lacks, without the token's offsets or the segment's score."""

    kind: str | None
    value: str | None
    nearby: list[str] | None  # entities of that kind the record holds instead
    elsewhere: bool | None  # whether the cited output holds it anywhere


class BindingFeatures(TypedDict):
    """The judgement-relevant part of a binding's gatekeeper features (no offsets or spans)."""

    similarity: dict[str, float | None]  # per source: the output, the digest's quote and summary
    entity_misses: list[MissShown]
    better_match_elsewhere: OtherMatch | None


class CitedDigest(TypedDict):
    summary: str
    source_quote: str


class CitedBinding(TypedDict):
    binding_index: int  # its written position in the claim's evidence_bindings
    tool_name: str | None
    source_invocation_ids: list[int]
    digest_id: str | None
    evidence_excerpt: str
    digest: CitedDigest | None
    windows: list[Window]
    gatekeeper_features: NotRequired[BindingFeatures]


class CitedClaim(TypedDict):
    claim_id: str | None
    claim_index: int  # its written position in claims, as the gatekeeper's targets count
    claim_type: str | None
    support_level: str | None
    claim_text: str
    bindings: list[CitedBinding]


class DigestEvidence(TypedDict):
    digest_id: str
    windows: list[Window]


class VerifierPayload(TypedDict):
    original_query: str
    executor_raw_output: str
    executor_final_answer: str  # deprecated alias of executor_raw_output
    executor_structured_output: dict[str, JsonValue] | None  # ExecutorOutput.raw: as written; None unless valid
    # Contract models' JSON, read back with the model's model_validate where read:
    executor_output_parse_status: dict[str, JsonValue]  # ParseStatus
    tool_trace_summary: list[dict[str, JsonValue]]  # ToolTraceSummaryItem each
    gatekeeper_result: dict[str, JsonValue]  # GatekeeperResult
    retry_context: dict[str, JsonValue] | None  # RetryContext
    cited_evidence: list[CitedClaim]
    # The split shape only:
    evidence_digests: NotRequired[list[dict[str, JsonValue]]]  # EvidenceDigest each
    digest_evidence: NotRequired[list[DigestEvidence]]
