"""A policy service served in this process on a thread (the websocket is the transport the tests keep)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from x2.policy.protocol import PolicyService
from x2.policy.server import PolicyServer


@contextmanager
def serving(service: PolicyService) -> Iterator[str]:
    """Serve `service` until the block ends; its ws:// URL."""
    with PolicyServer(service) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield server.url
    thread.join(30)
