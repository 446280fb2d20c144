"""A learner's server ends with everything it contains, whatever uid a process has: what
matching the learner's uid misses (a process of her server's that runs as another uid,
as a setuid program would without ``no_new_privs``, or a helper the server was given)."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

from tests.hub.test_attacks import start_server, stop_server
from tests.hub.test_class_browser import server_pid


def cgroup_procs(pid):
    """The ``cgroup.procs`` file of ``pid``'s cgroup (version 2)."""
    line = next(entry for entry in Path(f"/proc/{pid}/cgroup").read_text().splitlines()
                if entry.startswith("0::"))
    mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    root = next(m.split()[4] for m in mounts if m.split()[m.split().index("-") + 1] == "cgroup2")
    return Path(root + line[3:].rstrip("/")) / "cgroup.procs"


def test_a_process_of_another_uid_in_her_server_ends_with_it(hub, sign_in):
    eve = sign_in("bob")
    start_server(eve)
    procs = cgroup_procs(server_pid(eve.name))
    # joins the server's cgroup, as everything the server starts is in it, then runs as
    # `nobody`: no process of eve's uid
    stray = subprocess.Popen(["sh", "-c", f"echo $$ > {procs} && exec setpriv --reuid=nobody "
                              "--regid=nogroup --clear-groups sleep 3600"],
                             start_new_session=True)
    time.sleep(1)
    assert stray.poll() is None, "the stray did not start"
    stop_server(eve)
    deadline = time.monotonic() + 60
    while stray.poll() is None:
        if time.monotonic() > deadline:
            stray.kill()
            stray.wait()
            raise AssertionError("a process in her server's cgroup outlived her server")
        time.sleep(0.2)
