"""Eve (here bob) opens thousands of idle connections to the hub's ``hub.sock`` from her own
uid, as from her terminal, and holds them: the hub keeps at most her cap open
(``learner_net.PER_LEARNER``), ann (here ada) still signs in and gets her hub token
about as fast as before, and the hub's log grows by a line or two."""
from __future__ import annotations

import pwd
import statistics
import subprocess
import time
from pathlib import Path

from deploy.hub import learner_net
from tests.hub.running import Signed
from tests.hub.test_attacks import SYSTEM_PYTHON, start_server, stop_server
from tests.hub.test_learner_network import server_target

CONNECTIONS = 5000
# Opens argv[2] connections to argv[1], waits 3 s, prints how many the far end left open,
# then holds them all until killed.
FLOOD = r'''
import socket, sys, time
held = []
for _ in range(int(sys.argv[2])):
    conn = socket.socket(socket.AF_UNIX)
    conn.connect(sys.argv[1])
    held.append(conn)
time.sleep(3)
still = 0
for conn in held:
    conn.setblocking(False)
    try:
        still += conn.recv(1) != b""
    except BlockingIOError:
        still += 1
    except ConnectionError:
        pass
print("open", still, flush=True)
time.sleep(3600)
'''


def _sign_in_s(hub, account, times=3):
    """Median seconds for ``account`` to sign in and get the course site's hub token."""
    spent = []
    for _ in range(times):
        start = time.monotonic()
        Signed(hub, account)
        spent.append(time.monotonic() - start)
    return statistics.median(spent)


def test_a_learners_idle_connections_to_the_hub_cost_the_class_little(hub, accounts, sign_in):
    made, _ = accounts
    eve = sign_in("bob")
    start_server(eve)
    hub_sock = Path(server_target(hub, eve.name)).parent.parent / "hub.sock"
    before = _sign_in_s(hub, made["ada"])
    log_size = hub.log_path.stat().st_size
    entry = pwd.getpwnam(eve.name)
    flood = subprocess.Popen(["prlimit", f"--nofile={CONNECTIONS + 100}", "setpriv",
                              f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}",
                              "--clear-groups", SYSTEM_PYTHON, "-c", FLOOD, str(hub_sock),
                              str(CONNECTIONS)], stdout=subprocess.PIPE, text=True)
    try:
        said = flood.stdout.readline().split()
        assert said[0] == "open" and int(said[1]) <= learner_net.PER_LEARNER, said
        during = _sign_in_s(hub, made["ada"])
    finally:
        flood.kill()
        flood.wait()
    grown = hub.log_path.stat().st_size - log_size
    print(f"sign-in and token: {before:.2f} s before, {during:.2f} s while eve held "
          f"{CONNECTIONS} connections ({said[1]} left open); hub log grew {grown} bytes")
    assert during < before + 2.0, (before, during)
    assert grown < 20_000, hub.log()[-3000:]
    stop_server(eve)
