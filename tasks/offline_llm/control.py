"""Running the test endpoint and steering it: one :class:`Endpoint` handle for tests and benches.

The handle talks to the admin routes over HTTP, so it steers a server in this process (started by
:func:`serve_endpoint` on a thread) and one in another process (``python -m
envmill.tasks.offline_llm``) the same way.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from envmill.tasks.offline_llm.faults import Fault
from envmill.tasks.offline_llm.responders import ChatReply, warm_up
from envmill.tasks.offline_llm.scripts import parse_scripts, scripts_json
from envmill.tasks.offline_llm.server import EndpointConfig, EndpointServer

# Admin calls go straight to 127.0.0.1 even when the environment sets an HTTP proxy.
READY_SECONDS = 60.0  # for the endpoint's first answer, on a machine under any load
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
UPLOAD_BYTES = 4 * 2**20  # scripts go up in bodies of about this size (the server takes 32 MiB)
Reply = ChatReply | Mapping[str, Any]


class Endpoint:
    """A running test endpoint: its base URL (``…/v1``) and its admin routes."""

    def __init__(self, url: str, closer: Callable[[], None] = lambda: None) -> None:
        self.url = url
        self._root = url.removesuffix("/v1")
        self._closer = closer

    def _call(self, path: str, payload: Any = None, data: str | None = None) -> Any:
        """GET ``path``, or POST ``payload`` (or JSON text ``data``) to it."""
        if payload is not None:
            data = json.dumps(payload)
        request = urllib.request.Request(
            self._root + path,
            data=None if data is None else data.encode(),
            headers={"Content-Type": "application/json"},
        )
        with _DIRECT.open(request, timeout=10) as response:
            return json.loads(response.read())

    def wait_ready(self, timeout: float = READY_SECONDS) -> None:
        """Return once the endpoint has answered ``GET /v1/models``: a run's preflight under
        load gave up on an endpoint that had not answered yet (issue 24); a stalled one is an
        error after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._call("/v1/models")
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stats(self) -> dict[str, Any]:
        """requests, routes, stages, faults (applied, by kind), in_flight, peak_in_flight."""
        return self._call("/_stats")

    def requests(self, stage: str | None = None) -> list[dict[str, Any]]:
        """The bodies the endpoint received (the last 2000), oldest first."""
        return self._call("/_requests" + (f"?stage={stage}" if stage else ""))

    def add_faults(self, *faults: Fault) -> int:
        """Queue faults; returns how many are pending."""
        return self._call("/_faults", [fault.to_dict() for fault in faults])["pending"]

    def configure(self, **settings: Any) -> None:
        """Change latency, refuse_response_format, slips, style, ... of the running endpoint
        (``style="model"``: answers in the model style's designs and voice)."""
        self._call("/_config", settings)

    def script(self, key: str, replies: Sequence[Reply] | None) -> int:
        """Script the replies under ``key`` (``script_key`` or ``user_script_key``); None removes
        it. Returns how many scripts the endpoint holds."""
        return self.scripts({key: replies})

    def scripts(self, scripts: Mapping[str, Sequence[Reply] | None]) -> int:
        """Merge many scripts in (in a few requests however many there are); a reply is its
        JSON (``{"content", "tool_calls"}`` or ``{"empty": true}``) or a ``ChatReply``. Returns
        how many scripts the endpoint holds; ValueError for a bad reply, before any is sent."""
        chunks: list[list[str]] = [[]]
        size = 0
        for key, value in scripts_json(scripts).items():
            item = f"{json.dumps(key)}: {json.dumps(value)}"
            if chunks[-1] and size + len(item) > UPLOAD_BYTES:
                chunks.append([])
                size = 0
            chunks[-1].append(item)
            size += len(item)
        held = 0
        for chunk in chunks:
            held = self._call("/_scripts", data="{" + ", ".join(chunk) + "}")["scripts"]
        return held

    def reset(self) -> None:
        """Forget counts, the request log, pending faults and scripts."""
        self._call("/_reset", {})

    def close(self) -> None:
        self._closer()


def start_server(
    host: str = "127.0.0.1",
    port: int = 0,
    scripts: Mapping[str, Sequence[Reply] | None] | None = None,
    **config: Any,
) -> EndpointServer:
    """A bound (not yet serving) endpoint server, responders warmed; ``port=0``: a free port;
    ``scripts``: the rollout scripts it starts with (as ``Endpoint.scripts`` takes them)."""
    warm_up()
    server = EndpointServer(host, port, EndpointConfig(**config))
    if scripts:
        server.scripts.add(parse_scripts(scripts_json(scripts)))
    return server


@contextmanager
def serve_endpoint(port: int = 0, **config: Any) -> Iterator[Endpoint]:
    """Serve on a thread of this process for the duration of the block.

    Args:
        port: 0 for a free port.
        **config: EndpointConfig fields: latency (seconds, or (low, high)), seed,
            refuse_response_format, embedding_dimensions, slips (SkelBuilder's slips), style
            ("procedural" or "model": who writes the answers); and
            scripts (rollout scripts, as ``Endpoint.scripts`` takes them).
    """
    server = start_server(port=port, **config)
    thread = threading.Thread(
        target=server.serve_forever, args=(0.05,), name="llm-endpoint", daemon=True
    )
    thread.start()

    def close() -> None:
        server.closing.set()
        server.shutdown()
        server.server_close()

    endpoint = Endpoint(server.url, close)
    try:
        endpoint.wait_ready()  # answering before any caller's deadline starts
        yield endpoint
    finally:
        close()
