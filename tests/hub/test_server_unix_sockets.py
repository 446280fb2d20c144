"""A learner's server reaches no UNIX socket of the machine but its own two pipes.

Its network namespace cuts off every port, but a socket with a path is reached through
the file system: a database's (PostgreSQL's ``/run/postgresql/.s.PGSQL.5432`` takes
anyone's connection before it asks who), the system bus, another hub's ``hub.sock`` and
``grader.sock`` below ``/run/course-hub/<hub>/``. So ann (here ada) runs, in her own
server, the grading sandbox's search (``tests/grading/test_no_server_reached.py``: every
socket on every path she sees, each path named in any process's command line, environment
or ``/proc/<pid>/net/unix``, also through ``/proc/<pid>/root`` and ``/cwd``, every
abstract name) while this test serves decoys where the machine's servers put theirs: she
reaches her hub's ``hub.sock`` and ``grader.sock`` and her own server's socket only, and
no decoy sees a connection."""
from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from tests.grading.test_no_server_reached import Decoy, reached, search_code
from tests.hub.test_attacks import SYSTEM_PYTHON, start_server, stop_server
from tests.hub.test_class_browser import as_learner_in_server
from tests.hub.test_learner_network import server_target

TAG = f"course-test-{os.urandom(4).hex()}"


@pytest.fixture
def decoys():
    """Decoys any user may connect to where the machine's servers keep their sockets:
    ``[Decoy]``, closed and removed after."""
    other_hub = Path("/run/course-hub") / TAG
    made = []
    try:
        made.append(Decoy(str(other_hub / "hub.sock"), remove=other_hub))
        made.append(Decoy(str(other_hub / "grader.sock")))
        os.chmod(other_hub, 0o711)  # as a hub makes its socket folder
        for where in (f"/run/{TAG}/.s.PGSQL.5432", f"/var/lib/{TAG}/server.sock",
                      f"/var/spool/{TAG}/server.sock", f"/var/tmp/../run/{TAG}-2/bus"):
            made.append(Decoy(os.path.normpath(where), remove=str(Path(os.path.normpath(where)).parent)))
        yield made
    finally:
        for decoy in made:
            decoy.close()


def test_her_server_reaches_no_unix_socket_but_its_own(hub, sign_in, decoys):
    ann = sign_in("ada")
    start_server(ann)
    try:
        root = Path(server_target(hub, ann.name)).parent.parent  # her hub's socket root
        code = search_code(decoys)
        done = as_learner_in_server(ann.name, f"{SYSTEM_PYTHON} -I -c {shlex.quote(code)}")
        assert done.returncode == 0, done.stderr[-2000:]
        # a path through /proc/<pid>/root or /cwd: one of her own processes' (no other
        # user's may be followed), so the same file as without it
        found = {os.path.normpath(re.sub(r"^/proc/\d+/(root|cwd)/", "/", p))
                 for p in reached(done.stdout)}
        own = {str(root / "hub.sock"), str(root / "grader.sock"),
               str(root / ann.name / "server.sock")}
        assert {str(root / "hub.sock"), str(root / "grader.sock")} <= found, found  # search works
        assert found <= own, found - own
        assert [d.accepted for d in decoys] == [0] * len(decoys)
    finally:
        stop_server(ann)
