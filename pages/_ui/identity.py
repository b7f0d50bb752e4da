"""Who is at the keyboard: the signed-in user, and the reviewer name a page labels reviews with.
Whether they may label or apply rules is the engine's decision (pipeline.frontends.access); this
module asks the browser who it is and words the answer."""

from __future__ import annotations

from typing import Any

import streamlit as st

from pages._ui.i18n import t
from pages._ui.markup import md
from pages._ui.reads import settings
from pipeline.frontends.access import Access, label_access, rules_access


def current_user() -> str:
    """The authenticated user's email or name, or "" when nobody is logged in."""
    try:
        if st.user.get("is_logged_in"):
            return str(st.user.get("email") or st.user.get("name") or "")
    except Exception:  # noqa: BLE001 - st.user without an auth setup behaves differently across versions
        return ""
    return ""


def auth_configured() -> bool:
    """Whether login (st.login, docs/auth.md) is set up in .streamlit/secrets.toml."""
    try:
        return "auth" in st.secrets
    except Exception:  # noqa: BLE001 - no secrets file at all means no auth either
        return False


# The reviewer's name in this browser's localStorage: without login, a new tab or a link without
# ?reviewer= still knows who is reviewing. Stores what it is given, reports what it holds only
# when that tells the server something new: each report reruns the page, and on a first open an
# empty report cost a second full run before anything was drawn (docs/benchmarks.md).
_BROWSER_NAME_JS = """
export default function(component) {
  const { data, setStateValue } = component;
  const KEY = "workbench.reviewer";
  const given = (data && data.name) || "";
  if (given) { window.localStorage.setItem(KEY, given); }
  const stored = window.localStorage.getItem(KEY) || "";
  if (stored && stored !== given) { setStateValue("stored", stored); }
}
"""


def _browser_name() -> Any:
    # Declared on every run, not once at import: before Streamlit 1.67 (the floor is 1.59) the
    # registry belongs to the running app, and a module imported once outlives it.
    return st.components.v2.component("workbench_reviewer_name", js=_BROWSER_NAME_JS)



def why_not(decision: Access) -> str:
    """The reasons of a refusal as one sentence in the page language."""
    words = {"editors_only": lambda: t("rules.editors_only", who=md(", ".join(decision.editors))),
             "not_editor": lambda: t("rules.not_editor", who=md(current_user())),
             "not_logged_in": lambda: t("rules.not_logged_in"),
             "auth_missing": lambda: t("rules.auth_missing")}
    return " ".join(words[code]() for code in decision.why)


def may_apply_rules() -> Access:
    return rules_access(settings(), current_user(), login_configured=auth_configured())


def login_button(key: str) -> None:
    """A Log in button, where login is set up and nobody has signed in."""
    if not current_user() and auth_configured():
        st.button(t("rules.login"), on_click=st.login, key=key)


def reviewer_name(key: str) -> str:
    """Who labels: with login configured the signed-in user (an editor, when ui.editors lists
    them), never a typed name; "" while nobody who may label is signed in. Without login a name
    typed beside the review form, kept in the URL (?reviewer=) and in the browser."""
    decision = label_access(settings(), current_user(), login_configured=auth_configured())
    if decision is not None:
        if decision.allowed:
            st.caption(t("common.reviewer") + f": {md(decision.who)}")
        else:
            st.caption(t("common.reviewers_only") + f" {why_not(decision)}")
            login_button(f"{key}_login")
        return decision.who
    remembered = _browser_name()(key=f"{key}_browser", data={"name": str(st.session_state.get(key) or "")},
                               on_stored_change=lambda: None)
    # Once per session, before the box is drawn: a box left empty later stays empty.
    if not st.session_state.get(f"{key}_restored") and remembered.stored:
        st.session_state[f"{key}_restored"] = True
        if not st.session_state.get(key):
            st.session_state[key] = remembered.stored
    name = st.text_input(t("common.reviewer"), key=key, bind="query-params", persist_state="session")
    return (name or "").strip()


def reviewer_shown(key: str) -> str:
    """The reviewer a form below reviewer_name's (same page, same key) labels with, without a
    second name box: a widget key appears once per page."""
    decision = label_access(settings(), current_user(), login_configured=auth_configured())
    return decision.who if decision is not None else str(st.session_state.get(key) or "").strip()
