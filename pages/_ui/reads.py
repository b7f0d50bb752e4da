"""Settings and the store, and the cached reads every page draws from.

Cached reads are keyed by the database URL; the store object itself is not hashed.
"""

from __future__ import annotations

import streamlit as st

from pipeline.core.config import Settings, load_settings
from pipeline.core.errors import NotFound
from pipeline.frontends.views import outputs
from pipeline.jobs import JobQueue
from pipeline.runs import review_queue
from pipeline.store import SessionFilter, Store
from pipeline.store.record import SessionRecord, SessionRow, read_session
from pipeline.store.rows import ListedSession


def settings() -> Settings:
    """Loaded once per browser session (config file + environment)."""
    loaded = st.session_state.get("app_settings")
    if not isinstance(loaded, Settings):
        loaded = st.session_state["app_settings"] = load_settings()
    return loaded


@st.cache_resource(show_spinner=False)
def _store(url: str) -> Store:
    return Store(url)


def store() -> Store:
    return _store(settings().db_url)


@st.cache_resource(show_spinner=False)
def _queue(url: str) -> JobQueue:
    from pipeline.jobs import make_queue

    return make_queue(settings(), _store(url))


def queue() -> JobQueue:
    """Where this server's pages submit sessions and eval runs: one per server process, the
    in-process pool (SQLite) or the PostgreSQL queue's client; what it runs outlives the tab."""
    return _queue(settings().db_url)



@st.cache_data(ttl=30, show_spinner=False)
def list_sessions(url: str, f: SessionFilter, limit: int, offset: int) -> tuple[list[ListedSession], int]:
    return _store(url).list_sessions(f, limit=limit, offset=offset)


@st.cache_data(ttl=30, show_spinner=False)
def queue_rows(url: str, q: review_queue.QueueFilter, limit: int, offset: int) -> list[SessionRow]:
    return review_queue.queue_rows(_store(url), q, limit=limit, offset=offset)


@st.cache_data(ttl=30, show_spinner=False)
def queue_stats(url: str, q: review_queue.QueueFilter) -> review_queue.QueueStats:
    return review_queue.queue_stats(_store(url), q)


@st.cache_resource(ttl=5, max_entries=32, show_spinner=False)
def record(url: str, session_id: str) -> SessionRecord | None:
    """The session with its invocations, LLM calls and reviews, validated once per read.

    Shared, not copied per rerun (a big session's LLM messages run to megabytes); pages only
    read it. The short TTL lets a running session's page follow its progress."""
    try:
        return read_session(_store(url), session_id)
    except NotFound:
        return None



# Tool outputs never change once stored and may be megabytes: kept as shared objects, not copied.


@st.cache_resource(max_entries=64, show_spinner=False)
def decoded_output(url: str, invocation_id: int) -> str:
    inv = _store(url).invocation(invocation_id)
    return outputs.decoded_output(inv.output) if inv else ""


@st.cache_data(max_entries=256, show_spinner=False)
def nearest_records(url: str, invocation_id: int, excerpt: str) -> list[outputs.NearRecord]:
    inv = _store(url).invocation(invocation_id)
    return outputs.nearest_records(inv.output, excerpt) if inv else []


@st.cache_resource(max_entries=8, show_spinner=False)
def output_pages(url: str, invocation_id: int) -> outputs.OutputPages:
    inv = _store(url).invocation(invocation_id)
    return outputs.OutputPages(inv.output if inv else "")


def refresh_session_reads(session_id: str | None = None) -> None:
    """After a write (new session, review): the lists, charts and that session's record show it at once."""
    for fn in (list_sessions, queue_rows, queue_stats):
        fn.clear()
    if session_id:
        record.clear(settings().db_url, session_id)
