"""Streamlit entry: `streamlit run app.py`. Pages live in pages/, one module each; the frame in pages/_ui/frame.py.

Streamlit runs this file as __main__ on every script run: the frame and the page the URL names.
Where Streamlit has st.App, `streamlit run` also imports it to find `app`, the server: Streamlit's
own routes plus each page's path served with a hint that keeps a deep link's console clean
(pages/_ui/deep_links.py), on connections that send at once (pages/_ui/nodelay.py). Older
Streamlit runs the script alone on its own server and the client probes as before; there a fresh
server's first paint lists the pages/ files by name until the frame's navigation replaces them.
"""

if __name__ == "__main__":
    from pages._ui import frame

    frame.run_app()
else:
    from pathlib import Path

    import streamlit as st
    from streamlit.runtime.pages_manager import PagesManager

    from pages._ui.deep_links import page_routes
    from pages._ui.nodelay import send_without_delay

    send_without_delay()  # before uvicorn accepts a connection: it imports this file first
    # A pages/ folder beside the entry file puts a fresh server in Streamlit's file-per-page mode
    # until a run calls st.navigation: the first paint listed "app ask eval rules sessions trace",
    # and a click on one of them ran that file without the frame, in the default language. This
    # entry file always navigates, so the mode is off before the first session (Streamlit's own
    # st.navigation clears the same flag).
    PagesManager.uses_pages_directory = False
    # Every page file's name is its path; the default page's is not needed (it is served at the root).
    app = st.App(__file__, routes=page_routes(p.stem for p in Path(__file__).with_name("pages").glob("[!_]*.py")))
