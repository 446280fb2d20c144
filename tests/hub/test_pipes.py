"""The pipes the hub serves to learners' servers (``hub.sock``, ``grader.sock``:
``learner_net.serve_pipe``) run in the hub's own process, so what a learner holds there
is the hub's: a learner's connections beyond her cap are closed at once while another
learner's still go through, idle connections are closed, and a flood against a hub with
few descriptors leaves it serving with a short log, never an accept loop failing on
EMFILE. (Through a real hub: tests/hub/test_pipe_flood.py.)"""
from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from deploy.hub import learner_net

SYSTEM_PYTHON = "/usr/bin/python3"


async def _echo_server():
    async def echo(reader, writer):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        writer.close()
    return await asyncio.start_server(echo, "127.0.0.1", 0)


async def _answers(path, timeout=2.0):
    """Connect to ``path``, send a byte: whether it comes back (False: closed on us)."""
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write(b"x")
    await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(1), timeout) == b"x", (reader, writer)
    except (ConnectionError, TimeoutError):
        return False, (reader, writer)


def test_idle_connections_are_closed_busy_ones_kept(tmp_path):
    async def run():
        echo = await _echo_server()
        port = echo.sockets[0].getsockname()[1]
        path = str(tmp_path / "hub.sock")
        await learner_net.serve_pipe(path, "127.0.0.1", port, learner_net.Caps(total=10),
                                     idle_s=0.5)
        idle_ok, (idle, idle_w) = await _answers(path)  # (held: dropped, it would close)
        busy_ok, (busy, busy_w) = await _answers(path)
        assert idle_ok and busy_ok
        for _ in range(8):  # 1.6 s, a byte every 0.2 s
            await asyncio.sleep(0.2)
            busy_w.write(b"y")
            assert await busy.read(1) == b"y"
        assert await asyncio.wait_for(idle.read(1), 1) == b""  # closed by the pipe
        busy_w.close()
        idle_w.close()
        await asyncio.sleep(0.1)
    asyncio.run(run())


@pytest.mark.skipif(os.geteuid() != 0, reason="a second learner is a second uid (root)")
def test_a_learner_over_her_cap_is_closed_another_goes_through():
    folder = tempfile.mkdtemp()  # (pytest's tmp_path is root's only)
    os.chmod(folder, 0o755)

    async def run():
        echo = await _echo_server()
        port = echo.sockets[0].getsockname()[1]
        path = os.path.join(folder, "hub.sock")
        await learner_net.serve_pipe(path, "127.0.0.1", port, learner_net.Caps(per_learner=3))
        tries = [await _answers(path) for _ in range(6)]  # all from this uid, held open
        assert [ok for ok, _ in tries] == [True] * 3 + [False] * 3
        other = await asyncio.create_subprocess_exec(
            "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", SYSTEM_PYTHON, "-c",
            "import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
            "s.sendall(b'z'); print(s.recv(1))", path, stdout=asyncio.subprocess.PIPE)
        said, _ = await asyncio.wait_for(other.communicate(), 30)
        assert said.strip() == b"b'z'"
        for _, (_, writer) in tries:
            writer.close()
        await asyncio.sleep(0.1)
    try:
        asyncio.run(run())
    finally:
        shutil.rmtree(folder)


FLOOD = r"""
import asyncio, logging, resource, sys
from deploy.hub import learner_net
resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[2]), int(sys.argv[2])))
logging.basicConfig(level=logging.INFO)

async def main():
    async def echo(reader, writer):
        while data := await reader.read(65536):
            writer.write(data); await writer.drain()
        writer.close()
    far = await asyncio.start_server(echo, "127.0.0.1", 0)
    # one uid here (the test's): its own cap lifted, to meet the cap of all together
    caps = learner_net.Caps(per_learner=10**6)
    await learner_net.serve_pipe(sys.argv[1], "127.0.0.1", far.sockets[0].getsockname()[1], caps)
    print("ready", flush=True)
    await asyncio.sleep(3600)
asyncio.run(main())
"""


def test_a_flood_leaves_a_hub_with_few_descriptors_serving(tmp_path):
    """A pipe in a process allowed 1,024 descriptors (the cap of all connections together:
    1024 / 4 / 3 = 85): 3,000 connections at once, held. No more than 85 stay open, the
    process never ran out of descriptors, used little CPU meanwhile (no accept loop
    spinning on EMFILE), logged a line or two, and serves again once they end."""
    path = str(tmp_path / "hub.sock")
    server = subprocess.Popen([sys.executable, "-c", FLOOD, path, "1024"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "ready"
        cpu_before = _cpu_s(server.pid)
        held = []
        deadline = time.monotonic() + 60
        for _ in range(3000):
            held.append(_connect(path, deadline))
        time.sleep(2)
        open_ones = 0
        for conn in held:
            conn.setblocking(False)
            try:
                open_ones += conn.recv(1) != b""
            except BlockingIOError:
                open_ones += 1  # nothing to read: still open
            except ConnectionError:
                pass
        assert open_ones <= 85, open_ones
        assert _cpu_s(server.pid) - cpu_before < 2.0
        for conn in held:
            conn.close()
        time.sleep(0.5)
        with socket.socket(socket.AF_UNIX) as conn:
            conn.settimeout(5)
            conn.connect(path)
            conn.sendall(b"q")
            assert conn.recv(1) == b"q"
    finally:
        server.kill()
        _, log = server.communicate()
    assert len(log.splitlines()) <= 3 and "Traceback" not in log, log[-3000:]


def _cpu_s(pid):
    """User plus system CPU seconds of process ``pid`` so far."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _connect(path, deadline):
    """A connection to ``path``, retried while its backlog is full (a process out of
    descriptors accepts nothing for a while) until ``deadline`` (``time.monotonic()``)."""
    while True:
        conn = socket.socket(socket.AF_UNIX)
        conn.setblocking(False)
        try:
            conn.connect(path)
            return conn
        except BlockingIOError:
            conn.close()
            assert time.monotonic() < deadline, "the pipe stopped accepting"
            time.sleep(0.01)
