"""The policy wire (x2.policy.wire, .server, .client): openpi's msgpack encoding byte for byte, x2's server
driven by openpi's own client, x2's client driving a stock openpi-like server, and every way a service can
fail to answer ending as its PolicyFault. openpi_client runs in its own small environment (it pins numpy < 2):
X2_OPENPI_PYTHON, which the Makefile builds and sets.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import textwrap
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.toy_policy import ToyService
from websockets.sync.server import ServerConnection, serve

from x2.base.errors import PolicyError
from x2.policy.client import RemotePolicy
from x2.policy.protocol import OP_KEY, PolicyFault
from x2.policy.server import PolicyServer
from x2.policy.wire import pack, unpack

START_S = 30.0  # only so a broken build fails instead of hanging

# The same sample, built by the same code in both environments (numpy 1.x there, x2's numpy here).
SAMPLE = textwrap.dedent("""
    import numpy as np
    sample = {
        "observation.state": np.arange(7, dtype=np.float32) / 3,
        "observation.images.front": np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3),
        "x2.sim_state": np.linspace(-1, 1, 5, dtype=np.float64),
        "mask": np.array([[True, False], [False, True]]),
        "big": np.array([2**40, -3], dtype=np.int64),
        "empty": np.zeros((0, 7), dtype=np.float32),
        "transposed": np.arange(6, dtype=np.int16).reshape(2, 3).T,
        "zero_d": np.array(3.5, dtype=np.float16),
        "scalars": [np.float32(1.25), np.int64(-7), np.bool_(True), np.uint8(200)],
        "prompt": "put the fruit in the microwave", "raw": b"\\x00\\x01", "tick": 12, "none": None,
        "nested": {"list": [1, 2.5, "three", [np.arange(2, dtype=np.int32)]]},
    }
""")


def _sample() -> dict[str, Any]:
    space: dict[str, Any] = {}
    exec(SAMPLE, space)
    return space["sample"]


def assert_same(found: Any, expected: Any, where: str = "") -> None:
    """Equal values of the same types, arrays of the same dtype and shape (tuples arrive as lists)."""
    if isinstance(expected, np.ndarray | np.generic):
        assert type(found) is type(expected), where
        assert found.dtype == expected.dtype and np.shape(found) == np.shape(expected), where
        assert np.array_equal(found, expected), where
    elif isinstance(expected, dict):
        assert isinstance(found, dict) and found.keys() == expected.keys(), where
        for key in expected:
            assert_same(found[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list | tuple):
        assert isinstance(found, list) and len(found) == len(expected), where
        for i, (f, e) in enumerate(zip(found, expected, strict=True)):
            assert_same(f, e, f"{where}[{i}]")
    else:
        assert type(found) is type(expected) and found == expected, where


def openpi_python() -> str:
    python = os.environ.get("X2_OPENPI_PYTHON")
    if not python:
        pytest.skip("X2_OPENPI_PYTHON is unset: the Makefile sets it to its openpi-client environment (.venv/openpi)")
    if not Path(python).exists():
        pytest.fail(f"no openpi-client environment at {python}: `make venv` builds it (.venv/openpi)")
    return python


def run_openpi(script: str, *args: str) -> str:
    done = subprocess.run([openpi_python(), "-c", script, *args], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return done.stdout


# ---- the encoding -----------------------------------------------------------------------------------------
def test_round_trip_keeps_values_dtypes_and_shapes() -> None:
    sample = _sample()
    found = unpack(pack(sample))
    assert_same(found, sample)
    found["observation.state"][0] = 5.0  # the receiver may write into what it got


@pytest.mark.parametrize("refused", [np.array([object(), 1], dtype=object), np.zeros(2, dtype=np.complex64),
                                     np.complex128(1j), np.zeros(2, dtype=[("a", "f4")])])
def test_object_void_and_complex_values_are_refused(refused: Any) -> None:
    with pytest.raises(ValueError, match="refused"):
        pack({"x": refused})


def test_bytes_that_are_no_message_are_a_value_error() -> None:
    with pytest.raises(ValueError):
        unpack(b"\xc1")
    with pytest.raises(ValueError):
        unpack(pack({b"__ndarray__": True, b"data": b"\0" * 3, b"dtype": "<f4", b"shape": [1]}))


def test_openpi_packs_what_x2_unpacks_and_the_bytes_are_x2s(tmp_path: Path) -> None:
    out = tmp_path / "openpi.msgpack"
    run_openpi(SAMPLE + "from openpi_client import msgpack_numpy\n"
               "import sys; open(sys.argv[1], 'wb').write(msgpack_numpy.packb(sample))\n", str(out))
    theirs = out.read_bytes()
    assert_same(unpack(theirs), _sample())
    assert pack(_sample()) == theirs


def test_x2_packs_what_openpi_unpacks(tmp_path: Path) -> None:
    (tmp_path / "x2.msgpack").write_bytes(pack(_sample()))
    run_openpi(SAMPLE + textwrap.dedent("""
        import sys
        from openpi_client import msgpack_numpy
        found = msgpack_numpy.unpackb(open(sys.argv[1], "rb").read())
        def same(f, e, where):
            if isinstance(e, (np.ndarray, np.generic)):
                assert type(f) is type(e) and f.dtype == e.dtype and np.shape(f) == np.shape(e), where
                assert np.array_equal(f, e), where
            elif isinstance(e, dict):
                assert f.keys() == e.keys(), where
                [same(f[k], e[k], where + "." + k) for k in e]
            elif isinstance(e, (list, tuple)):
                assert len(f) == len(e), where
                [same(a, b, where + str(i)) for i, (a, b) in enumerate(zip(f, e))]
            else:
                assert type(f) is type(e) and f == e, (where, f, e)
        same(found, sample, "")
    """), str(tmp_path / "x2.msgpack"))


# ---- x2's server ------------------------------------------------------------------------------------------
@pytest.fixture
def toy() -> ToyService:
    return ToyService()


@pytest.fixture
def server(toy: ToyService) -> Iterator[PolicyServer]:
    with PolicyServer(toy) as running:
        thread = threading.Thread(target=running.serve_forever, daemon=True)
        thread.start()
        yield running
        toy.release.set()  # (a blocked call ends, so the shutdown below waits for nothing)
    thread.join(START_S)


def test_openpi_client_gets_the_metadata_and_an_answer_from_x2s_server(server: PolicyServer) -> None:
    out = run_openpi(textwrap.dedent("""
        import json, sys
        import numpy as np
        from openpi_client.websocket_client_policy import WebsocketClientPolicy
        policy = WebsocketClientPolicy(host="127.0.0.1", port=int(sys.argv[1]))
        answer = policy.infer({"observation.state": np.arange(3, dtype=np.float32), "x2.tick": 4,
                               "prompt": "pick"})
        actions = answer["actions"]
        print(json.dumps({"metadata": policy.get_server_metadata(), "actions": actions.tolist(),
                          "dtype": str(actions.dtype), "tick": answer["tick"]}))
    """), str(server.port))
    got = json.loads(out)
    assert got["metadata"]["x2"]["identity"] == "toy" and got["metadata"]["note"] == "from the test"
    assert got["actions"] == [0.0, 2.0, 4.0] and got["dtype"] == "float32" and got["tick"] == 4


def test_remote_policy_runs_episodes_through_the_lifecycle(server: PolicyServer, toy: ToyService) -> None:
    with RemotePolicy(server.url, timeout_s=START_S) as policy:
        assert policy.info.lifecycle and policy.info.identity == "toy" and policy.metadata["note"] == "from the test"
        policy.initialize_episode({"seed": 3, "task": "pick_place"})
        answer = policy.infer({"observation.state": np.ones(2, np.float32), "x2.tick": 0})
        assert_same(answer["actions"], np.full(2, 2, np.float32))
        policy.finalize_episode({"success": True})
    assert toy.episodes == [("initialize", {"seed": 3, "task": "pick_place"}), ("finalize", {"success": True})]


def test_the_server_answers_health_checks(server: PolicyServer) -> None:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/healthz", timeout=START_S) as response:
        assert response.status == 200


def test_a_service_that_raises_is_a_service_error_then_the_next_episode_works(server: PolicyServer) -> None:
    with RemotePolicy(server.url, timeout_s=START_S) as policy:
        with pytest.raises(PolicyFault) as fault:
            policy.infer({"raise": "no gripper"})
        assert fault.value.reason == "service error"
        assert fault.value.detail == "ValueError: the toy policy refuses: no gripper"
        policy.initialize_episode({"seed": 1})
        assert policy.infer({"observation.state": np.zeros(1)})["actions"].tolist() == [0.0]


def test_a_timeout_leaves_no_stale_answer_for_the_next_episode(server: PolicyServer, toy: ToyService) -> None:
    with RemotePolicy(server.url, timeout_s=0.5) as policy:
        with pytest.raises(PolicyFault) as fault:
            policy.infer({"block": True, "observation.state": np.zeros(1), "x2.tick": 1})
        assert fault.value.reason == "timeout"
        toy.release.set()  # the late answer (tick 1) goes to the connection the client dropped
        policy.timeout_s = START_S
        policy.initialize_episode({"seed": 2})
        assert policy.infer({"observation.state": np.ones(1), "x2.tick": 2})["tick"] == 2


@pytest.mark.parametrize("answer, found", [({"action": [1.0]}, "keys ['action']"), ([1, 2], "list")])
def test_an_answer_without_actions_is_malformed(server: PolicyServer, answer: Any, found: str) -> None:
    with RemotePolicy(server.url, timeout_s=START_S) as policy, pytest.raises(PolicyFault) as fault:
        policy.infer({"answer": answer})
    assert fault.value.reason == "malformed" and found in fault.value.detail


def test_shutdown_does_not_wait_for_a_stuck_policy(toy: ToyService) -> None:
    running = PolicyServer(toy)
    serving = threading.Thread(target=running.serve_forever, daemon=True)
    serving.start()
    policy = RemotePolicy(running.url, timeout_s=START_S)
    asking = threading.Thread(target=lambda: pytest.raises(PolicyFault, policy.infer, {"block": True}), daemon=True)
    asking.start()
    stopping = threading.Thread(target=running.shutdown, daemon=True)
    stopping.start()
    stopping.join(START_S)
    try:
        assert not stopping.is_alive(), "shutdown waited for the policy's call"
        asking.join(START_S)
        assert not asking.is_alive()
    finally:
        toy.release.set()
        policy.close()


# ---- x2's client against other servers -------------------------------------------------------------------
class StockServer:
    """openpi's server as it is: metadata, then one answer per message, no lifecycle. `behave` may answer
    otherwise: close the connection, or send bytes that are no message."""

    def __init__(self, behave: str = "stock"):
        self.behave, self.heard = behave, []
        self._server = serve(self._handle, "127.0.0.1", 0, compression=None, max_size=None)
        self.url = f"ws://127.0.0.1:{self._server.socket.getsockname()[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def _handle(self, connection: ServerConnection) -> None:
        connection.send(pack({"server": "stock"}))
        for message in connection:
            obs = unpack(message)
            self.heard.append(obs)
            if self.behave == "close":
                return
            connection.send(b"\xc1" if self.behave == "garbage" else pack({"actions": obs["observation.state"]}))


def test_remote_policy_sends_a_stock_openpi_server_only_observations() -> None:
    stock = StockServer()
    with RemotePolicy(stock.url, timeout_s=START_S) as policy:
        assert not policy.info.lifecycle and policy.info.kind == "remote" and policy.metadata == {"server": "stock"}
        policy.initialize_episode({"seed": 0})
        answer = policy.infer({"observation.state": np.arange(3.0)})
        policy.finalize_episode({"success": False})
    assert_same(answer["actions"], np.arange(3.0))
    assert not any(OP_KEY in obs for obs in stock.heard) and len(stock.heard) == 1
    stock._server.shutdown()


@pytest.mark.parametrize("behave, reason", [("close", "connection lost"), ("garbage", "malformed")])
def test_a_server_that_closes_or_sends_garbage_is_a_fault(behave: str, reason: str) -> None:
    stock = StockServer(behave)
    with RemotePolicy(stock.url, timeout_s=START_S) as policy, pytest.raises(PolicyFault) as fault:
        policy.infer({"observation.state": np.zeros(1)})
    assert fault.value.reason == reason
    stock._server.shutdown()


def test_no_service_at_the_url_is_one_line_naming_it() -> None:
    with socket.socket() as placeholder:  # a port that was free a moment ago and has nobody listening
        placeholder.bind(("127.0.0.1", 0))
        url = f"ws://127.0.0.1:{placeholder.getsockname()[1]}"
    with pytest.raises(PolicyError) as error:
        RemotePolicy(url, timeout_s=START_S)
    assert url in str(error.value) and "\n" not in str(error.value)
