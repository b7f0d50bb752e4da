"""Stored sessions -> gatekeeper ReplayInputs, read in bulk so a preview over 10,000 sessions is quick.

Only the parts of `self_evaluation` a replay needs are pulled out in SQL (JSON paths work on
SQLite and PostgreSQL alike): decoding every session's whole audit record cost most of the time.

A projected verdict is the verdict policy (pipeline.verdict.policy) over the stored claim_checks, question
coverage and failed tool calls with the candidate rules' gatekeeper result. The verifier's own
verdict is left out: it was given under the old rules (the offline verifier, for one, marks down
any session whose gatekeeper failed), so it would keep every relaxed rule from lifting anything.
(An LLM verifier that saw the old gatekeeper result may also have judged claims by it; that
influence cannot be undone without re-running the verifier, so relaxing a rule lifts no claim check.)
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from itertools import islice
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection, Row
from sqlalchemy.exc import DBAPIError

from pipeline.core.contracts import ClaimCheck, EvidenceDigest, FormCoverage, ServiceCoverage, ToolInvocation
from pipeline.gatekeeper.features import valid_ids
from pipeline.replay.per_session import ReplayInput, cited_invocation_ids, gc_paused
from pipeline.store import Store
from pipeline.store.schema import DiagnosisSession, ToolInvocationRow

_EV = DiagnosisSession.self_evaluation["verifier_evaluation"]
_COLUMNS = (
    DiagnosisSession.id,
    DiagnosisSession.shape,
    DiagnosisSession.verdict,
    DiagnosisSession.evidence_digests,
    DiagnosisSession.gatekeeper_features,
    _EV["executor_structured_output"].label("structured"),
    _EV["executor_output_parse_status"]["status"].as_string().label("parse_status"),
    _EV["claim_checks"].label("claim_checks"),
    _EV["gatekeeper_result"].label("gatekeeper_result"),
    _EV["question_coverage"].label("question_coverage"),
    _EV["question_form_coverage"].label("question_form_coverage"),
)


def _input(row: Row[Any], owners: dict[int, tuple[str, str]], failed_tools: list[ToolInvocation]) -> ReplayInput:
    structured = row.structured
    parse_status = row.parse_status or "missing"
    # Stored rows were validated when written; re-validating 150k objects doubled the load time.
    digests = [EvidenceDigest.model_construct(**d) for d in row.evidence_digests or []] \
        if row.shape == "split" else None
    checks = [ClaimCheck.model_construct(**c) for c in row.claim_checks or []]
    gate = row.gatekeeper_result or {}
    cited = cited_invocation_ids(structured, digests)
    return ReplayInput(
        session_id=row.id, structured=structured, parse_status=parse_status,
        invocations={i: owners[i] for i in cited if i in owners}, features=row.gatekeeper_features or {},
        digests=digests, old_status=gate.get("status", "pass"), old_verdict=row.verdict or "LOW_CONFID",
        old_failed_rules=list(gate.get("failed_rules", [])), old_warnings=list(gate.get("warnings", [])),
        claim_checks=checks, coverage=[ServiceCoverage.model_construct(**c) for c in row.question_coverage or []],
        form=FormCoverage.model_construct(**row.question_form_coverage) if row.question_form_coverage else None,
        failed_tools=failed_tools,
    )


_REPLAYABLE = DiagnosisSession.status.in_(("completed", "imported"))
_CHUNK = 500  # ids per IN (...) query: inside every database's parameter limit


def _chunks(ids: list[Any]) -> Iterator[list[Any]]:
    for i in range(0, len(ids), _CHUNK):
        yield ids[i:i + _CHUNK]


class SessionInputCache:
    """Every replayable session's ReplayInput, loaded once and then topped up with new sessions.

    A finished session's audit record does not change, so a refresh only reads the sessions it
    has not seen (one id query when there are none). Keeping the same ReplayInput objects also
    keeps the per-rule findings the replay caches on them.
    """

    def __init__(self, store: Store, kept: int | None = None):
        self.store = store
        # What inputs() keeps between calls, most recently asked first: a session's input with its
        # remembered findings runs to tens of KB, and an exact path over 100,000 sessions would
        # otherwise hold gigabytes. None: everything (refresh() always keeps what it loads).
        self.kept = kept
        self._inputs: dict[str, ReplayInput] = {}
        self.last_added = 0
        # Set when sessions were loaded: a long-running caller may then gc.freeze() them.
        self.unfrozen = False
        self._lock = threading.Lock()

    def warm(self) -> threading.Thread:
        """Load the history in the background (seconds at 10,000 sessions) while a tuner edits;
        a refresh() meanwhile waits for it instead of loading twice."""
        thread = threading.Thread(target=self.refresh, name="replay-history", daemon=True)
        thread.start()
        return thread

    def refresh(self) -> list[ReplayInput]:
        with self._lock:
            return self._refresh()

    def inputs(self, session_ids: list[str]) -> list[ReplayInput]:
        """Just these sessions' inputs (the columnar replay's exact path), loaded once and kept."""
        with self._lock:
            new = [i for i in session_ids if i not in self._inputs]
            if new:
                with self.store.connected() as conn:
                    self._load(conn, new)
            out = [self._inputs[i] for i in session_ids if i in self._inputs]
            if self.kept is not None:
                for item in out:  # moved to the end: the most recently asked are dropped last
                    self._inputs[item.session_id] = self._inputs.pop(item.session_id)
                for stale in list(islice(self._inputs, max(0, len(self._inputs) - self.kept))):
                    del self._inputs[stale]
            return out

    def _refresh(self) -> list[ReplayInput]:
        with self.store.connected() as conn:
            ids = list(conn.execute(select(DiagnosisSession.id).where(_REPLAYABLE)
                                    .order_by(DiagnosisSession.created_at, DiagnosisSession.id)).scalars())
            known = set(ids)
            for gone in self._inputs.keys() - known:
                del self._inputs[gone]
            new = [i for i in ids if i not in self._inputs]
            if new:
                self._load(conn, new)
        self.last_added = len(new)
        self.unfrozen = self.unfrozen or bool(new)
        return [self._inputs[i] for i in ids if i in self._inputs]

    def _load(self, conn: Connection, session_ids: list[str]) -> None:
        # Decoding the stored JSON and building ~2M small objects from it: see gc_paused.
        with gc_paused():
            self._load_rows(conn, session_ids)

    def _load_rows(self, conn: Connection, session_ids: list[str]) -> None:
        rows = [row for chunk in _chunks(session_ids) for row in self._read_chunk(conn, chunk)
                if row.gatekeeper_result is not None]
        # The digests' ids read from the stored dicts: building digest objects here as well as in
        # _input was a third of the load.
        cited = sorted({i for row in rows for i in cited_invocation_ids(row.structured, None)}
                       | {i for row in rows for d in row.evidence_digests or () if isinstance(d, dict)
                          for i in valid_ids(d.get("source_invocation_ids"))})
        owners = {i: (s, t) for chunk in _chunks(cited) for i, s, t in conn.execute(
            select(ToolInvocationRow.id, ToolInvocationRow.session_id, ToolInvocationRow.tool_name)
            .where(ToolInvocationRow.id.in_(chunk)))}
        failed: dict[str, list[ToolInvocation]] = {}
        for chunk in _chunks([row.id for row in rows]):
            for i, s, t, m in conn.execute(
                    select(ToolInvocationRow.id, ToolInvocationRow.session_id, ToolInvocationRow.tool_name,
                           ToolInvocationRow.model_tool_name)
                    .where(ToolInvocationRow.session_id.in_(chunk), ToolInvocationRow.status == "error")):
                failed.setdefault(s, []).append(ToolInvocation.model_construct(
                    id=i, session_id=s, tool_name=t, model_tool_name=m, status="error"))
        for row in rows:
            self._inputs[row.id] = _input(row, owners, failed.get(row.id, []))

    def _read_chunk(self, conn: Connection, chunk: list[str]) -> list[Row[Any]]:
        """The chunk's rows. A row the database cannot read as JSON (SQLite's JSON functions fail
        on a NaN written before the store refused them, or by hand) would fail every replay, so
        the chunk is read again row by row and such a session quarantined: marked failed with the
        reason, out of every later replay, in the review queue for a person."""
        try:
            return list(conn.execute(select(*_COLUMNS).where(DiagnosisSession.id.in_(chunk))))
        except DBAPIError:
            conn.rollback()
        rows: list[Row[Any]] = []
        for sid in chunk:
            try:
                rows += conn.execute(select(*_COLUMNS).where(DiagnosisSession.id == sid)).all()
            except DBAPIError as exc:
                conn.rollback()
                self.store.quarantine(sid, f"its stored record cannot be read as JSON ({exc.orig})")
        return rows


def replay_inputs(store: Store) -> list[ReplayInput]:
    """Every session that has a verifier evaluation (running and failed ones have nothing to replay)."""
    return SessionInputCache(store).refresh()
