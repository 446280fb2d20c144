"""Every folder of the system's own that anybody may write in is each learner's server's
own: ann (here ada) writes a file into each such folder her server shows (``/tmp``,
``/var/tmp``, ``/run/lock`` and ``/var/lock``, ``/dev/shm``, any other the system has),
found by searching the system's top-level folders (``confine.SYSTEM``) in her server;
eve's (here bob's) server sees none of those files, and neither does the machine.
(A world-writable folder an administrator makes elsewhere, under ``/srv`` or a
checkout, is not covered: docs/security.md says so.)"""
from __future__ import annotations

import json
import os
import secrets

from autograder.sandbox.confine import SYSTEM
from tests.hub.test_attacks import start_server, stop_server
from tests.hub.test_class_browser import as_learner_in_server

MARK = f"scratch-{secrets.token_hex(4)}"
# Each folder every user may write in below the folders argv[2:], with a file argv[1]
# written there.
WRITE_ALL = r"""
import json, os, stat, sys
mark, written = sys.argv[1], []
for top, dirs, _ in (w for start in sys.argv[2:] for w in os.walk(start)):
    try:
        st = os.lstat(top)
    except OSError:
        continue
    if st.st_mode & stat.S_IWOTH and os.access(top, os.W_OK):
        try:
            open(os.path.join(top, mark), "w").write(mark)
            written.append(top)
        except OSError:
            pass
print(json.dumps(written))
"""
SEE = "import os, sys; print(*[p for p in sys.argv[2:] if os.path.exists(os.path.join(p, sys.argv[1]))])"


def test_two_learners_servers_share_no_writable_folder(hub, sign_in):
    ann, eve = sign_in("ada"), sign_in("bob")
    start_server(ann)
    start_server(eve)
    python = "/usr/bin/python3"
    system = " ".join(f"/{d}" for d in sorted(SYSTEM - {"proc", "sys"}))
    done = as_learner_in_server(ann.name, f"{python} -c '{WRITE_ALL}' {MARK} {system}")
    assert done.returncode == 0, done.stderr
    written = json.loads(done.stdout)
    assert {"/tmp", "/var/tmp", "/run/lock", "/dev/shm"} <= set(written), written
    seen = as_learner_in_server(eve.name, f"{python} -c '{SEE}' {MARK} {' '.join(written)}")
    assert seen.returncode == 0 and seen.stdout.split() == [], seen
    on_machine = [p for p in written if os.path.exists(os.path.join(p, MARK))]
    assert on_machine == [], on_machine
    stop_server(ann)
    stop_server(eve)
