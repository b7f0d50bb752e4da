"""Streamlit entry: `streamlit run app.py`. Pages live in pages/, one module each; the frame in pages/_ui/frame.py."""

from pages._ui import frame

frame.run_app()
