"""A cgroup's limits hold for its processes together, wherever this host keeps each
controller (cgroup v2, or the v1 hierarchies of a hybrid host): what a submission's and a
learner's server's groups rely on (``autograder/sandbox/cgroups.py``)."""
import os
import signal
import time

import pytest

from autograder.sandbox import cgroups

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="cgroups are made as root")


@pytest.fixture
def group():
    made = cgroups.limited(("course-test", str(os.getpid())), memory_mib=64, processes=24)
    yield made
    assert made.kill()
    for root in filter(None, [cgroups.v2_root(), *map(cgroups.v1_root, cgroups.CONTROLLERS)]):
        try:
            os.rmdir(root / "course-test")
        except OSError:
            pass


def _in_group(group, work):
    """Fork a child that runs ``work()`` once the parent has moved it into ``group``; its pid."""
    go_read, go_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.read(go_read, 1)
            work()
        finally:
            os._exit(0)
    group.join(pid)
    os.write(go_write, b"g")
    os.close(go_write)
    os.close(go_read)
    return pid


def test_memory_is_bounded_across_the_groups_processes(group):
    if "memory" not in group.bounds:
        pytest.skip("no memory controller on this host")

    def hold_40_mib():
        hog = b"x" * (40 * 2**20)
        time.sleep(2)
        del hog

    children = [_in_group(group, hold_40_mib) for _ in range(3)]  # 120 MiB against 64
    ends = [os.waitpid(pid, 0)[1] for pid in children]
    assert any(os.WIFSIGNALED(e) and os.WTERMSIG(e) == signal.SIGKILL for e in ends), ends
    assert group.memory_kills() >= 1


def test_processes_are_bounded_across_the_group(group):
    if "processes" not in group.bounds:
        pytest.skip("no pids controller on this host")
    read_fd, write_fd = os.pipe()

    def fork_many():
        started = 0
        for _ in range(60):
            try:
                if os.fork() == 0:
                    time.sleep(2)
                    os._exit(0)
                started += 1
            except OSError:
                break
        os.write(write_fd, str(started).encode())

    os.waitpid(_in_group(group, fork_many), 0)
    os.close(write_fd)
    started = int(os.read(read_fd, 16))
    assert started < 24, started  # the group's 24 with the forking one, not 60
