"""What several grading test modules read: the command line's run over each corpus
(every exercise's samples, the hostile corpus), graded once per session through the
real sandbox. The modules that read it are one ``make test`` worker group
(tests/tiers.py: SHARED), so each worker that needs a run grades it once."""
import os
import socket
import time

import pytest

from tests.grading import golden
from tests.grading.helpers import Listener


@pytest.fixture(scope="session")
def listener():
    """A :class:`~tests.grading.helpers.Listener` that this process reaches (checked: one
    connection), open for the whole session; the hostile corpus is given its port."""
    server = Listener()
    socket.create_connection(("127.0.0.1", server.port), timeout=5).close()
    deadline = time.monotonic() + 5
    while server.accepted < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.accepted == 1
    yield server
    server.close()


@pytest.fixture(scope="session")
def cli_runs(released_course, tmp_path_factory, listener):
    """``cli_runs(group) -> run``: :func:`tests.grading.golden.cli_run` over ``group``
    ("samples" or "hostile") of :func:`tests.grading.golden.corpus`, under
    :func:`tests.grading.golden.fixed_digest` (as recorded in tests/grading/golden/),
    made on first use. The hostile group is given ``listener``'s port (as root), and graded with
    :data:`~tests.grading.golden.GRADER_SECRET` in the grader's environment.
    Read-only: ``run["out"]`` is the results tree."""
    done = {}

    def run(group):
        if group not in done:
            # Only as root does the sandbox take learners off the network (a namespace of
            # their own): elsewhere the port stays one nobody listens on, as recorded.
            port = listener.port if os.geteuid() == 0 else 9
            subs = golden.corpus(released_course, port)[group]
            with golden.fixed_digest():
                done[group] = golden.cli_run(group, subs, tmp_path_factory.mktemp(f"cli-{group}"))
        return done[group]

    return run
