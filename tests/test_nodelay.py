"""The workbench server's connections send at once (pages/_ui/nodelay.py): a real uvicorn server
on a listening socket bound the way Streamlit binds an st.App's, without naming TCP."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from typing import Any

import uvicorn

from pages._ui.nodelay import send_without_delay


async def _ok(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


def test_every_accepted_connection_has_nagle_off() -> None:
    send_without_delay()
    send_without_delay()  # a second call patches nothing twice
    listener = socket.socket(socket.AF_INET)
    assert listener.proto == 0  # what kept asyncio from setting TCP_NODELAY on its connections
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    server = uvicorn.Server(uvicorn.Config(_ok, http="h11", lifespan="off", log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        for _ in range(200):
            if server.started:
                break
            time.sleep(0.05)
        assert server.started
        conns = [http.client.HTTPConnection("127.0.0.1", listener.getsockname()[1], timeout=10) for _ in range(2)]
        for conn in conns:  # two requests on each kept connection
            for _ in range(2):
                conn.request("GET", "/")
                assert conn.getresponse().read() == b"ok"
        accepted = [protocol.transport.get_extra_info("socket") for protocol in server.server_state.connections]
        assert len(accepted) == 2
        assert all(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for sock in accepted)
        for conn in conns:
            conn.close()
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        listener.close()
