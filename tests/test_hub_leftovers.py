"""What a hub leaves behind on the machine, read by the next one: the proxy's pid file
(signalled only when it names the very proxy the hub started) and the socket folder
under /run/course-hub (removed once the hub stopped, unless a hub still answers there).
"""
import json
import os
import shutil
import socket
import subprocess
import time

import pytest

from deploy.hub import proxy
from scripts import hub
from scripts.hub import remove_sockets
from tests.processes import free_port


def _proxy(pid_file):
    """The hub's proxy object, as jupyterhub_config.py configures it."""
    return proxy.CourseProxy(pid_file=str(pid_file), command=proxy.command(),
                             api_url=f"http://127.0.0.1:{free_port()}",
                             public_url=f"http://127.0.0.1:{free_port()}")


def _check(pid_file):
    """What a starting hub does with the pid file it finds."""
    _proxy(pid_file)._check_previous_process()


def _records(pid):
    """What a pid file naming the process ``pid`` may hold: JupyterHub's bare pid (an older
    hub's file, a restored backup's), the process's true identity (not the proxy's
    command), a forged proxy identity (its start is not the process's), and records
    from another boot or another start."""
    true = proxy.identity(pid)
    forged = dict(true, cmdline=proxy.command() + ["--ip", "127.0.0.1"])
    return {"bare pid": str(pid), "bare pid, newline": f"{pid}\n", "true identity": json.dumps(true),
            "proxy's command": json.dumps(forged),
            "other boot": json.dumps(dict(forged, cmdline=true["cmdline"], boot="0" * 36)),
            "other start": json.dumps(dict(true, start=true["start"] + 1)),
            "not a record": json.dumps([pid])}


def test_a_pid_file_naming_another_process_never_signals_it(tmp_path):
    bystander = subprocess.Popen(["sleep", "300"])  # what has the pid on this machine now
    try:
        for name, text in _records(bystander.pid).items():
            pid_file = tmp_path / "proxy.pid"
            pid_file.write_text(text)
            _check(pid_file)
            time.sleep(0.1)
            assert bystander.poll() is None, f"{name}: the process was signalled"
            assert not pid_file.exists(), name  # not left for the next start either
    finally:
        bystander.kill()
        bystander.wait()


def test_the_proxy_a_hub_left_running_is_still_stopped(tmp_path):
    """A hub killed without stopping its proxy: the next start stops that very proxy."""
    ports = [str(free_port()), str(free_port())]
    left = subprocess.Popen(proxy.command() + ["--ip", "127.0.0.1", "--port", ports[0],
                                               "--api-ip", "127.0.0.1", "--api-port", ports[1]],
                            env=dict(os.environ, CONFIGPROXY_AUTH_TOKEN="t"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        earlier = _proxy(tmp_path / "proxy.pid")
        earlier.proxy_process = left
        earlier._write_pid_file()
        assert (tmp_path / "proxy.pid").stat().st_mode & 0o777 == 0o600
        _check(tmp_path / "proxy.pid")
        assert left.wait(timeout=10) is not None
        assert not (tmp_path / "proxy.pid").exists()
    finally:
        left.kill()
        left.wait()


def _socket(path, listen):
    """A UNIX socket file at ``path``: listened on (returned open) or stale (closed)."""
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    if listen:
        sock.listen()
        return sock
    sock.close()
    return None


@pytest.mark.parametrize("live", [None, "hub.sock", "grader.sock"])
def test_a_stopped_hubs_socket_folder_is_removed_unless_a_hub_answers_there(tmp_path, live):
    folder = tmp_path / "0123456789ab"
    (folder / "ann").mkdir(parents=True)
    opened = [_socket(folder / n, n == live) for n in ("hub.sock", "grader.sock")]
    _socket(folder / "ann" / "server.sock", False)
    try:
        assert remove_sockets(folder) is (live is None)
        assert folder.exists() is (live is not None)
    finally:
        for sock in filter(None, opened):
            sock.close()


def test_a_second_hub_says_the_first_is_there_and_starts_nothing(monkeypatch, tmp_path, capsys):
    """Its own API port taken (by a listener of any kind) or its state folder's sockets
    answering: ``make hub`` says so and starts no JupyterHub, never "running" for another."""
    started = []
    monkeypatch.setattr(hub.subprocess, "Popen", lambda *a, **k: started.append(a))
    monkeypatch.setenv("HUB_STATE", str(tmp_path / "state"))
    with socket.create_server(("127.0.0.1", 0)) as listener:
        monkeypatch.setenv("HUB_API_PORT", str(listener.getsockname()[1]))
        assert hub.main() == 1
    assert "already listens on the hub's port" in capsys.readouterr().err
    monkeypatch.setenv("HUB_API_PORT", str(free_port()))
    folder = hub.socket_folder(str(tmp_path / "state"))  # under /run/course-hub: removed
    folder.mkdir(mode=0o711, parents=True)
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(folder / "hub.sock"))
            sock.listen()
            assert hub.main() == 1
    finally:
        shutil.rmtree(folder)
    assert "already answers in" in capsys.readouterr().err
    assert started == []
