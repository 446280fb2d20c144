"""A submission's processes and memory end with it, whatever it tried.

Graded as root (sandbox uid, namespaces), one submission: leaves System V shared
memory and a /dev/shm file behind, and starts, in a session of its own, a setuid-root
program that tries to make itself root (``setuid(0)``) and waits: without
``no_new_privs`` it would be root, and no kill by the sandbox uid would reach it.
After grading, none of it is left on the machine, and the learner's process said it
had ``no_new_privs``.
"""
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

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
