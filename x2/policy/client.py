"""The evaluator's side of a policy service: one websocket connection speaking openpi's protocol.

A stock openpi server gets only observations (its metadata says nothing of x2's lifecycle); an x2 service
also gets the episode's initialize_episode / finalize_episode. Every failure to get a usable answer is a
PolicyFault, which ends the episode and not the run; only a service that cannot be reached at all when the
evaluation starts is the user's mistake (PolicyError, one line naming the URL).

After a fault the connection is dropped and the next call opens a new one: an answer that arrives after a
timeout must never be read as the answer to a later question.
"""

from __future__ import annotations

from collections.abc import Mapping

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.sync.client import ClientConnection, connect

from x2.base.errors import PolicyError, one_line
from x2.policy.protocol import (
    ACTIONS,
    FINALIZE,
    INITIALIZE,
    OP_KEY,
    EpisodeEndMessage,
    EpisodeStartMessage,
    ObservationMessage,
    PolicyFault,
    Received,
    ServiceInfo,
)
from x2.policy.wire import pack, unpack


def _closed(exc: ConnectionClosed) -> str:
    frame = exc.rcvd or exc.sent
    if frame is None:
        return "the connection closed without a closing handshake"
    return f"the connection closed with code {frame.code}" + (f" ({frame.reason})" if frame.reason else "")


def _last_line(trace: str) -> str:
    """A traceback's last line names the exception; that is what a report can show in one line."""
    lines = [line.strip() for line in trace.strip().splitlines() if line.strip()]
    return one_line(lines[-1]) if lines else "(an empty error message)"


class RemotePolicy:
    """A PolicyClient for the service at `url` (ws://HOST:PORT); `timeout_s` bounds every wait for it."""

    def __init__(self, url: str, timeout_s: float = 30.0):
        self.url, self.timeout_s = url, timeout_s
        try:
            self._ws: ClientConnection | None = None
            self._metadata = self._open()
        except PolicyFault as fault:
            detail = fault.detail or fault.reason
            where = "" if url in detail else f" at {url}"
            raise PolicyError(one_line(f"policy service{where}: {detail} (is the service running? x2 serve "
                                       "KIND --port PORT starts one)")) from None
        self._info = ServiceInfo.from_metadata(self._metadata)

    @property
    def info(self) -> ServiceInfo:
        return self._info

    @property
    def metadata(self) -> dict[str, object]:
        """The service's metadata as it sent it (x2's part is `info`)."""
        return self._metadata

    def _open(self) -> dict[str, object]:
        """Connect and read the metadata; PolicyFault("connection lost") when the service is not there."""
        try:
            # close_timeout: dropping a connection to a hung service must not wait out websockets' 10 s
            opened = connect(self.url, compression=None, max_size=None, open_timeout=self.timeout_s,
                             close_timeout=min(self.timeout_s, 1.0))
        except (OSError, InvalidHandshake, InvalidURI, TimeoutError) as exc:
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
            raise PolicyFault("connection lost", f"cannot connect to {self.url}: {detail}") from None
        # entered as websockets (17.1 on) wants a connection held: _drop() closes it
        self._ws = opened.__enter__()
        metadata = self._receive(f"the metadata from {self.url}")
        if not isinstance(metadata, dict):
            self._drop()
            raise PolicyFault("malformed", f"{self.url} sent metadata that is no map: {type(metadata).__name__}")
        return metadata

    def _connection(self) -> ClientConnection:
        if self._ws is None:
            metadata = self._open()
            if pack(metadata) != pack(self._metadata):  # another service took the port: its answers mean other things
                self._drop()
                raise PolicyFault("malformed", f"{self.url} answered a reconnect with other metadata")
        assert self._ws is not None
        return self._ws

    def _drop(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            ws.close()

    def _receive(self, what: str) -> object:
        assert self._ws is not None
        try:
            message = self._ws.recv(timeout=self.timeout_s)
        except TimeoutError:
            self._drop()  # the answer may still come: this connection must never be read again
            raise PolicyFault("timeout", f"no answer in {self.timeout_s:g} s waiting for {what}") from None
        except ConnectionClosed as exc:
            self._drop()
            raise PolicyFault("connection lost", f"{_closed(exc)} waiting for {what}") from None
        if isinstance(message, str):  # the service's traceback; it closes the connection after it
            self._drop()
            raise PolicyFault("service error", _last_line(message))
        try:
            return unpack(message)
        except ValueError as exc:
            self._drop()
            raise PolicyFault("malformed", one_line(f"{what}: {exc}")) from None

    def _ask(self, message: Received, what: str) -> object:
        ws = self._connection()
        try:
            data = pack(message)
        except (TypeError, ValueError) as exc:  # x2's own observation could not be sent: a bug, not the service's
            raise ValueError(f"cannot pack {what}: {exc}") from exc
        try:
            ws.send(data)
        except ConnectionClosed as exc:
            self._drop()
            raise PolicyFault("connection lost", f"{_closed(exc)} sending {what}") from None
        return self._receive(f"the answer to {what}")

    def infer(self, obs: ObservationMessage) -> Received:
        answer = self._ask(obs, "an observation")
        if not isinstance(answer, Mapping) or ACTIONS not in answer:
            self._drop()
            found = f"a map with keys {sorted(map(str, answer))}" if isinstance(answer, Mapping) \
                else type(answer).__name__
            raise PolicyFault("malformed", f"an answer needs {ACTIONS!r}; found {found}")
        return dict(answer)

    def _lifecycle(self, op: str, body: EpisodeStartMessage | EpisodeEndMessage) -> None:
        answer = self._ask({**body, OP_KEY: op}, op)
        if not (isinstance(answer, Mapping) and answer.get("ok") is True):
            self._drop()
            raise PolicyFault("malformed", one_line(f"{op} needs the answer {{'ok': True}}; found {answer!r}"[:300]))

    def initialize_episode(self, episode: EpisodeStartMessage) -> None:
        """Tell an x2 service what the episode is; a stock openpi server hears nothing of it. Either way a
        connection dropped by the last episode's fault is opened again here, before the episode's first step."""
        if self._info.lifecycle:
            self._lifecycle(INITIALIZE, episode)
        else:
            self._connection()

    def finalize_episode(self, result: EpisodeEndMessage) -> None:
        if self._info.lifecycle:
            self._lifecycle(FINALIZE, result)

    def close(self) -> None:
        self._drop()

    def __enter__(self) -> RemotePolicy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
