"""A submission's processes and memory end with it, whatever it tried.

Graded as root with cgroup v2, one submission waits while the test, as root, puts a
process of another uid (which no kill by the sandbox uid reaches) into the cgroup the
learner's process runs in: that process is gone when the submission ends, and so is
the cgroup, which was the submission's own.

Graded as root (sandbox uid, namespaces), one submission: leaves System V shared
memory and a /dev/shm file behind, and starts, in a session of its own, a setuid-root
program that tries to make itself root (``setuid(0)``) and waits: without
``no_new_privs`` it would be root, and no kill by the sandbox uid would reach it.
After grading, none of it is left on the machine, and the learner's process said it
had ``no_new_privs``.
"""
import json
import os
import secrets
import signal
import subprocess
import time
from pathlib import Path

import pytest

from autograder.sandbox import cgroups
from tests.course import grader_cli
from tests.grading.helpers import released_notebook, with_answer

KEY = 0x6B3432  # the shared memory's System V key
HELPER = r"""
#include <unistd.h>
int main(void) { setgid(0); setuid(0); pause(); return 0; }
"""
ANSWER = r'''
import ctypes, os, subprocess, time
libc = ctypes.CDLL(None)
print("SHM", libc.shmget(@KEY@, 64 * 2**20, 0o1000 | 0o666))  # IPC_CREAT; never removed
open("/dev/shm/left-behind", "w").write("x")
print("NNP", open("/proc/self/status").read().split("NoNewPrivs:")[1].split()[0])
subprocess.Popen(["@HELPER@"], start_new_session=True)
time.sleep(1)
'''


def _helper_processes(helper):
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and os.readlink(proc / "exe") == str(helper):
                found.append(int(proc.name))
        except OSError:
            pass
    return found


def _shm_keys():
    lines = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    return {int(line.split()[0]) for line in lines}


@pytest.fixture
def setuid_helper(tmp_path):
    """A setuid-root program the sandbox uid can run (in /usr/local/bin, which learner
    code sees); removed after, with any process of it and the shared memory."""
    helper = Path("/usr/local/bin") / f"course-test-setuid-{os.getpid()}"
    subprocess.run(["gcc", "-x", "c", "-o", str(helper), "-"], input=HELPER, text=True,
                   check=True)
    os.chmod(helper, 0o4755)
    yield helper
    for pid in _helper_processes(helper):
        os.kill(pid, signal.SIGKILL)
    helper.unlink()
    if KEY in _shm_keys():
        subprocess.run(["ipcrm", "-M", str(KEY)], check=False)


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox's uid and namespaces need root")
def test_nothing_of_a_submission_outlives_it(released_course, tmp_path, setuid_helper):
    answer = ANSWER.replace("@KEY@", str(KEY)).replace("@HELPER@", str(setuid_helper))
    nb = with_answer(released_notebook(released_course), answer)
    (tmp_path / "leaver.ipynb").write_text(json.dumps(nb))
    graded = grader_cli(tmp_path / "leaver.ipynb", "--out", tmp_path / "grades", "--jobs", "1")
    assert graded.returncode == 0, graded.stderr[-2000:]
    result = json.loads((tmp_path / "grades" / "leaver" / "results.json").read_text())
    printed = result["extra_data"]["learner_output"]
    assert "SHM -1" not in printed and "NNP 1" in printed, printed
    assert _helper_processes(setuid_helper) == []
    assert KEY not in _shm_keys()
    assert not Path("/dev/shm/left-behind").exists()


MARK = f"sbx{secrets.token_hex(4)}"  # the learner's process's name (comm: 15 bytes at most)
WAITS = r'''
import ctypes, os, time
ctypes.CDLL(None).prctl(15, b"@MARK@", 0, 0, 0)  # PR_SET_NAME: its comm, which the test finds

def intruder_is_here():  # started by the test, as another uid, named @MARK@-intruder
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if open(f"/proc/{pid}/cmdline", "rb").read().startswith(b"@MARK@-intruder"):
                return True
        except OSError:
            pass
    return False

deadline = time.monotonic() + 30
while not intruder_is_here() and time.monotonic() < deadline:
    time.sleep(0.05)
'''


def _cgroup_of(pid):
    """The cgroup (v2) folder ``pid`` is in."""
    line = next(entry for entry in Path(f"/proc/{pid}/cgroup").read_text().splitlines()
                if entry.startswith("0::"))
    return Path(str(cgroups.v2_root()) + line[3:].rstrip("/"))


def _named(name):
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "comm").read_text().strip() == name:
                return int(proc.name)
        except OSError:
            pass
    return None


@pytest.fixture(scope="module")
def intruded(released_course, tmp_path_factory):
    """Grade one submission; while it runs, move a ``sleep`` of uid 65534 (nobody) into
    its learner's cgroup. ``(learner's cgroup, the grader's, the intruder's exit status
    after grading (None: still running), the cgroup's folder still there)``."""
    root = tmp_path_factory.mktemp("intruded")
    nb = with_answer(released_notebook(released_course), WAITS.replace("@MARK@", MARK))
    (root / "waits.ipynb").write_text(json.dumps(nb))
    grader = grader_cli(root / "waits.ipynb", "--out", root / "grades", "--jobs", "1",
                        "--timeout", "60", wait=False)
    intruder = None
    try:
        deadline = time.monotonic() + 240
        while (learner := _named(MARK)) is None and grader.poll() is None:
            assert time.monotonic() < deadline, "the learner's process never started"
            time.sleep(0.05)
        assert learner is not None, grader.communicate()[1][-2000:]
        group = _cgroup_of(learner)
        intruder = subprocess.Popen(["bash", "-c", f"exec -a {MARK}-intruder sleep 600"],
                                    user=65534, group=65534, start_new_session=True)
        (group / "cgroup.procs").write_text(f"{intruder.pid}\n")
        _, stderr = grader.communicate(timeout=300)
        assert grader.returncode == 0, stderr[-2000:]
        try:
            ended = intruder.wait(timeout=5)
        except subprocess.TimeoutExpired:
            ended = None
        yield group, _cgroup_of(os.getpid()), ended, group.exists()
    finally:
        grader.kill()
        grader.communicate()
        if intruder is not None:
            intruder.kill()
            intruder.wait()


needs_cgroup = pytest.mark.skipif(os.geteuid() != 0 or cgroups.problem() is not None,
                                  reason="a submission gets a cgroup as root with cgroup v2")


@needs_cgroup
def test_a_process_of_another_uid_in_its_cgroup_ends_with_the_submission(intruded):
    assert intruded[2] == -signal.SIGKILL


@needs_cgroup
def test_a_submission_runs_in_a_cgroup_of_its_own_removed_after(intruded):
    group, graders, _, left = intruded
    assert group != graders and group.parent.name == cgroups.SANDBOX
    assert not left


# What a submission holds in memory beside its own process, each within the process's own
# address-space limit (2048 MiB here) and together over the submission's 2048 MiB: forked
# children; files in its tmpfs folders and System V shared memory, which no address space
# counts. The answer itself is right (it would score 10).
SPLIT_MEMORY = {
    "forked_children": r'''
import os, time
children = []
for _ in range(3):
    if (pid := os.fork()) == 0:
        hog = b"x" * (720 * 2**20)
        time.sleep(3)  # all three hold theirs at once
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
''',
    "tmpfs_files_and_shm": r'''
import ctypes, os
for folder in ("/tmp", "/dev/shm", "/var/tmp", "/run/lock", "/run/user", "/var/lock"):
    for part in range(4):  # files of 60 MiB: each under the 64 MiB file-size limit
        try:
            with open(os.path.join(folder, f"hog{part}"), "wb") as out:
                for _ in range(60):
                    out.write(b"x" * 2**20)
        except OSError:
            pass
libc = ctypes.CDLL(None)
libc.shmat.restype = ctypes.c_void_p
for _ in range(3):  # each touched, then detached: it stays, in no address space
    shm = libc.shmget(0, 500 * 2**20, 0o1000 | 0o600)  # IPC_PRIVATE, IPC_CREAT
    if shm >= 0 and (at := libc.shmat(shm, None, 0)) not in (None, ctypes.c_void_p(-1).value):
        ctypes.memset(at, 1, 500 * 2**20)
        libc.shmdt(ctypes.c_void_p(at))
''',
}
RIGHT = '''
import jax
_add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))
def update_with_donate(state, delta):
    return _add(state, delta)
'''


@pytest.mark.skipif(os.geteuid() != 0, reason="a submission's cgroup is made as root")
@pytest.mark.parametrize("way", sorted(SPLIT_MEMORY))
def test_memory_is_bounded_across_a_submissions_processes(released_course, tmp_path, way):
    """Memory spread where no process's own limit sees it, more than the submission may
    use in all: the answer gets the memory message and 0, as one process over it does."""
    nb = with_answer(released_notebook(released_course), SPLIT_MEMORY[way] + RIGHT)
    (tmp_path / "split.ipynb").write_text(json.dumps(nb))
    graded = grader_cli(tmp_path / "split.ipynb", "--out", tmp_path / "grades", "--jobs", "1",
                        "--memory-mib", "2048", "--timeout", "60")
    assert graded.returncode == 0, graded.stderr[-2000:]
    result = json.loads((tmp_path / "grades" / "split" / "results.json").read_text())
    assert (result["score"], result["extra_data"]["status"]) == (0, "memory"), result["output"]
    assert "used more than 2048 MiB of memory" in result["output"]
