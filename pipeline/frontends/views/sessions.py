"""Sessions page read model: the files the review queue exports, built when someone asks for them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pipeline.bundles.provenance import NoSigningKey, signing_key
from pipeline.bundles.queue_zip import export_zip
from pipeline.core.config import Settings
from pipeline.runs import review_queue
from pipeline.store import Store


@dataclass(frozen=True)
class QueueExport:
    kind: Literal["csv", "zip"]
    file_name: str
    mime: str
    build: Callable[[], bytes]  # called on download: a zip of every bundle is not built for a page view


def queue_exports(settings: Settings, store: Store, q: review_queue.QueueFilter) -> list[QueueExport]:
    """The queue as a CSV list and as a zip of session bundles, signed when this home has a key."""

    def bundles() -> bytes:
        try:
            key = signing_key(settings)
        except NoSigningKey:
            key = None  # a read-only home still exports; importers see unsigned bundles
        return export_zip(store, q, key=key)

    return [QueueExport("csv", "sessions.csv", "text/csv", lambda: review_queue.export_csv(store, q)),
            QueueExport("zip", "session-bundles.zip", "application/zip", bundles)]
