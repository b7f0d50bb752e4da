"""Streamlit entry: `streamlit run app.py`. Pages live in pages/, one module each."""

import streamlit as st

from pages import _common as ui

st.set_page_config(page_title="Evidence Workbench", page_icon=":material/account_tree:", layout="wide")

with st.sidebar:
    st.segmented_control(ui.t("app.language"), ["en", "zh"], key="lang", default=ui.settings().ui.language,
                         format_func=lambda code: {"en": "English", "zh": "中文"}[code], required=True,
                         bind="query-params", persist_state="session")

page = st.navigation([
    st.Page("pages/ask.py", title=ui.t("nav.ask"), icon=":material/chat:", default=True),
    st.Page("pages/sessions.py", title=ui.t("nav.sessions"), icon=":material/inbox:"),
    st.Page("pages/trace.py", title=ui.t("nav.trace"), icon=":material/account_tree:"),
    st.Page("pages/rules.py", title=ui.t("nav.rules"), icon=":material/rule:"),
    st.Page("pages/eval.py", title=ui.t("nav.eval"), icon=":material/science:"),
])
ui.setup()
page.run()
