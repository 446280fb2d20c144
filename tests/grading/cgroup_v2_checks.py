"""What the course's cgroups do on a cgroup v2 only host: run inside the virtual machine
of :mod:`tests.grading.v2guest` (``cgroup_no_v1=all``) by ``test_cgroup_v2_vm.py``, beside
``test_cgroup_limits.py``; not collected on this host (the name is not ``test_*``).
Each check makes its groups as the supervisor (a submission's) and the hub (a learner's
server) do, and finds them again as their sweeps do."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder.sandbox import cgroups

pytestmark = pytest.mark.skipif(cgroups.v1_root("memory") is not None or cgroups.v2_root() is None,
                                reason="for a cgroup v2 only host (the virtual machine)")
MIB = 2**20


def _read(group, name):
    return (group.v2 / name).read_text().strip()


def test_a_learners_server_is_bounded_in_v2_alone():
    """The hub's group (``make_cgroup``): every bound in v2's files, none in v1."""
    group = cgroups.limited(("course-hub", "hub", "eve"), memory_mib=96, processes=40,
                            cpu_weight=100, cpus=0.5)
    try:
        assert cgroups.problem() is None
        assert group.v1 == {}
        assert group.bounds == {"memory": (96, "v2"), "processes": (40, "v2"),
                                "cpu": (100, "v2"), "cpus": (0.5, "v2")}
        assert (_read(group, "memory.max"), _read(group, "memory.swap.max")) == (str(96 * MIB), "0")
        assert _read(group, "pids.max") == "40"
        assert (_read(group, "cpu.weight"), _read(group, "cpu.max")) == ("100", "50000 100000")
    finally:
        assert group.kill()
        os.rmdir(group.v2.parent)
        os.rmdir(group.v2.parent.parent)


# forty children, each in a session of its own with a child of its own: 81 processes
# where nothing bounds them
FORK_TREE = """
import os, sys, time
sys.stdin.read(1)
for _ in range(40):
    try:
        if os.fork() == 0:
            os.setsid()
            os.fork()
            time.sleep(600)
    except OSError:
        time.sleep(0.01)
time.sleep(600)
"""


def test_a_submissions_forking_tree_ends_with_its_group():
    """The supervisor's group (``make_submission_group``): its processes stop at
    ``pids.max`` whatever sessions they start (``fork`` refused), and the sweep's ``found(...).kill()``
    ends all of them and removes the group."""
    uid = 64999
    group = cgroups.make_submission_group(uid, processes=12, memory_mib=128)
    assert group.v2 == cgroups.submission_group(uid) and group.v1 == {}
    proc = subprocess.Popen([sys.executable, "-c", FORK_TREE], stdin=subprocess.PIPE)
    try:
        group.join(proc.pid)
        proc.stdin.write(b"g")
        proc.stdin.close()
        deadline = time.monotonic() + 60
        while int(_read(group, "pids.current")) < 12 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1)
        members = [int(p) for p in _read(group, "cgroup.procs").split()]
        assert 1 < len(members) <= 12, members
        assert int(_read(group, "pids.events").split()[1]) > 0  # "max <forks refused>"
    finally:
        gone = cgroups.found(cgroups.SANDBOX, str(uid)).kill()
    assert gone
    proc.wait(10)
    assert not group.v2.exists()
    assert not [p for p in members if Path(f"/proc/{p}").exists()
                and Path(f"/proc/{p}/stat").read_text().split()[2] != "Z"]
    os.rmdir(group.v2.parent)
