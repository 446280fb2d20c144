"""What a learner's server and everything it starts print does not go into the hub's log.

The hub's log lies on the disk of the hub's state (and, under ``make hub``, of the grading
database and the gradebook), and no learner bound counts it. So eve (here bob) writes,
from a kernel of her own server, a marked mebibyte by each way her processes reach the
output they inherited: the kernel's own descriptors 1 and 2, a child's inherited ones, a
detached (``setsid``) child's, every descriptor of the kernel that names what her
server's output names (ipykernel keeps a copy of the one it captures), and her server's
``/proc/<pid>/fd/1`` and ``/2`` opened again. None of it reaches the hub's log; it is in
her home's ``.course-server.log``."""
from __future__ import annotations

import os
import time
from pathlib import Path

from deploy.hub.course_spawner import SERVER_LOG
from tests.hub.test_attacks import start_server, stop_server
from tests.hub.test_limits import kernel_cells

MARK = f"server-output-{os.urandom(4).hex()}"
FILLER = 2**20  # bytes written by each way

WAYS = {
    "kernel fd 1": "os.write(1, line)",
    "kernel fd 2": "os.write(2, line)",
    "child's stderr": "subprocess.run(['sh', '-c', 'cat >&2'], input=line)",
    "detached child's stdout": "subprocess.run(['setsid', 'sh', '-c', 'cat'], input=line)",
    "kept copies": """
server = os.getppid()
wanted = {os.readlink(f"/proc/{server}/fd/{n}") for n in (1, 2)}
for fd in map(int, os.listdir("/proc/self/fd")):
    try:
        if os.readlink(f"/proc/self/fd/{fd}") in wanted:
            os.write(fd, line)
    except OSError:
        pass
""",
    "server's fd reopened": """
for n in (1, 2):
    try:
        with open(f"/proc/{os.getppid()}/fd/{n}", "ab") as out:
            out.write(line)
    except OSError:
        pass
""",
}


def cell(way, code):
    return (f"import os, subprocess, time\nline = b'{MARK} {way} ' + b'x' * {FILLER} + b'\\n'\n"
            + code + "\nprint('done')")


def test_her_servers_output_never_reaches_the_hubs_log(hub, sign_in):
    eve = sign_in("bob")
    server = start_server(eve)
    try:
        before = hub.log_path.stat().st_size
        cells = [cell(w, c) for w, c in WAYS.items()] + ["time.sleep(1); print('ran', 6 * 7)"]
        said = kernel_cells(hub, eve, server, cells)
        assert "ran 42" in said[-1], said  # the kernel ran every way (their output is racy)
        time.sleep(2)
        with open(hub.log_path, "rb") as log:
            log.seek(before)
            grown = log.read()
        reached = [w for w in WAYS if f"{MARK} {w}".encode() in grown]
        assert reached == [], (reached, len(grown))
        assert len(grown) < FILLER, len(grown)
        kept = Path(os.path.expanduser(f"~{eve.name}")) / SERVER_LOG  # in her home instead
        assert f"{MARK} kernel fd 2".encode() in kept.read_bytes()
    finally:
        stop_server(eve)
