"""The workbench server answers at once on a reused connection.

Streamlit binds the listening socket of an st.App itself, without naming the protocol (proto 0),
and asyncio switches Nagle's algorithm off (TCP_NODELAY) only on sockets that name TCP. So every
connection kept Nagle on: uvicorn writes a response's head and body in two sends, the body waited
for the browser's delayed acknowledgement, and each request after the first on a connection took
about 40 ms, where the first took 1 ms. A first open fetches about 60 scripts over a handful of
connections before the websocket opens, and the websocket's messages waited the same way
(docs/benchmarks.md, first open of every page). Here uvicorn's HTTP protocols set the option on
each connection they are handed; the websocket is the same connection, upgraded.
"""

from __future__ import annotations

import importlib
import socket
from typing import Any

# uvicorn's HTTP protocol implementations: h11 always, httptools where it is installed.
_PROTOCOLS = (("uvicorn.protocols.http.h11_impl", "H11Protocol"),
              ("uvicorn.protocols.http.httptools_impl", "HttpToolsProtocol"))


def _no_delay(transport: Any) -> None:
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def send_without_delay() -> None:
    """Each connection uvicorn accepts from now on has Nagle's algorithm off. Idempotent."""
    for module_name, class_name in _PROTOCOLS:
        try:
            protocol = getattr(importlib.import_module(module_name), class_name)
        except ImportError:  # httptools is optional for uvicorn
            continue
        made = protocol.connection_made
        if getattr(made, "_workbench_no_delay", False):
            continue

        def connection_made(self: Any, transport: Any, _made: Any = made) -> None:
            _no_delay(transport)
            _made(self, transport)

        connection_made._workbench_no_delay = True  # type: ignore[attr-defined]
        protocol.connection_made = connection_made
