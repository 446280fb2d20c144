"""A cgroup's limits hold for its processes together, wherever this host keeps each
controller (cgroup v2, or the v1 hierarchies of a hybrid host): what a submission's and a
learner's server's groups rely on (``autograder/sandbox/cgroups.py``)."""
import os
import signal
import subprocess
import sys

import pytest

from autograder.sandbox import cgroups

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="cgroups are made as root")


@pytest.fixture
def group():
    made = cgroups.limited(("course-test", str(os.getpid())), memory_mib=64, processes=24)
    yield made
    assert made.kill()
    _remove_parent()


def _remove_parent():
    for root in filter(None, [cgroups.v2_root(), *map(cgroups.v1_root, cgroups.CONTROLLERS)]):
        try:
            os.rmdir(root / "course-test")
        except OSError:
            pass


def _in_group(group, code):
    """Start Python running ``code`` once this process has moved it into ``group``
    (it waits for a byte on its stdin first): the Popen, its stdout piped."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read(1)\n" + code],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    group.join(proc.pid)
    proc.stdin.write("g")
    proc.stdin.close()
    return proc


def test_memory_is_bounded_across_the_groups_processes(group):
    if "memory" not in group.bounds:
        pytest.skip("no memory controller on this host")
    hold = "import time\nhog = b'x' * (40 * 2**20)\ntime.sleep(2)\n"
    children = [_in_group(group, hold) for _ in range(3)]  # 120 MiB against 64
    ends = [child.wait() for child in children]
    assert -signal.SIGKILL in ends, ends
    assert group.memory_kills() >= 1


FORK_MANY = """
import os, time
started = 0
for _ in range(60):
    try:
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
        started += 1
    except OSError:
        break
print(started, flush=True)
"""


def test_processes_are_bounded_across_the_group(group):
    if "processes" not in group.bounds:
        pytest.skip("no pids controller on this host")
    proc = _in_group(group, FORK_MANY)
    started = int(proc.stdout.readline())
    proc.wait()
    proc.stdout.close()
    assert started < 24, started  # the group's 24 with the forking one, not 60


# the processor time of the loop alone: the interpreter started before it joined the group
BUSY_ONE_SECOND = """
import time
start, end = time.process_time(), time.monotonic() + 1.0
while time.monotonic() < end:
    pass
print(time.process_time() - start, flush=True)
"""


def test_processor_time_is_capped():
    group = cgroups.limited(("course-test", f"{os.getpid()}-cpu"), cpu_weight=100, cpus=0.2)
    try:
        if "cpus" not in group.bounds:
            pytest.skip("no cpu controller on this host")
        proc = _in_group(group, BUSY_ONE_SECOND)
        used = float(proc.stdout.readline())
        proc.wait()
        proc.stdout.close()
        assert used < 0.45, used  # a fifth of a core for a second, not the whole of one
    finally:
        assert group.kill()
        _remove_parent()
