"""Deep links (/trace?session=ID) without two failed requests in the browser console.

Opened on a page's own path, Streamlit's client does not know where the server's root is: it
asks /trace/_stcore/health and /trace/_stcore/host-config first (404, each logged in the
console) and only then the real root. The client skips that guess when the page that loads it
names the server's root in window.__streamlit.BACKEND_BASE_URL, so the entry file (app.py) serves
each page's path with Streamlit's own index.html plus that one line: the root is the folder the
page's path sits in, so a server under server.baseUrlPath is found the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from pathlib import Path

import streamlit
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

_ROOT_HINT = ("<script>window.__streamlit = Object.assign({}, window.__streamlit, "
              "{BACKEND_BASE_URL: new URL('.', window.location.href).href});</script>")


@cache
def _index_html() -> str:
    html = (Path(streamlit.__file__).parent / "static" / "index.html").read_text(encoding="utf-8")
    return html.replace("<head>", "<head>" + _ROOT_HINT, 1)


async def _page(request: Request) -> HTMLResponse:
    # Not cached by the browser, like the index.html Streamlit serves: it names the current assets.
    return HTMLResponse(_index_html(), headers={"Cache-Control": "no-cache"})


def page_routes(url_paths: Iterable[str]) -> list[Route]:
    """A route per page path other than the root (the root needs no hint: it is the root)."""
    base = str(streamlit.get_option("server.baseUrlPath") or "").strip("/")
    prefix = f"/{base}" if base else ""
    return [Route(f"{prefix}/{path}", _page, methods=["GET", "HEAD"]) for path in url_paths if path]
