"""A PolicyService behind openpi's websocket protocol (x2.policy.protocol): what `x2 serve` runs.

On each connection the service's metadata goes out first; then every binary message is an observation,
answered by `service.infer`, or an `x2.op` lifecycle message, answered by `{"ok": true}` after the service's
initialize_episode / finalize_episode. On an error the traceback goes back as a text frame and the
connection is closed with 1011 (internal error), as openpi's server does; the other connections go on.

Every call into the service is made by one thread, one call at a time: the evaluator's workers each hold a
connection, and a policy (a torch model, a renderer's GL context) is rarely safe to call from several
threads. A connection whose client went away while its call waits (it timed out) stops waiting, so a stuck
policy holds up neither the other connections' handlers nor the server's shutdown; the calls queued behind
it wait, which is the policy's own slowness and is what the clients' timeouts are for.
"""

from __future__ import annotations

import queue
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from functools import partial
from http import HTTPStatus
from typing import cast

from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode
from websockets.http11 import Request, Response
from websockets.protocol import State
from websockets.sync.server import Server, ServerConnection, serve

from x2.policy.protocol import FINALIZE, INITIALIZE, OP_KEY, EpisodeEndMessage, EpisodeStartMessage, PolicyService
from x2.policy.wire import pack, unpack

HEALTH_PATH = "/healthz"
_POLL_S = 0.1  # how often a handler waiting for the service looks whether its client is still there
_OK: Mapping[str, object] = {"ok": True}


class _ServiceThread:
    """The one thread that calls the service. A daemon: a policy stuck in a call must not keep a stopped
    server's process alive."""

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="x2-policy-service", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (call := self._calls.get()) is not None:
            call()

    def submit[R](self, call: Callable[[], R]) -> Future[R]:
        future: Future[R] = Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():  # its connection is gone already
                return
            try:
                future.set_result(call())
            except BaseException as exc:  # noqa: BLE001 - handed to the connection, which reports it
                future.set_exception(exc)

        self._calls.put(run)
        return future

    def stop(self) -> None:
        self._calls.put(None)


def _health(connection: ServerConnection, request: Request) -> Response | None:
    if request.path == HEALTH_PATH:
        return connection.respond(HTTPStatus.OK, "OK\n")
    return None


class PolicyServer:
    """`service` on ws://host:port, bound on construction (port 0: the system picks one; see `port`)."""

    def __init__(self, service: PolicyService, host: str = "127.0.0.1", port: int = 0,
                 fresh: Callable[[], PolicyService] | None = None):
        self.service = service
        # With `fresh`, each connection has an instance of its own (a policy's episode state, such as an action
        # queue or the expert's copy of the world, belongs to one evaluator worker's episode), made when a
        # connection finds none idle and kept for the next one; without it every connection shares `service`.
        self._fresh = fresh
        self._idle: list[PolicyService] = [service]
        # Sent to every connection as it is now: a service says what it is once, before the first client.
        self._metadata = pack(service.metadata())
        self._calls = _ServiceThread()
        # compression off and no size limit: openpi's client asks for exactly that, and images are large
        self._server: Server = serve(self._handle, host, port, compression=None, max_size=None,
                                     process_request=_health)
        self.host = host
        self.port: int = self._server.socket.getsockname()[1]

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}"

    def serve_forever(self) -> None:
        """Serve until shutdown() is called from another thread (or a signal handler raises)."""
        self._server.serve_forever()

    def shutdown(self) -> None:
        """Stop accepting, close every connection (1001, going away) and wait for their handlers."""
        self._server.shutdown()
        self._calls.stop()

    def run_until_stopped(self) -> None:
        """Serve in this, the main, thread until Ctrl-C or SIGTERM, then shut down and return."""
        def stop(signum: int, frame: object) -> None:
            # shutdown() waits for serve_forever() to leave its loop: it must run beside it, not inside it
            threading.Thread(target=self.shutdown, name="x2-policy-shutdown").start()

        previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.serve_forever()
        finally:
            self.shutdown()
            for s, handler in previous.items():
                signal.signal(s, handler)

    def __enter__(self) -> PolicyServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def _acquire(self) -> PolicyService:
        if self._fresh is None:
            return self.service
        return self._idle.pop() if self._idle else self._fresh()

    def _release(self, service: PolicyService) -> None:
        if self._fresh is not None:
            self._idle.append(service)

    def _answer(self, service: PolicyService, message: object) -> Mapping[str, object]:
        if not isinstance(message, dict):
            raise TypeError(f"expected a map (an observation or an {OP_KEY} message), got {type(message).__name__}")
        op = message.pop(OP_KEY, None)
        if op is None:
            return service.infer(message)
        # (msgpack's map, as x2's evaluator sends it: another client may send less, and a service checks what it reads)
        if op == INITIALIZE:
            service.initialize_episode(cast(EpisodeStartMessage, message))
        elif op == FINALIZE:
            service.finalize_episode(cast(EpisodeEndMessage, message))
        else:
            raise ValueError(f"{OP_KEY}: found {op!r}; allowed: {INITIALIZE}, {FINALIZE}")
        return _OK

    def _wait[R](self, connection: ServerConnection, future: Future[R]) -> R | None:
        """The answer, or None when the client left before the service answered."""
        while True:
            try:
                return future.result(timeout=_POLL_S)
            except FutureTimeout:
                if connection.protocol.state is not State.OPEN:
                    future.cancel()
                    return None

    def _handle(self, connection: ServerConnection) -> None:
        service: PolicyService | None = None
        try:
            connection.send(self._metadata)
            try:
                service = self._wait(connection, self._calls.submit(self._acquire))
            except Exception:  # a policy that cannot be made again (its folder gone): this connection's error
                self._fail(connection, traceback.format_exc())
                return
            if service is None:
                return
            while True:
                message = connection.recv()
                try:
                    obs = unpack(message.encode() if isinstance(message, str) else message)
                    answer = self._wait(connection, self._calls.submit(partial(self._answer, service, obs)))
                    if answer is None:
                        return
                    reply = pack(answer)
                except Exception:
                    self._fail(connection, traceback.format_exc())
                    return
                connection.send(reply)
        except ConnectionClosed:
            return  # the client left (or the server is shutting down): nothing to answer
        finally:
            if service is not None:
                self._calls.submit(partial(self._release, service))  # (after any call of it still queued)

    @staticmethod
    def _fail(connection: ServerConnection, trace: str) -> None:
        # The client reads the traceback (openpi's raises it as a RuntimeError); this process's log keeps it too.
        print(trace, file=sys.stderr, end="", flush=True)
        try:
            connection.send(trace)
            connection.close(CloseCode.INTERNAL_ERROR, "internal error; the traceback is in the previous frame")
        except ConnectionClosed:
            pass
