"""Session bundle v1: one session as a JSON file, for export, import and offline checking.

A team can export its own agent's sessions in this shape and run `workbench check` in CI.
Reading a bundle is bounded: a regular file only, refused from its size when over
`budget.max_bundle_bytes`, JSON at most `bounds.MAX_JSON_DEPTH` deep, no NaN or Infinity, no
integer beyond 64 bits, dates within `EARLIEST` and a day from now, a source session id of at
most `MAX_SOURCE_ID` printable characters. Export signs the bundle (pipeline/bundles/provenance.py).
Importing one is pipeline/bundles/importer.py.
"""

from __future__ import annotations

import json
import re
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    PrivateAttr,
    ValidationError,
    field_validator,
)

from pipeline.bundles.provenance import STATEMENT, sign, statement
from pipeline.core.contracts import EvidenceDigest, ToolInvocation
from pipeline.core.errors import BundleError, NotFound
from pipeline.store import Store
from pipeline.store.listing import session_outcome
from pipeline.text.bounds import MAX_JSON_DEPTH, int64, too_deep, unstorable
from pipeline.text.redact import redact_value

# A source's own session id is kept and shown, never used as ours: bounded, printable.
MAX_SOURCE_ID = 200
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
# Tool rounds are an int4 column on PostgreSQL.
MAX_ROUND = 2**31 - 1


class BundleSession(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str = Field(min_length=1, max_length=MAX_SOURCE_ID)
    question: str
    shape: Literal["split", "single"] = "split"
    provider: str = "unknown"
    model: str = "unknown"
    created_at: datetime | None = None

    @field_validator("id")
    @classmethod
    def _printable(cls, v: str) -> str:
        if _CONTROL.search(v):
            raise ValueError("holds a control character")
        return v

    @field_validator("created_at")
    @classmethod
    def _plausible(cls, v: datetime | None) -> datetime | None:
        if v is None:
            return v
        aware = v if v.tzinfo else v.replace(tzinfo=UTC)
        latest = datetime.now(UTC) + timedelta(days=1)
        if not EARLIEST <= aware <= latest:
            raise ValueError(f"must lie between {EARLIEST:%Y-%m-%d} and {latest:%Y-%m-%d}")
        return aware


class SessionBundle(BaseModel):
    model_config = ConfigDict(extra="ignore")
    bundle_version: Literal[1]
    session: BundleSession
    # What the source wrote, kept as JSON: the plan is stored as written; its verifier and composer
    # outputs are read where a check uses them (runs/judge.py); an import keeps those and its
    # verifier_evaluation as the source's claim, never as ours.
    planner_plan: dict[str, JsonValue] | None = None
    tool_invocations: list[ToolInvocation]
    evidence_digests: list[EvidenceDigest] = Field(default_factory=list)
    executor_raw_output: str
    verifier_output: dict[str, JsonValue] | None = None
    composer_output: dict[str, JsonValue] | str | None = None
    # The seed's name (self_evaluation.verifier_evaluation); bundles written while the store
    # called it `round_audit` (migrations 0016-0018) are read too.
    verifier_evaluation: dict[str, JsonValue] | None = Field(
        default=None, validation_alias=AliasChoices("verifier_evaluation", "round_audit"))
    final_answer: str | None = None
    # The decoded JSON as it arrived: what a signature covers (pipeline/bundles/provenance.py).
    _document: dict[str, JsonValue] = PrivateAttr(default_factory=dict)

    @field_validator("bundle_version", mode="before")
    @classmethod
    def _integer_version(cls, v: Any) -> Any:
        if type(v) is not int:  # JSON true is 1 to pydantic
            raise ValueError("must be the integer 1")
        return v

    @field_validator("tool_invocations")
    @classmethod
    def _rounds(cls, v: list[ToolInvocation]) -> list[ToolInvocation]:
        for inv in v:
            if not 0 <= inv.round <= MAX_ROUND:
                raise ValueError(f"invocation {inv.id}: round {inv.round} is outside 0..{MAX_ROUND}")
        return v

    @property
    def document(self) -> dict[str, JsonValue]:
        return self._document


def _field_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _integer_session_ids(data: Any) -> Any:
    """session.id and tool_invocations[].session_id as text: other agents number their sessions."""
    def text_id(item: Any, key: str) -> Any:
        if isinstance(item, dict) and isinstance(item.get(key), int) and not isinstance(item[key], bool):
            return {**item, key: str(item[key])}
        return item

    if not isinstance(data, dict):
        return data
    data = {**data, "session": text_id(data.get("session"), "id")}
    if isinstance(data.get("tool_invocations"), list):
        data["tool_invocations"] = [text_id(inv, "session_id") for inv in data["tool_invocations"]]
    return data


def parse_bundle(data: Any) -> SessionBundle:
    if too_deep(data):
        raise BundleError(f"bundle JSON nests deeper than {MAX_JSON_DEPTH} levels; refused")
    bad = unstorable(data)
    if bad:
        raise BundleError(f"bad bundle field {bad}; refused")
    try:
        bundle = SessionBundle.model_validate(_integer_session_ids(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise BundleError(f"bad bundle field {_field_path(first['loc'])}: {first['msg']}{more}") from exc
    foreign = [inv.id for inv in bundle.tool_invocations if inv.session_id != bundle.session.id]
    if foreign:
        shown = ", ".join(map(str, foreign[:10])) + (" ..." if len(foreign) > 10 else "")
        raise BundleError(f"bad bundle field tool_invocations: invocations {shown} belong to another session "
                          f"than session.id {bundle.session.id!r}")
    ids = [inv.id for inv in bundle.tool_invocations]
    if len(set(ids)) != len(ids):
        raise BundleError("bad bundle field tool_invocations: an invocation id occurs twice")
    bundle._document = data
    return bundle


def read_bundle_bytes(path: Path, max_bytes: int) -> bytes:
    """The file's bytes; a directory, a device, a pipe or a file over `max_bytes` is refused."""
    try:
        # stat before open: opening a FIFO would block until someone writes to it.
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            raise BundleError(f"{path} is {kind}; a bundle is a JSON file")
        if info.st_size > max_bytes:
            raise _too_large(path, max_bytes)
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)  # it may have grown since
    except FileNotFoundError as exc:
        raise BundleError(f"no such bundle file: {path}") from exc
    except OSError as exc:
        raise BundleError(f"cannot read bundle {path}: {exc.strerror or exc}") from exc
    if len(data) > max_bytes:
        raise _too_large(path, max_bytes)
    return data


def _too_large(path: Path, max_bytes: int) -> BundleError:
    return BundleError(f"{path} is larger than budget.max_bundle_bytes ({max_bytes} bytes); "
                       "raise it in workbench.yaml if this bundle is genuine")


def load_bundle(path: Path, *, max_bytes: int) -> SessionBundle:
    data = read_bundle_bytes(Path(path), max_bytes)
    if not data.strip():
        raise BundleError(f"{path} is empty: a bundle is one session as JSON (`workbench export SESSION` writes one)")
    try:
        decoded = json.loads(data.decode("utf-8"), parse_int=int64)
    except ValueError as exc:  # not UTF-8, not JSON, an integer beyond 64 bits
        raise BundleError(f"{path} is not a JSON bundle: {exc}") from exc
    except RecursionError as exc:
        raise BundleError(f"{path}: bundle JSON nests too deep to read; refused") from exc
    return parse_bundle(decoded)


def export_bundle(store: Store, session_id: str, *, key: Ed25519PrivateKey | None = None) -> dict[str, JsonValue]:
    """The session as a bundle, secrets redacted (an export leaves the workbench), with where it
    came from (provenance.statement), signed with `key` when given (provenance.signing_key)."""
    row, outcome = store.get_session(session_id), session_outcome(store, session_id)
    if row is None or outcome is None:
        raise NotFound(f"no session {session_id}")
    evaluation = (row.get("self_evaluation") or {}).get("verifier_evaluation")
    bundle = {
        "bundle_version": 1,
        # The verdicts are what this workbench said; an importer keeps them as the source's claim.
        "session": {"id": row["id"], "question": row["question"], "shape": row["shape"],
                    "provider": row["provider"], "model": row["model"],
                    "created_at": row["created_at"].isoformat() if row["created_at"] else None,
                    "verdict_at_ask": outcome.get("verdict_at_ask"),
                    "rules_version_at_ask": outcome.get("rules_version_at_ask"),
                    "verdict_in_force": outcome.get("verdict"), "rules_version_in_force": outcome.get("rules_version")},
        "planner_plan": row.get("planner_plan"),
        "tool_invocations": [inv.model_dump() for inv in store.invocations(session_id)],
        "evidence_digests": row.get("evidence_digests") or [],
        "executor_raw_output": row.get("executor_raw_output") or "",
        "verifier_output": row.get("verifier_output"),
        "composer_output": row.get("composer_output"),
        "verifier_evaluation": evaluation,
        "final_answer": row.get("final_answer"),
        STATEMENT: statement(row),
    }
    # Plain JSON values before signing: the signature covers what a reader will decode.
    plain: dict[str, JsonValue] = json.loads(json.dumps(redact_value(bundle), ensure_ascii=False, default=str))
    return sign(plain, key) if key is not None else plain
