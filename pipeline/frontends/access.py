"""Who may apply rules and who may label reviews: the editor check every front end makes the same way.

Identity comes from the front end (the signed-in user of the page; in the shell, the --author typed,
or once ui.editors is set the operating-system account mapped by ui.shell_identities); the decision
and its reasons come from here, as codes the front end words in its language.
"""

from __future__ import annotations

import getpass
from dataclasses import dataclass
from typing import Literal

from pipeline.core.config import Settings
from pipeline.core.messages import Message, msg

Reason = Literal["editors_only", "not_editor", "not_logged_in", "auth_missing"]


@dataclass(frozen=True)
class Access:
    allowed: bool
    who: str  # the name the action is recorded under ("" when refused)
    why: tuple[Reason, ...] = ()  # why not, in the order a sentence gives them
    editors: tuple[str, ...] = ()  # ui.editors, for a message that names them


def rules_access(settings: Settings, signed_in: str, *, login_configured: bool) -> Access:
    """Whether `signed_in` ("" for nobody) may apply or roll back rules: anyone while ui.editors is
    empty, else only an editor who signed in."""
    editors = tuple(settings.ui.editors)
    if not editors or signed_in in editors:
        return Access(True, signed_in, editors=editors)
    if signed_in:
        return Access(False, "", ("editors_only", "not_editor"), editors)
    return Access(False, "", ("editors_only", "not_logged_in", *(() if login_configured else ("auth_missing",))),
                  editors)


def label_access(settings: Settings, signed_in: str, *, login_configured: bool) -> Access | None:
    """Who labels reviews: None while nobody signs in and ui.editors is empty (a reviewer types a
    name); else the signed-in user, and only an editor when ui.editors lists them. A typed name
    counts for nothing once login exists: anyone could type an editor's."""
    editors = tuple(settings.ui.editors)
    if not login_configured and not editors:
        return None
    if signed_in and (not editors or signed_in in editors):
        return Access(True, signed_in, editors=editors)
    return Access(False, "", ("not_editor",) if signed_in else ("not_logged_in",), editors)


def shell_author(settings: Settings, typed: str | None) -> str | Message:
    """Whom a `workbench rules` command acts as, or why it may not act. Without ui.editors the typed
    --author is the record it always was; with them, the operating-system account (which the
    machine authenticated) maps to an editor through ui.shell_identities, and a typed name may only
    repeat that identity."""
    typed = (typed or "").strip()
    if not settings.ui.editors:
        return typed
    account = getpass.getuser()
    mapped = settings.ui.shell_identities.get(account, "")
    if not mapped:
        return msg("rules.shell_unmapped", account=account)
    if typed and typed != mapped:
        return msg("rules.shell_author_differs", typed=typed, account=account, mapped=mapped)
    return mapped
