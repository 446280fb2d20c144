"""Hostile and broken submissions: each gets a correct result and a clear message.

The corpus is ``hostile/*.py`` (answer cells placed in the released notebook)
plus the broken notebooks of :mod:`tests.grading.hostile_builders`. The whole
class is graded in one run with small limits, the command line's run that
tests/grading/test_golden.py also reads; expectations are in ``hostile/expected.json``.
"""
import csv
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder.sandbox.uids import LEASES, lease_uid
from tests.course import REPO, grader_cli, nbgrader_env
from tests.grading import golden
from tests.grading.helpers import SAMPLES, released_notebook, with_answer
from tests.grading.hostile_builders import BUILDERS

HOSTILE = Path(__file__).resolve().parent / "hostile"
EXPECTED = json.loads((HOSTILE / "expected.json").read_text())
EXPECTED.pop("_comment")
SECONDS, MEMORY_MIB = golden.LIMITS["hostile"]  # the class's run (cli_runs) grades with them too
LIMITS = ["--timeout", f"{SECONDS:g}", "--memory-mib", str(MEMORY_MIB), "--jobs", "2"]
SANDBOX_UIDS = range(61000, 62000)
ESCAPES = [Path("/tmp/hostile-was-here"), Path("/work/hostile-was-here"),
           Path("/etc/hostile-was-here"), Path("/run/lock/hostile-was-here"),
           Path("/var/tmp/hostile-was-here"), REPO / "autograder" / "pwned.py"]


def sandbox_processes(grace_s=10.0):
    """Processes of sandbox uids that no grader holds a lease on (leaked ones), once those
    still ending have had ``grace_s`` seconds to go (a process killed as its supervisor
    left can still be in /proc for a moment on a loaded machine; a leaked one stays).

    A grader holds a uid's lease for as long as it runs learner code as that
    uid, so processes under a free uid have outlived their grading. (Other
    graders may be running on the same machine: their uids are leased. A grader in a
    container leases its uids in the container's own /tmp, which this machine's lease
    files do not show: its processes are left out, :func:`_a_containers`.)
    """
    deadline = time.monotonic() + grace_s
    while (leaked := _unleased()) and time.monotonic() < deadline:
        time.sleep(0.2)
    return leaked


def _unleased():
    owners = {}
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and proc.stat().st_uid in SANDBOX_UIDS and \
                    not _a_containers(proc.name):
                owners.setdefault(proc.stat().st_uid, []).append(proc.name)
        except OSError:
            pass
    leaked = []
    for uid, pids in owners.items():
        fd = os.open(LEASES / str(uid), os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            leaked += pids
        except BlockingIOError:
            pass  # leased: a grader is still using this uid
        finally:
            os.close(fd)
    return leaked


def _a_containers(pid):
    """Whether process ``pid`` (str) runs in a PID namespace other than this one that root
    made: a container's, such as the grading workers of tests/hub/test_swarm.py (sandbox
    uids 61100 and 61200, leased in each container's own /tmp). No learner of a grader on
    this machine is: the sandbox makes no PID namespace (autograder/sandbox/confine.py),
    and one that learner code makes comes with a user namespace of its own (it is not
    root), so its processes are still counted."""
    try:
        return (os.readlink(f"/proc/{pid}/ns/pid") != os.readlink("/proc/self/ns/pid")
                and os.readlink(f"/proc/{pid}/ns/user") == os.readlink("/proc/self/ns/user"))
    except OSError:  # gone meanwhile
        return False


@pytest.fixture(scope="module")
def hostile(cli_runs):
    """The class graded by the command line (its ``main``, in this process) with
    :data:`LIMITS`, the same run
    tests/grading/test_golden.py compares with its record (tests/grading/conftest.py:
    ``cli_runs``, with a listening server's port in the corpus and a secret in the
    grader's environment): ``(results folder, exit status, stdout, stderr)``."""
    run = cli_runs("hostile")
    return run["out"], run["exit"], run["stdout"], run["stderr"]


def test_corpus_is_large_enough():
    assert len(EXPECTED) >= 30
    assert set(BUILDERS) <= set(EXPECTED)


def test_every_submission_gets_a_result_and_exit_0(hostile):
    out, code, stdout, stderr = hostile
    assert code == 0, stderr[-2000:]
    assert {p.parent.name for p in out.glob("*/results.json")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_hostile_submission_gets_expected_result(hostile, name):
    out = hostile[0]
    got = json.loads((out / name / "results.json").read_text())
    want = EXPECTED[name]
    assert (got["score"], got["extra_data"]["status"]) == (want["score"], want["status"]), got["output"]
    assert want["output"] in got["output"]


def test_no_learner_process_holds_a_secret_of_the_grader(hostile):
    """reads_its_memory printed what its environment block, stack and heap hold; the
    grader's environment (here a secret) must not be among it, in any result."""
    out = hostile[0]
    printed = json.loads((out / "reads_its_memory" / "results.json").read_text())
    assert "found in memory:" in printed["extra_data"]["learner_output"]
    leaked = [p.parent.name for p in out.glob("*/results.json") if golden.GRADER_SECRET in p.read_text()]
    assert leaked == []


@pytest.mark.skipif(os.geteuid() != 0, reason="the network namespace is made only as root")
def test_learner_code_reaches_no_listening_server(hostile, listener):
    assert listener.accepted == 1  # the fixture's own check, nobody else


def test_no_learner_process_survives(hostile):
    assert sandbox_processes() == []


def test_escaped_children_are_killed_on_their_own(released_course, tmp_path):
    """Graded alone: in the class run a later submission's kill(-1) could hide a leak."""
    nb = with_answer(released_notebook(released_course),
                     (HOSTILE / "escaping_children.py").read_text())
    (tmp_path / "escaping_children.ipynb").write_text(json.dumps(nb))
    proc = grader_cli(tmp_path / "escaping_children.ipynb", "--out", tmp_path / "out", *LIMITS,
                      wait=False)
    proc.communicate(timeout=300)
    assert json.loads((tmp_path / "out" / "escaping_children" / "results.json").read_text())["score"] == 10
    assert sandbox_processes() == []


@pytest.mark.skipif(os.geteuid() != 0, reason="a process runs as a sandbox uid only as root")
def test_a_containers_learner_process_is_not_taken_for_a_leak():
    """A process of a sandbox uid whose lease file here is free, in a PID namespace root
    made (as a grading worker's learner in a container is), is not counted as leaked."""
    uid = SANDBOX_UIDS[-1]
    outer = subprocess.Popen(["unshare", "--pid", "--fork", "setpriv", f"--reuid={uid}",
                              f"--regid={uid}", "--clear-groups", "sleep", "60"])
    inner = []
    try:
        deadline = time.monotonic() + 30
        while not inner and time.monotonic() < deadline:
            time.sleep(0.05)
            inner = [p.name for p in Path("/proc").iterdir() if p.name.isdigit() and _uid(p) == uid]
        assert inner, "the container's process never started"
        assert not set(inner) & set(_unleased())
    finally:
        for pid in inner:  # setpriv's uid change cleared unshare's kill-on-parent-exit
            os.kill(int(pid), signal.SIGKILL)
        outer.kill()
        outer.wait()


def _uid(proc):
    try:
        return proc.stat().st_uid
    except OSError:
        return None


def test_nothing_written_outside_scratch(hostile):
    assert [p for p in ESCAPES if p.exists()] == []


def test_summary_matches_results(hostile):
    out = hostile[0]
    rows = {r["submission"]: float(r["score"]) for r in csv.DictReader((out / "summary.csv").open())}
    assert rows == {n: json.loads((out / n / "results.json").read_text())["score"] for n in EXPECTED}


def test_killed_mid_class_then_rerun_completes_every_grade(released_course, tmp_path):
    """SIGKILL the grader while it works through a class; the rerun finishes it."""
    release = released_notebook(released_course)
    root = tmp_path / "class"
    root.mkdir()
    names = {f"learner{i:02d}": ("reference" if i % 2 else "wrong_arithmetic") for i in range(12)}
    for name, sample in names.items():
        nb = with_answer(release, (SAMPLES / f"{sample}.py").read_text())
        (root / f"{name}.ipynb").write_text(json.dumps(nb))
    out = tmp_path / "grades"
    first = grader_cli(root, "--out", out, "--jobs", "1", wait=False)
    deadline = time.monotonic() + 300
    while len(list(out.glob("*/results.json"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    first.communicate()
    done_before = {p.parent.name: p.stat().st_mtime_ns for p in out.glob("*/results.json")}
    assert 3 <= len(done_before) < len(names)
    second = grader_cli(root, "--out", out, "--jobs", "2", wait=False)
    stdout, stderr = second.communicate(timeout=600)
    assert second.returncode == 0, stderr
    assert stdout.count("unchanged, kept") == len(done_before)
    for name, sample in names.items():
        data = json.loads((out / name / "results.json").read_text())
        assert data["score"] == (10 if sample == "reference" else 7)
    kept = {n: (out / n / "results.json").stat().st_mtime_ns for n in done_before}
    assert kept == done_before
    rows = list(csv.DictReader((out / "summary.csv").open()))
    assert len(rows) == len(names)
    assert sandbox_processes() == []


def _children(pid):
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "stat").read_text().rsplit(")", 1)[1].split()[1] == str(pid):
                found.append(int(proc.name))
        except OSError:
            pass
    return found


def _learner_of(grader_pid):
    """``(supervisor pid, learner pid)`` under a grader: grader -> zygote -> supervisor -> learner."""
    for zygote in _children(grader_pid):
        for supervisor in _children(zygote):
            for learner in _children(supervisor):
                if Path(f"/proc/{learner}").stat().st_uid in SANDBOX_UIDS:
                    return supervisor, learner
    return None


def _gone(pid):
    try:
        return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]) == "Z"
    except OSError:
        return True


@pytest.mark.skipif(os.geteuid() != 0, reason="sandbox uids are leased only when grading as root")
def test_orphaned_supervisor_never_kills_a_newer_lease(released_course, tmp_path):
    """A grader killed mid-class leaves its supervisor running; a newer run's uid survives it.

    The orphan is stopped (as load would delay it) while the newer run leases
    a uid and starts a process under it; once resumed, the orphan cleans up
    its own uid, and the newer run's process is still there.
    """
    nb = with_answer(released_notebook(released_course), (HOSTILE / "sleep_forever.py").read_text())
    (tmp_path / "sleeper.ipynb").write_text(json.dumps(nb))
    grader = grader_cli(tmp_path / "sleeper.ipynb", "--out", tmp_path / "out", "--jobs", "1",
                        "--timeout", "120", wait=False)
    deadline = time.monotonic() + 300
    while (found := _learner_of(grader.pid)) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert found, "the learner's process never started"
    supervisor, learner = found
    os.kill(supervisor, signal.SIGSTOP)
    grader.kill()
    grader.wait()  # not communicate(): the stopped orphan still holds the grader's pipes
    grader.stdout.close(), grader.stderr.close()
    try:
        with lease_uid(0) as lease:  # slot 0, as the killed grader's --jobs 1
            newer = subprocess.Popen(["sleep", "300"], user=lease.uid, group=lease.uid)
            try:
                os.kill(supervisor, signal.SIGCONT)
                if not _gone(learner):
                    os.kill(learner, signal.SIGKILL)  # its end, sooner than its timeout
                deadline = time.monotonic() + 120
                while not _gone(supervisor) and time.monotonic() < deadline:
                    time.sleep(0.05)
                assert _gone(supervisor)
                assert newer.poll() is None, "the orphaned supervisor killed a newer run's process"
            finally:
                newer.kill()
                newer.wait()
    finally:
        if not _gone(supervisor):
            os.kill(supervisor, signal.SIGCONT)
    assert sandbox_processes() == []


@pytest.mark.xfail(strict=True, reason="known limit: the probes run in the learner's process, "
                   "so code that imitates them can claim observations it did not earn")
@pytest.mark.parametrize("name", ["forge_reply_pipe", "forge_probe_module"])
def test_forged_observations_are_not_believed(released_course, tmp_path, name):
    release = released_notebook(released_course)
    nb = with_answer(release, (HOSTILE / "known_limits" / f"{name}.py").read_text())
    (tmp_path / f"{name}.ipynb").write_text(json.dumps(nb))
    proc = grader_cli(tmp_path / f"{name}.ipynb", "--out", tmp_path / "out", *LIMITS, wait=False)
    proc.communicate(timeout=300)
    assert json.loads((tmp_path / "out" / name / "results.json").read_text())["score"] <= 6


@pytest.mark.skipif(os.geteuid() != 0, reason="namespaces are made only when grading as root")
def test_a_grader_that_cannot_isolate_says_so(released_course, tmp_path):
    """Without CAP_SYS_ADMIN (a container's root) ``unshare`` fails: the grader's log says
    that learner code runs with the machine's network, and the grade still comes when the
    sandbox uid can reach the interpreter; when it cannot (pyenv's under root's home),
    it is a grader fault whose reason (and how to fix it) the instructor reads, in the
    progress line and the result's ``extra_data.fault``, instead of an ImportError in
    learner code."""
    nb = with_answer(released_notebook(released_course), (SAMPLES / "reference.py").read_text())
    (tmp_path / "ada.ipynb").write_text(json.dumps(nb))
    argv = ["setpriv", "--bounding-set=-sys_admin", "--inh-caps=-sys_admin", sys.executable,
            "-m", "autograder", str(tmp_path / "ada.ipynb"), "--out", str(tmp_path / "out")]
    done = subprocess.run(argv, cwd=REPO, env=nbgrader_env(), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads((tmp_path / "out" / "ada" / "results.json").read_text())
    if _readable_by_others(Path(os.path.realpath(sys.base_prefix)) / "lib"):
        assert result["score"] == 10
    else:  # a grader fault: the learner reads plain words, whoever runs the grader why
        assert result["output"] == ("the grader failed on this submission (RuntimeError); "
                                    "please tell your instructor")
        why = "learner code cannot run: without mount namespaces its uid cannot reach this Python"
        assert why in result["extra_data"]["fault"] and "PYTHON=" in result["extra_data"]["fault"]
        assert f"[RuntimeError: {why}" in done.stdout
    assert "WITHOUT network and mount isolation: unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC" \
           ") failed: Operation not permitted" in done.stderr
    # and with the capability, nothing is said
    assert "isolation" not in grader_cli(tmp_path / "ada.ipynb", "--out", tmp_path / "out2").stderr


def _readable_by_others(folder):
    return all(os.stat(f).st_mode & 0o001 for f in [*folder.parents, folder])
