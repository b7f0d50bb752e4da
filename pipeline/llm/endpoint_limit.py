"""A cap on concurrent requests to one LLM endpoint, shared by every session in this process.

A worker runs several sessions at once and each sends its stages' calls; an endpoint (a vLLM box,
a rate-limited API key) takes only so many. The invoker holds a slot around each request, under
its own retries and backoff, so a call waiting for a slot is not a failed one. Each process has
its own slots: M workers send at most M x jobs.llm_concurrency requests to one endpoint
(docs/deploy.md).
"""

from __future__ import annotations

import threading

_LOCK = threading.Lock()
_SLOTS: dict[tuple[str, int], threading.BoundedSemaphore] = {}


def endpoint_slots(base_url: str, limit: int) -> threading.BoundedSemaphore:
    """The slots of `base_url` in this process (one semaphore per endpoint and limit)."""
    with _LOCK:
        return _SLOTS.setdefault((base_url, limit), threading.BoundedSemaphore(limit))
