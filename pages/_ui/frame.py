"""The entry file's frame around every page: page config, language switch, navigation, CSS, and
the deep-link handshake every page starts with."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path
from typing import Any

import streamlit as st

from pages._ui.i18n import N_, lang, t
from pages._ui.markup import CSS, md
from pages._ui.reads import settings
from pipeline.core.errors import WorkbenchError, one_line

PAGES = (  # (file, label key, icon); app.py builds st.navigation from this
    ("pages/ask.py", N_("nav.ask"), ":material/chat:"),
    ("pages/sessions.py", N_("nav.sessions"), ":material/inbox:"),
    ("pages/trace.py", N_("nav.trace"), ":material/account_tree:"),
    ("pages/rules.py", N_("nav.rules"), ":material/rule:"),
    ("pages/eval.py", N_("nav.eval"), ":material/science:"),
)
_ENTRY_RAN = "_workbench_entry_ran"  # set by frame() on each run, taken by the page
_FRAMED = "_workbench_framed"  # frame() ran at least once in this browser session


# A local file: a :material/...: or emoji icon is fetched from fonts.gstatic.com, a failed
# name lookup in every browser console of a workbench without internet access.
ICON = str(Path(__file__).resolve().parent.parent / "icon.png")


def frame() -> Any:
    """What app.py draws around every page: page config, language switch, navigation, CSS.

    Returns the page st.navigation picked from the URL; app.py runs it.
    """
    st.set_page_config(page_title="Evidence Workbench", page_icon=ICON, layout="wide")
    _lang_from_url()
    st.session_state[LANG_SWITCH] = lang()
    with st.sidebar:
        st.segmented_control(t("app.language"), ["en", "zh"], key=LANG_SWITCH, required=True, on_change=_switched,
                             format_func=lambda code: {"en": "English", "zh": "中文"}[code])
    # The URL carries the code (?lang=zh), not the label a bound widget would write (?lang=中文).
    st.query_params["lang"] = st.session_state[_LANG_URL] = lang()
    st.session_state[_ENTRY_RAN] = st.session_state[_FRAMED] = True
    page = st.navigation([st.Page(path, title=t(key), icon=icon, default=i == 0)
                          for i, (path, key, icon) in enumerate(PAGES)])
    setup()
    return page


_LANG_URL = "_workbench_lang_url"  # the ?lang= value frame() last wrote
# The language switch shows "lang" and a click writes it back; "lang" itself is plain state, set
# before the switch on every run. Bound to the switch, it was the widget's value, and Streamlit
# gives a widget a new id on each page: a click that cut a fresh session's first run short (a
# sample asked before the page had finished) came before Streamlit carried the value over to
# the clicked page's widget, which then started empty, and the page turned English.
LANG_SWITCH = "lang_switch"


def _switched() -> None:
    st.session_state["lang"] = st.session_state[LANG_SWITCH]


def _lang_from_url() -> None:
    """?lang=zh|en decides the language on a fresh load and whenever the URL changes it; else the
    choice in the sidebar (kept for the browser session) stands."""
    wanted = st.query_params.get("lang")
    if wanted in ("en", "zh") and wanted != st.session_state.get(_LANG_URL):
        st.session_state["lang"] = wanted
    elif st.session_state.get("lang") not in ("en", "zh"):
        st.session_state["lang"] = settings().ui.language


_ROOT = Path(__file__).resolve().parents[2]
_warmed = False


def _warm_imports() -> None:
    """After the first page of a server process is drawn, import pandas and pyarrow, which
    st.dataframe imports on its first call (0.4 s), and the modules each page imports at its top
    (0.25 s): otherwise the first open of each page pays its own share (docs/benchmarks.md). In
    the script's own thread: importing on a thread of their own raced the script's imports
    ("partially initialized module")."""
    global _warmed
    if _warmed:
        return
    _warmed = True
    import pandas  # noqa: F401
    import pyarrow  # noqa: F401

    for path, _, _ in PAGES:
        tree = ast.parse((_ROOT / path).read_text(encoding="utf-8"))
        for node in tree.body:  # the page's top-level imports; a lazy import inside stays lazy
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(("pipeline", "pages")):
                package = importlib.import_module(node.module)
                for name in node.names if hasattr(package, "__path__") else ():  # `from ...views import trace`
                    if importlib.util.find_spec(f"{node.module}.{name.name}") is not None:
                        importlib.import_module(f"{node.module}.{name.name}")


def run_app() -> None:
    """app.py's whole body. A WorkbenchError from the frame (a bad workbench.yaml) or a page (a
    store that cannot be opened, a rules file that does not load) becomes one message box; any
    other exception is a bug and keeps Streamlit's traceback."""
    try:
        frame().run()
    except WorkbenchError as exc:
        st.error(md(one_line(exc)), icon=":material/error:")
    _warm_imports()  # a no-op once imported


def page_start() -> None:
    """First call of every page: make sure app.py framed this run.

    A folder named pages/ beside the entry file puts a fresh Streamlit server in its old
    file-per-page mode until some run calls st.navigation (app.py turns the mode off where
    Streamlit imports it, st.App; older Streamlit does not), so the first request for
    /trace?session=ID runs pages/trace.py alone (no language switch, no CSS). Drawing the
    frame calls st.navigation, which ends that mode for the whole server; the rerun then goes
    through app.py to the same URL before the user has touched anything.
    """
    if st.session_state.pop(_ENTRY_RAN, False):
        return
    if st.session_state.get(_FRAMED):
        # Only streamlit.testing gets here: AppTest resets the mode before every run.
        return
    try:
        frame()
    except WorkbenchError as exc:  # the same message box run_app shows
        st.error(md(one_line(exc)), icon=":material/error:")
        st.stop()
    st.rerun()


def setup() -> None:
    """Per page run: the shared CSS (style-only html goes to an invisible container)."""
    st.html(CSS)
