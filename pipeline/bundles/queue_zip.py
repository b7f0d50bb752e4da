"""The review queue's sessions as one zip of session bundles, for a team to check in its own CI."""

from __future__ import annotations

import io
import json
import re
import zipfile

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pipeline.bundles.session_bundle import export_bundle
from pipeline.runs.review_queue import QueueFilter, iter_filtered
from pipeline.store import Store

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_-]+")


def bundle_file_name(session_id: str, taken: set[str]) -> str:
    """A zip entry name for a session's bundle: no directory part, no markup, bounded, unique.
    Ids written before imports got the workbench's own may hold anything (`../../x`)."""
    stem = _UNSAFE_NAME.sub("_", session_id).strip("_")[:100] or "session"
    name, n = f"{stem}.json", 1
    while name in taken:
        n += 1
        name = f"{stem}-{n}.json"
    taken.add(name)
    return name


def export_zip(store: Store, q: QueueFilter, *, key: Ed25519PrivateKey | None = None) -> bytes:
    """Every session of the queue as a bundle file in one zip, each signed with `key` when given."""
    buf = io.BytesIO()
    taken: set[str] = set()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for row in iter_filtered(store, q):
            bundle = export_bundle(store, row.id, key=key)
            zf.writestr(bundle_file_name(row.id, taken), json.dumps(bundle, ensure_ascii=False, indent=1, default=str))
    return buf.getvalue()
