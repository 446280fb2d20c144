"""The proxy's pid file as a real JupyterHub reads it at start, with the course's hub
configuration (``deploy/hub/jupyterhub_config.py``; its services left out, so no course
is needed): a proxy an earlier hub left running is stopped, and a pid file naming any
other process (what a restored backup of an older version put back) signals nothing.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import requests

from autograder.defaults import CHECKOUT as REPO
from deploy.hub import proxy
from tests.processes import free_port, stop_process

WAIT_S = 120  # give-up time for a hub to start, not a timing assertion
CONFIG = f"""
load_subconfig({str(REPO / "deploy" / "hub" / "jupyterhub_config.py")!r})
c.JupyterHub.services = []  # the course's site and grader: not what this test is about
c.JupyterHub.load_roles = [r for r in c.JupyterHub.load_roles if not r.get("services")]
c.JupyterHub.default_url = "/hub/home"
"""


def _start(tmp_path, ports):
    """A hub with the course's configuration on ``ports``; returns it once its proxy
    answers."""
    (tmp_path / "config.py").write_text(CONFIG)
    env = dict(os.environ, HUB_STATE=str(tmp_path / "state"), PORT=str(ports[0]),
               HUB_API_PORT=str(ports[1]), PROXY_API_PORT=str(ports[2]))
    hub = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(tmp_path / "config.py")],
                           cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                           stderr=open(tmp_path / "hub.log", "ab"), start_new_session=True)
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        try:
            requests.get(f"http://127.0.0.1:{ports[0]}/hub/api", timeout=5).raise_for_status()
            return hub
        except requests.RequestException:
            if hub.poll() is not None:
                break
            time.sleep(0.5)
    stop_process(hub)
    pytest.fail("the hub did not start:\n" + (tmp_path / "hub.log").read_text()[-3000:])


def _alive(pid):
    return proxy.identity(pid) is not None and \
        not open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"


def test_a_hub_stops_its_leftover_proxy_and_signals_no_other_process(tmp_path):
    ports = [free_port(), free_port(), free_port()]
    pid_file = tmp_path / "state" / "proxy.pid"
    first = _start(tmp_path, ports)
    try:
        left = json.loads(pid_file.read_text())
        assert left == proxy.identity(left["pid"]) and pid_file.stat().st_mode & 0o777 == 0o600
    except BaseException:
        stop_process(first)  # and its proxy: nothing of a failed test runs on
        raise
    first.send_signal(signal.SIGKILL)  # the hub dies; its proxy runs on
    first.wait()
    assert _alive(left["pid"])

    second = _start(tmp_path, ports)  # would fail to listen if the leftover still ran
    try:
        assert not _alive(left["pid"])
        mine = json.loads(pid_file.read_text())
        assert mine["pid"] != left["pid"] and _alive(mine["pid"])
    finally:
        stop_process(second)  # a hub stopped as usual stops its proxy
    assert not _alive(mine["pid"]) and not pid_file.exists()

    bystander = subprocess.Popen(["sleep", "300"])
    try:
        for text in (str(bystander.pid), json.dumps(proxy.identity(bystander.pid))):
            pid_file.write_text(text)  # as a restored backup of an older version holds it
            third = _start(tmp_path, ports)
            stop_process(third)
            assert bystander.poll() is None, text
    finally:
        bystander.kill()
        bystander.wait()
