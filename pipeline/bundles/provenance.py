"""Who vouches for a session bundle (law 9): export signs it, import checks the signature.

The workbench signs with an Ed25519 key kept in its home (`signing-key.pem`, made on first use)
or at `provenance.key_file`; `workbench keys` prints the public half for other workbenches to
trust. The signature covers the bundle's canonical JSON (sorted keys, no spaces, UTF-8) without
the `signature` member, so any edit after signing, a tool output and its quote changed
together included, breaks it.

A signature vouches for the copy; what the signer knew of the session's origin is the
bundle's `provenance` member, signed with the rest (`statement`): "ran_here" (the signer ran
it) or "imported" with the provenance it was imported with and the key that vouched for it
then. An import is "verified" only when a trusted key (`provenance.trusted_keys`, and the
workbench's own) signed exactly what arrived and that statement is "ran_here" or an import
verified in its turn. Anything else (unsigned, a key nobody trusts, a signature that no longer
matches, a trusted key passing on an unverified import, a signed bundle with no statement) is
"unverified": re-verified like every import, stored, and held in the review queue for a person
whatever its verdict. So unverified stays unverified through any number of exports and imports.

Exports from before statements carry none, and export then signed every stored session, an
unverified import included: such a signature says nothing about where the session ran. The one
such bundle that is verified is one signed by this workbench's own key whose session id names a
stored session that ran here (`ran_in_store`): ids are random and our key signed only what our
export read under that id.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NotRequired, TypedDict

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import JsonValue

from pipeline.core.config import Settings
from pipeline.core.errors import ConfigError
from pipeline.store.rows import SessionColumns
from pipeline.text.redact import redact

KEY_FILE = "signing-key.pem"
ALGORITHM = "ed25519"
SIGNATURE = "signature"  # the bundle member that holds it
STATEMENT = "provenance"  # the bundle member saying where the signer got the session

Provenance = Literal["verified", "unverified"]


class Statement(TypedDict):
    """The bundle's `provenance` member as export writes it: "ran_here" alone, or "imported" with
    what the import's signature check found."""

    origin: Literal["ran_here", "imported"]
    provenance: NotRequired[str]
    reason: NotRequired[str]
    vouched_by: NotRequired[str | None]


@dataclass(frozen=True)
class SignatureCheck:
    provenance: Provenance
    reason: str  # one line for the Trace page and the import's output
    key: str | None  # the signer's public key as `public_key_text` writes it, when the bundle names one


class NoSigningKey(ConfigError):
    """There is no key and none can be made (a read-only home): exports go out unsigned."""


def key_path(settings: Settings) -> Path:
    return settings.provenance.key_file or settings.home / KEY_FILE


def signing_key(settings: Settings) -> Ed25519PrivateKey:
    """The workbench's key, made (readable by its owner only) when there is none yet."""
    path = key_path(settings)
    if not path.exists():
        pem = Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # another process made it first: use theirs
        except OSError as exc:
            raise NoSigningKey(f"no signing key at {path} and none can be made there ({exc.strerror or exc})") from exc
        else:
            with os.fdopen(fd, "wb") as fh:
                fh.write(pem)
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise ConfigError(f"signing key {path}: cannot be read as an unencrypted PEM private key ({exc})") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise ConfigError(f"signing key {path}: not an Ed25519 key")
    return key


def public_key_text(key: Ed25519PublicKey) -> str:
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return f"{ALGORITHM}:{base64.b64encode(raw).decode()}"


def _public_key(text: str) -> Ed25519PublicKey | None:
    body = text.strip().removeprefix(f"{ALGORITHM}:")
    try:
        return Ed25519PublicKey.from_public_bytes(base64.b64decode(body, validate=True))
    except (binascii.Error, ValueError):
        return None


def trusted_keys(settings: Settings) -> set[str]:
    """The configured keys, normalised, and the workbench's own when it has one."""
    keys = set()
    for text in settings.provenance.trusted_keys:
        key = _public_key(text)
        if key is None:
            raise ConfigError(f"provenance.trusted_keys: {text[:60]!r} is not an Ed25519 public key "
                              "as `workbench keys` prints it")
        keys.add(public_key_text(key))
    if key_path(settings).exists():
        keys.add(public_key_text(signing_key(settings).public_key()))
    return keys


def canonical(bundle: dict[str, JsonValue]) -> bytes:
    """What a signature covers: the bundle without its signature, in one fixed serialisation."""
    unsigned = {k: v for k, v in bundle.items() if k != SIGNATURE}
    return json.dumps(unsigned, ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                      allow_nan=False).encode("utf-8", "surrogatepass")


def sign(bundle: dict[str, JsonValue], key: Ed25519PrivateKey) -> dict[str, JsonValue]:
    """`bundle` (plain JSON values) with its signature member."""
    value = base64.b64encode(key.sign(canonical(bundle))).decode()
    return {**bundle, SIGNATURE: {"algorithm": ALGORITHM, "public_key": public_key_text(key.public_key()),
                                  "value": value}}


def statement(row: SessionColumns) -> Statement:
    """Where a stored session came from, as its export states it: run here (provenance NULL), or
    imported with the provenance, reason and key its import's signature check found."""
    if row["provenance"] is None:
        return {"origin": "ran_here"}
    found = ((row.get("self_evaluation") or {}).get("claimed_by_source") or {}).get("signature") or {}
    return {"origin": "imported", "provenance": row["provenance"],
            "reason": str(found.get("reason") or "imported before signatures were checked"),
            "vouched_by": found.get("key")}


def own_key(settings: Settings) -> str | None:
    """The workbench's own public key, when it has one (made by the first signed export)."""
    return public_key_text(signing_key(settings).public_key()) if key_path(settings).exists() else None


# Whether a bundle (decoded JSON, as it arrived) signed by a key is a session run here.
RanHere = Callable[[dict[str, JsonValue], str], bool]


def _vouched(bundle: dict[str, JsonValue], shown: str, ran_here: RanHere) -> SignatureCheck:
    """A trusted signature's check, as far as what the signer states of the session's origin allows."""
    said = bundle.get(STATEMENT)
    if said is None:
        if ran_here(bundle, shown):
            return SignatureCheck("verified", "signed by this workbench's key before exports stated provenance, "
                                  "and its session ran here", shown)
        return SignatureCheck("unverified", f"no {STATEMENT} statement: a signature from before statements vouches "
                              "for the copy, not for where the session ran", shown)
    if said == {"origin": "ran_here"}:
        return SignatureCheck("verified", "signed by a trusted key that ran it", shown)
    if not isinstance(said, dict) or said.get("origin") != "imported":
        return SignatureCheck("unverified", f"signed by a trusted key, but its {STATEMENT} is in an unknown form", shown)
    if said.get("provenance") != "verified":
        return SignatureCheck("unverified", "signed by a trusted key that imported it unverified ("
                              f"{str(said.get('reason'))[:200]})", shown)
    return SignatureCheck("verified", "signed by a trusted key that imported it verified (signed by "
                          f"{str(said.get('vouched_by'))[:80]})", shown)


def _nowhere(_: dict[str, JsonValue], __: str) -> bool:
    return False


def check_signature(bundle: dict[str, JsonValue], trusted: set[str], ran_here: RanHere = _nowhere) -> SignatureCheck:
    """The provenance of a bundle as it arrived (decoded JSON, before any other reading).
    `ran_here` says whether a bundle without a statement, signed by a trusted key, is one of this
    workbench's own sessions (`ran_in_store`); without a store to ask, none is."""
    sig = bundle.get(SIGNATURE)
    if sig is None:
        return SignatureCheck("unverified", "unsigned", None)
    if not isinstance(sig, dict) or sig.get("algorithm") != ALGORITHM:
        return SignatureCheck("unverified", "signature in an unknown form", None)
    key = _public_key(str(sig.get("public_key", ""))[:200])
    if key is None:
        return SignatureCheck("unverified", "signature names no valid public key", None)
    shown = public_key_text(key)
    try:
        key.verify(base64.b64decode(str(sig.get("value", ""))[:200], validate=True), canonical(bundle))
    except (InvalidSignature, binascii.Error, ValueError):
        return SignatureCheck("unverified", "signature does not match the content: changed after signing", shown)
    if shown not in trusted:
        return SignatureCheck("unverified", "signed by a key that is not trusted (provenance.trusted_keys)", shown)
    return _vouched(bundle, shown, ran_here)


def ran_in_store(stored: Callable[[str], SessionColumns | None], own: str | None) -> RanHere:
    """Whether a bundle with no statement, its signature checked against `key`, is an export of a
    session run in this store: `key` is `own` (this workbench's) and the bundle names a stored
    session with no provenance (run here; imports are "verified" / "unverified", migration 0010)
    and the same question. `stored` reads a session row by id."""
    def check(bundle: dict[str, JsonValue], key: str) -> bool:
        session = bundle.get("session")
        sid = session.get("id") if isinstance(session, dict) else None
        if own is None or key != own or not isinstance(session, dict) or not isinstance(sid, str):
            return False
        row = stored(sid)
        return (row is not None and row.get("provenance") is None and row.get("stage") != "imported"
                and redact(str(row.get("question"))) == session.get("question"))
    return check
