"""Who is at the keyboard: the signed-in user, and the reviewer name a page labels reviews with.
Whether they may label or apply rules is the engine's decision (pipeline.frontends.access); this
module asks the browser who it is and words the answer."""

from __future__ import annotations

import json
from urllib.parse import quote, unquote

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


# The reviewer's name kept in a cookie of this browser: without login, a new tab or a link without
# ?reviewer= still knows who is reviewing. A cookie, not local storage: the server reads it with the
# page's first run (st.context.cookies), where local storage needed a component that reported it
# back, and that component's frontend code (with Streamlit's Arrow reader) cost every first open of
# Trace and Eval about 0.1 s of the browser's time (docs/benchmarks.md).
_COOKIE = "workbench_reviewer"
_YEAR_S = 365 * 24 * 3600


def _remembered_name() -> str:
    value = st.context.cookies.get(_COOKIE)
    return unquote(value) if isinstance(value, str) else ""  # no browser (AppTest): no cookie


def _remember_name(name: str) -> None:
    """Keeps `name` in the browser, once per name and tab: the page's cookies are those it opened with."""
    if not name or name in (_remembered_name(), st.session_state.get(f"{_COOKIE}_written")):
        return
    st.session_state[f"{_COOKIE}_written"] = name
    # quote() leaves no quote mark, angle bracket or semicolon in the value: nothing of the name can
    # end the string or the script.
    cookie = json.dumps(f"{_COOKIE}={quote(name, safe='')}; path=/; max-age={_YEAR_S}; SameSite=Strict")
    st.html(f"<script>document.cookie = {cookie};</script>", unsafe_allow_javascript=True)


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
    # Once per session, before the box is drawn: a box left empty later stays empty.
    remembered = _remembered_name()
    if remembered and not st.session_state.get(f"{key}_restored"):
        st.session_state[f"{key}_restored"] = True
        if not st.session_state.get(key):
            st.session_state[key] = remembered
    name = (st.text_input(t("common.reviewer"), key=key, bind="query-params", persist_state="session") or "").strip()
    _remember_name(name)
    return name


def reviewer_shown(key: str) -> str:
    """The reviewer a form below reviewer_name's (same page, same key) labels with, without a
    second name box: a widget key appears once per page."""
    decision = label_access(settings(), current_user(), login_configured=auth_configured())
    return decision.who if decision is not None else str(st.session_state.get(key) or "").strip()
