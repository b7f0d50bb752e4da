"""Streamlit entry: `streamlit run app.py`. Pages live in pages/, one module each; the frame in pages/_common.py."""

from pages import _common as ui

ui.run_app()
