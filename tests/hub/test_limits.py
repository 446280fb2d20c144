"""A learner's server is bounded as a whole, whatever she runs in it: memory (one process
and several together), processes, CPU and her home's disk, each tried as she would, from a
terminal of her own JupyterLab, on a hub with small limits. Beside her worst, a classmate
signs in, submits and gets her score: each step timed against the same steps on a quiet
hub, within a stated slowdown, nothing refused. The same beside her client holding
hundreds of polls through the hub's proxy.

Measured here (2 shared cores, a cgroup v1 hybrid host, ``HUB_CPUS=1``): a classmate's
sign-in took 0.3-0.4 s quiet and 0.2-0.3 s beside a learner at her CPU cap, her memory
and her process limits; submission to score 0.6-1.2 s quiet and 1.1 s beside her; beside
her 200 held polls, 0.3-0.6 s and 0.5-1.2 s (the test allows 3 times the quiet time plus
10 s: the machine is shared with other test runs).
"""
from __future__ import annotations

import asyncio
import json
import re
import subprocess
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
import requests
from tornado.httpclient import HTTPRequest
from tornado.simple_httpclient import HTTPTimeoutError
from tornado.websocket import websocket_connect

from autograder.defaults import HUB_MAX_HELD_PER_LEARNER
from tests.grading.helpers import SAMPLES, released_notebook, with_answer
from tests.hub.accounts import unmount_home
from tests.hub.running import Signed, running_hub
from tests.hub.test_attacks import start_server
from tests.hub.test_class_browser import server_pid
from tests.hub.test_learner_network import through_proxy

LIMITS = {"HUB_MEMORY_MIB": "256", "HUB_PROCESSES": "128", "HUB_HOME_MIB": "64",
          "HUB_CPUS": "1"}
DONE = "@DONE$((6*7))@"  # what the shell prints (@DONE42@), not what it echoes as typed


@pytest.fixture(scope="module")
def limited(accounts, released_course, tmp_path_factory):
    """A hub with :data:`LIMITS`; eve (``bob``'s account) with her server running:
    ``(hub, eve, her server)``."""
    made, _ = accounts
    # a home stays mounted once a hub mounted it: another module's hub left bob's of its
    # own size (HUB_HOME_MIB), which this one would keep; and this one's must not outlive it
    unmount_home(made["bob"].name)
    try:
        with running_hub(accounts, released_course, tmp_path_factory.mktemp("limited"),
                         **LIMITS) as hub:
            eve = Signed(hub, made["bob"])
            yield hub, eve, start_server(eve)
    finally:
        unmount_home(made["bob"].name)


def in_terminal(limited, command, timeout=180):
    """Type ``command`` into a new terminal of eve's JupyterLab; what it printed until it
    ended (the shell's echo of the command included)."""
    hub, eve, server = limited
    auth = {"Authorization": f"token {eve.token}"}
    url, headers = through_proxy(hub, server, "api/terminals")
    made = requests.post("http://" + url, headers={**headers, **auth}, timeout=60)
    assert made.ok, made.text
    url, headers = through_proxy(hub, server, f"terminals/websocket/{made.json()['name']}")
    return asyncio.run(_typed("ws://" + url, {**headers, **auth}, command, timeout))


async def _typed(url, headers, command, timeout):
    conn = await websocket_connect(HTTPRequest(url, headers=headers, connect_timeout=60))
    conn.write_message(json.dumps(["stdin", f"{command}; echo {DONE}\r"]))
    seen = ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and "@DONE42@" not in seen:
        message = await asyncio.wait_for(conn.read_message(), deadline - time.monotonic())
        if message is None:
            break
        kind, *data = json.loads(message)
        seen += "".join(str(d) for d in data) if kind == "stdout" else ""
    conn.close()
    assert "@DONE42@" in seen, seen[-2000:]
    return seen


def her_server_answers(limited):
    hub, eve, server = limited
    url, headers = through_proxy(hub, server, "api/status")
    reply = requests.get("http://" + url, timeout=30,
                         headers={**headers, "Authorization": f"token {eve.token}"})
    return reply.ok


def classmate_seconds(hub, account, notebook):
    """Seconds for ``account`` to sign in, then to submit ``notebook`` and get its score
    (which must be 10): ``(sign-in, submit to score)``."""
    start = time.monotonic()
    ada = Signed(hub, account)
    signed = time.monotonic()
    done = ada.wait_done(ada.submit(notebook))
    assert done["result"]["score"] == 10, done
    return signed - start, time.monotonic() - signed


def test_one_process_past_her_memory_limit_is_killed_and_her_server_lives(limited):
    said = in_terminal(limited, "python3 -c \"b = b'x' * (400 * 2**20)\"; echo status=$?")
    assert re.search(r"status=137\b", said), said[-2000:]  # SIGKILL: the kernel's, at 256 MiB
    assert her_server_answers(limited)


def test_several_processes_together_past_her_memory_limit(limited):
    """Three processes of 120 MiB, each under the limit, together over it."""
    hold = "python3 -c \"import time; b = b'x' * (120 * 2**20); time.sleep(4)\""
    said = in_terminal(limited, f"for i in 1 2 3; do ({hold}; echo status$i=$?) & done; wait")
    codes = re.findall(r"status\d=(\d+)", said)
    assert len(codes) == 3 and "137" in codes, said[-2000:]
    assert her_server_answers(limited)


def test_many_processes_are_refused_past_her_limit(limited):
    said = in_terminal(limited, _python(fork_code(5)))
    started = int(re.search(r"started (\d+)", said).group(1))
    assert started < 128, said[-2000:]
    assert her_server_answers(limited)


def fork_code(seconds):
    """Python that forks up to 400 processes, each sleeping ``seconds``; prints how many
    started, then waits for them."""
    return ("import os, time  # hogmark\n"
            "n = 0\n"
            "for _ in range(400):\n"
            "    try:\n"
            "        pid = os.fork()\n"
            "    except OSError:\n"
            "        break\n"
            "    if pid == 0:\n"
            f"        time.sleep({seconds})\n"
            "        os._exit(0)\n"
            "    n += 1\n"
            "print('started', n, flush=True)\n"
            "while True:\n"
            "    try:\n"
            "        os.wait()\n"
            "    except ChildProcessError:\n"
            "        break\n")


def _python(code):
    """A shell command that runs ``code`` with python3 (quoted for the terminal)."""
    return "python3 -c " + "'" + code.replace("'", "'\\''") + "'"


def test_her_home_is_bounded(limited):
    said = in_terminal(limited, "head -c 100M /dev/zero > ~/fill; echo status=$?; "
                                "du -sm ~/fill; df -m ~ | tail -1; rm -f ~/fill")
    assert "No space left on device" in said and re.search(r"status=1\b", said), said[-2000:]
    assert int(re.search(r"\n(\d+)\s+\S*fill", said).group(1)) <= 64, said[-2000:]
    hub = limited[0]
    image = Path(hub.env["HUB_STATE"]) / "homes" / f"{limited[1].name}.ext4"
    assert image.stat().st_blocks * 512 <= 64 * 2**20  # what the machine's disk holds of it


def test_the_folder_of_her_servers_socket_holds_little(limited):
    """The one folder of hers outside her home that her server needs: her server's socket's
    (on the machine's disk otherwise)."""
    sock = next(a.split("=", 1)[1] for a in psutil.Process(server_pid(limited[1].name)).cmdline()
                if a.startswith("--ServerApp.sock="))
    folder = str(Path(sock).parent)
    said = in_terminal(limited, f"head -c 20M /dev/zero > {folder}/fill; echo status=$?; "
                                f"du -sk {folder}/fill; rm -f {folder}/fill")
    assert "No space left on device" in said and re.search(r"status=1\b", said), said[-2000:]
    assert int(re.search(r"\n(\d+)\s+\S*fill", said).group(1)) <= 1024, said[-2000:]
    assert her_server_answers(limited)


def test_classmates_beside_her_worst(limited, accounts, released_course):
    """ada signs in, submits and is scored, on a quiet hub and again while eve's server
    runs at its CPU cap, holds memory at its limit and its processes at theirs."""
    hub, eve, server = limited
    made, _ = accounts
    notebook = with_answer(released_notebook(released_course),
                           (SAMPLES / "reference.py").read_text())
    quiet = classmate_seconds(hub, made["ada"], notebook)
    hogs = ("for i in 1 2 3 4; do timeout 90 sh -c 'while :; do :; done # hogmark' & done; "
            + _python(fork_code(90)) + " & "
            + "timeout 90 python3 -c \"import time; b = b'x' * (120 * 2**20); time.sleep(90)  "
            "# hogmark\" & sleep 3")
    in_terminal(limited, hogs)
    try:
        hers = [q for q in psutil.process_iter(["username", "cmdline"])
                if q.info["username"] == eve.name and "hogmark" in " ".join(q.info["cmdline"] or [])]
        assert len(hers) > 100, len(hers)  # her loops, her memory and her forks, running
        busy = classmate_seconds(hub, made["ada"], notebook)
    finally:  # from outside: her server may start no process now
        subprocess.run(["pkill", "-KILL", "-u", eve.name, "-f", "hogmark"], check=False)
    print(f"classmate sign-in {quiet[0]:.1f} s quiet, {busy[0]:.1f} s beside eve; "
          f"submit to score {quiet[1]:.1f} s quiet, {busy[1]:.1f} s beside eve")
    for calm, loaded in zip(quiet, busy):
        assert loaded <= 3 * calm + 10, (quiet, busy)


def test_a_kernel_killed_at_her_memory_limit_says_why_after_its_restart(limited):
    """In a notebook's kernel: a cell that touches more than her server may use. JupyterLab
    shows the kernel died and restarted; the next cell she runs says her server reached its
    memory limit, and of how much; the hub's log names her."""
    hub, eve, server = limited
    said = kernel_cells(hub, eve, server, ["b = b'x' * (400 * 2**20)", "print('after', 6 * 7)"])
    assert "restarting" in said[0], said
    assert "reached its memory limit of 256 MiB" in said[1] and "after 42" in said[1], said
    deadline = time.monotonic() + 90  # said at the hub's next poll of her server
    while f"{eve.name}'s server reached its memory limit (256 MiB)" not in hub.log_path.read_text():
        assert time.monotonic() < deadline, hub.log()
        time.sleep(2)


def kernel_cells(hub, learner, server, cells):
    """Run ``cells`` in a new kernel of ``learner``'s ``server``, through the hub's proxy
    with her token: what each said (:func:`_cells`)."""
    auth = {"Authorization": f"token {learner.token}"}
    url, headers = through_proxy(hub, server, "api/kernels")
    made = requests.post("http://" + url, headers={**headers, **auth}, json={"name": "python3"},
                         timeout=120)
    assert made.ok, made.text
    url, headers = through_proxy(hub, server, f"api/kernels/{made.json()['id']}/channels")
    return asyncio.run(_cells("ws://" + url, {**headers, **auth}, cells))


async def _cells(url, headers, cells):
    """Run each of ``cells`` in the kernel whose channels are at ``url``, as JupyterLab does
    (the next once the last is done, or once its kernel restarted): per cell, what its
    outputs said and the kernel states seen (text)."""
    conn = await _connect(url, headers)
    said = []
    try:
        for code in cells:
            msg_id = f"cell-{len(said)}"
            conn.write_message(json.dumps({
                "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "eve",
                           "session": "limits-test", "version": "5.3", "date": ""},
                "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
                "content": {"code": code, "silent": False, "store_history": True,
                            "user_expressions": {}, "allow_stdin": False,
                            "stop_on_error": True}}))
            seen, done = "", set()
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                message = await asyncio.wait_for(conn.read_message(), deadline - time.monotonic())
                assert message is not None, seen
                msg = json.loads(message)
                kind, content = msg["header"]["msg_type"], msg["content"]
                if kind == "status" and content["execution_state"] in ("restarting", "dead"):
                    seen += f"[{content['execution_state']}]"
                elif kind == "stream" and msg["parent_header"].get("msg_id") == msg_id:
                    seen += content["text"]
                elif kind == "execute_reply" and msg["parent_header"].get("msg_id") == msg_id:
                    done.add("reply")
                elif (kind == "status" and content["execution_state"] == "idle"
                      and msg["parent_header"].get("msg_id") == msg_id):
                    done.add("idle")
                # the reply (shell) can come before the cell's output (iopub): a cell is done,
                # as JupyterLab counts it, once both its reply and its idle status came
                if done == {"reply", "idle"}:
                    break
                if "[restarting]" in seen:
                    await asyncio.sleep(5)  # the new kernel starts
                    break
            said.append(seen)
    finally:
        conn.close()
    return said


async def _connect(url, headers):
    """The kernel's channels, opened as JupyterLab does: a handshake that times out (the
    proxy or her server slow under load) is tried once more before it counts."""
    for attempt in (1, 2):
        try:
            return await websocket_connect(HTTPRequest(url, headers=headers, connect_timeout=60))
        except HTTPTimeoutError:
            if attempt == 2:
                raise


def test_her_many_held_polls_hold_none_of_the_class(limited, accounts, released_course):
    """eve's client asks 200 times at once, through the hub's proxy, to be told when her
    (slow) submission is graded (``?wait=30``). The grading service holds 4 of them
    (``GRADER_MAX_HELD``) and answers the rest at once, and the proxy answers 429 at once to
    those past ``HUB_MAX_HELD_PER_LEARNER`` in flight (tests/hub/test_proxy_cap.py), so
    neither keeps her hundreds of connections; ada signs in, submits and is scored
    meanwhile."""
    hub, eve, server = limited
    made, _ = accounts
    reference = (SAMPLES / "reference.py").read_text()
    release = released_notebook(released_course)
    sub_id = eve.submit(with_answer(release, "import time\ntime.sleep(15)\n" + reference))
    url = hub.url(f"/services/grader/api/submissions/{sub_id}?wait=30")

    def poll(_):
        start = time.monotonic()
        reply = requests.get(url, headers=eve.headers, timeout=90)
        return reply.status_code, time.monotonic() - start

    with ThreadPoolExecutor(200) as pool:
        polls = [pool.submit(poll, i) for i in range(200)]
        time.sleep(1)
        beside = classmate_seconds(hub, made["ada"], with_answer(release, reference))
        answers = [p.result() for p in polls]
    statuses = Counter(status for status, _ in answers)
    print(f"classmate beside 200 held polls: sign-in {beside[0]:.1f} s, submit to score "
          f"{beside[1]:.1f} s; eve's polls answered within 10 s: "
          f"{sum(t < 10 for _, t in answers)} of 200, {dict(statuses)}")
    # the status then, or the proxy's 429 for more than her cap in flight at once
    assert set(statuses) <= {200, 429} and statuses[200] >= HUB_MAX_HELD_PER_LEARNER, statuses
    assert sum(seconds < 10 for _, seconds in answers) >= 196, sorted(t for _, t in answers)
