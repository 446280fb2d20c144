"""Step 2 of grading: run learner code in its own limited process.

Each submission gets a fresh process in a scratch directory with a wall-clock
limit, an address-space limit, a process-count limit and a file-size limit.
When the grader runs as root, the process runs as an unprivileged uid of its
own (one per parallel slot), so it cannot signal the grader or read files that
are readable by root only. The reply travels on a private pipe; whatever the
learner prints is kept only as a short tail for the instructor.
"""
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent)
SANDBOX_UID_BASE = 61000  # uid = base + slot; no passwd entry is needed
REPLY_LIMIT = 32 * 2**20  # bytes of reply read from the learner's process


@dataclass
class Limits:
    """Per-submission limits: seconds of wall clock, MiB of address space."""

    seconds: float = 60.0
    memory_mib: int = 4096
    processes: int = 512  # threads count too: XLA's CPU client starts dozens
    file_mib: int = 64


@dataclass
class Outcome:
    """How the learner's process ended.

    ``status`` is ``ok``, ``timeout``, ``memory``, ``exited`` or ``crashed``;
    ``message`` is the plain-words reason when it is not ``ok``; ``reply`` is
    the worker's JSON reply (None when none arrived); ``seconds`` is wall time.
    """

    status: str
    message: str = ""
    reply: dict = None
    seconds: float = 0.0
    output_tail: str = ""


def sandbox_python():
    """An interpreter an unprivileged uid can run (the venv's may live in /root)."""
    if os.geteuid() == 0 and Path("/usr/bin/python3.11").exists():
        return "/usr/bin/python3.11"
    return sys.executable


def _site_packages():
    return [p for p in sys.path if p.endswith("site-packages")]


def _bootstrap():
    paths = [PACKAGE_PARENT] + _site_packages()
    return (f"import sys; sys.path[:0] = {paths!r}; "
            "from autograder.worker import main; main()")


def _preexec(limits, uid):
    def apply():
        mem = limits.memory_mib * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        cpu = int(limits.seconds) + 5
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        fsize = limits.file_mib * 2**20
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if uid is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
    return apply


def kill_uid(uid):
    """SIGKILL every process owned by ``uid`` (catches escaped fork bombs)."""
    for _ in range(3):
        pids = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()
                and _owner(p) == uid]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)


def _owner(proc_dir):
    try:
        return proc_dir.stat().st_uid
    except OSError:
        return None


def run(request, limits=None, slot=0):
    """Run one request in a fresh limited process; return an :class:`Outcome`."""
    limits = limits or Limits()
    uid = SANDBOX_UID_BASE + slot if os.geteuid() == 0 else None
    scratch = tempfile.mkdtemp(prefix="grade-")
    if uid is not None:
        os.chown(scratch, uid, uid)
    read_end, write_end = os.pipe()
    log_path = Path(scratch).parent / (Path(scratch).name + ".log")
    start = time.monotonic()
    try:
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [sandbox_python(), "-I", "-c", _bootstrap(), str(write_end)],
                stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                cwd=scratch, env=_env(scratch), pass_fds=(write_end,),
                preexec_fn=_preexec(limits, uid), start_new_session=True)
        os.close(write_end)
        chunks = []
        reader = threading.Thread(target=_drain, args=(read_end, chunks), daemon=True)
        reader.start()
        timed_out = _feed_and_wait(proc, request, limits.seconds)
        _kill_all(proc, uid)
        reader.join(timeout=5)
        tail = _tail(log_path)
        return _outcome(proc.returncode, timed_out, b"".join(chunks), tail, limits,
                        time.monotonic() - start)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        log_path.unlink(missing_ok=True)


def _env(scratch):
    return {"HOME": scratch, "TMPDIR": scratch, "PATH": "/usr/bin:/bin",
            "JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false",
            "LANG": "C.UTF-8"}


def _drain(fd, chunks):
    size = 0
    with os.fdopen(fd, "rb") as pipe:
        while True:
            data = pipe.read(65536)
            if not data:
                return
            size += len(data)
            if size <= REPLY_LIMIT:
                chunks.append(data)


def _feed_and_wait(proc, request, seconds):
    try:
        proc.stdin.write(json.dumps(request).encode())
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass  # the process died at start; its exit status says why
    try:
        proc.wait(timeout=seconds)
        return False
    except subprocess.TimeoutExpired:
        return True


def _kill_all(proc, uid):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if uid is not None:
        kill_uid(uid)
    proc.wait()


def _tail(log_path, size=2000):
    try:
        with open(log_path, "rb") as log:
            log.seek(max(0, log_path.stat().st_size - size))
            return log.read().decode("utf-8", "replace")
    except OSError:
        return ""


MEMORY_SIGNS = ("MemoryError", "bad_alloc", "Cannot allocate memory", "Resource exhausted",
                "out of memory")


def _outcome(code, timed_out, raw, tail, limits, seconds):
    if timed_out:
        return Outcome("timeout", f"timed out after {limits.seconds:g} s", None, seconds, tail)
    reply = None
    if raw:
        try:
            reply = json.loads(raw)
        except ValueError:
            reply = None
    if code == 0 and isinstance(reply, dict) and "obs" in reply:
        return Outcome("ok", "", reply, seconds, tail)
    if any(sign in tail for sign in MEMORY_SIGNS):
        return Outcome("memory", f"used more than {limits.memory_mib} MiB of memory",
                       None, seconds, tail)
    if code is not None and code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else -code
        return Outcome("crashed", f"the process running your code was killed by signal {name}",
                       None, seconds, tail)
    return Outcome("exited", f"your code ended the grading process early (exit status {code}) "
                   "before the tests could run", None, seconds, tail)
