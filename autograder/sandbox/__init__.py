"""Step 2 of grading: run learner code in its own limited process.

A zygote process (:mod:`autograder.zygote`) imports JAX once. For each
submission it forks a supervisor, which forks the learner's process: a fresh
session in a scratch directory, with a wall-clock limit, an address-space
limit, a process-count limit and a file-size limit, and, when the grader runs
as root, an unprivileged uid of its own (leased, see :func:`lease_uid`) so it cannot
signal the grader or read root-only files. The learner's process talks only
through a private pipe; what it prints is kept as a short tail.
"""
import contextlib
import ctypes
import fcntl
import json
import os
import resource
import select
import shutil
import signal
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

# Learner programs are tiny, and each XLA compile costs more than running
# them. Skipping LLVM's optimisation passes and using XLA CPU's older
# elemental emitters instead of its fusion emitters halves a compile (about
# 28 ms -> 13 ms for an add, measured with JAX 0.10.2). Neither changes buffer
# assignment (donation and input_output_alias are decided on HLO, before
# code generation) nor results beyond float rounding order.
XLA_FLAGS = "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"
SANDBOX_UID_BASE = 61000  # uid = base + slot; no passwd entry is needed
REPLY_LIMIT = 32 * 2**20  # bytes of reply read from the learner's process
PR_SET_CHILD_SUBREAPER = 36  # from <linux/prctl.h>
MEMORY_SIGNS = ("MemoryError", "bad_alloc", "Cannot allocate memory", "out of memory")


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

    ``status`` is ``ok``, ``timeout``, ``memory``, ``exited``, ``crashed`` or
    ``error`` (the grader's fault); ``message`` is the plain-words reason when
    it is not ``ok``; ``reply`` is the worker's JSON reply (None when none
    arrived); ``seconds`` is wall time; ``output_tail`` is the end of what the
    learner's code printed.
    """

    status: str
    message: str = ""
    reply: dict = None
    seconds: float = 0.0
    output_tail: str = ""


# Paths learner code must not read: hidden tests, solutions, sample answers,
# grades. When grading runs as root they are made root-only (git keeps no modes).
PRIVATE = ("autograder/hidden", "exercises/source", "exercises/gradebook.db",
           "exercises/submitted", "exercises/autograded", "tests", "grading.db", ".git")
REPO = Path(__file__).resolve().parents[2]
# Covered by empty mounts in the learner's mount namespace: every world-writable
# place (so nothing persists or passes between learners) and the repo's private parts.
SCRATCH_MOUNTS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock", "/run/user")
REPO_MOUNTS = ("autograder/hidden", "exercises", "tests", ".git", "benchmarks")


def protect(out_dir=None):
    """Make :data:`PRIVATE` paths and ``out_dir`` unreadable to sandbox uids."""
    if os.geteuid() != 0:
        return
    for path in [REPO / p for p in PRIVATE] + ([Path(out_dir)] if out_dir else []):
        if path.exists():
            os.chmod(path, 0o700 if path.is_dir() else 0o600)


UID_COUNT = 1000
LEASES = Path(tempfile.gettempdir()) / "jax-donation-sandbox-uids"


@dataclass
class Lease:
    """A sandbox uid and the descriptor of its lock file, whose ``flock`` is the lease.

    The lease lasts while any copy of ``fd`` is open: the grader passes one
    to the supervisor (:meth:`autograder.zygote.Zygote.run`), so a supervisor
    left running by a killed grader still holds the uid, and no newer run can
    lease it until that supervisor has killed its learner's processes.
    """

    uid: int
    fd: int


@contextlib.contextmanager
def lease_uid(slot=0):
    """Hold a sandbox uid that no other grader on this machine is using; yield a :class:`Lease`.

    Each uid is guarded by an exclusive ``flock`` on a root-only file, so a
    class run and the grading service never share a uid (and so never kill
    each other's learner processes). Yields None when not running as root.
    """
    if os.geteuid() != 0:
        yield None
        return
    LEASES.mkdir(mode=0o700, exist_ok=True)
    for offset in range(UID_COUNT):
        uid = SANDBOX_UID_BASE + (slot + offset) % UID_COUNT
        fd = os.open(LEASES / str(uid), os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            lease = Lease(uid, fd)
            kill_uid(lease)  # whatever a crashed grader left behind
            yield lease
        finally:
            os.close(fd)
        return
    raise RuntimeError("no free sandbox uid")


def run(request, limits=None, slot=0):
    """Run one request in a fresh limited process; return an :class:`Outcome`."""
    limits = limits or Limits()
    try:
        with lease_uid(slot) as lease:
            return shared().run(request, limits, lease)
    except Exception as exc:  # the zygote died or hung: a result, never a crash
        return Outcome("error", f"the grader's sandbox failed ({type(exc).__name__}: {exc})")


def supervise(request, limits, lease):
    """Fork the learner's process, wait for it within the limits, clean up.

    Runs in a root (or grader-user) process forked by the zygote; ``lease``
    is the :class:`Lease` of the learner's uid (None when not root).
    """
    uid = lease.uid if lease else None
    scratch = tempfile.mkdtemp(prefix="grade-")
    log_path = scratch + ".log"
    if uid is not None:
        os.chown(scratch, uid, uid)
    read_fd, write_fd = os.pipe()
    _become_subreaper()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _learner(request, limits, uid, scratch, log_path, write_fd)
    os.close(write_fd)
    try:
        raw, code, timed_out = _collect(pid, read_fd, start + limits.seconds)
        _kill_all(pid, lease)
        tail, memory_hit = _read_log(log_path)
        return _outcome(code, timed_out, raw, tail, limits, time.monotonic() - start, memory_hit)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        Path(log_path).unlink(missing_ok=True)


def _learner(request, limits, uid, scratch, log_path, write_fd):
    """In the forked child: confine this process, then run the worker. Never returns."""
    try:
        os.setsid()
        # Past the file-size limit a write fails with EFBIG instead of killing us.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0), os.dup2(log, 1), os.dup2(log, 2)
        # Close every inherited descriptor (the grader's socket among them).
        os.closerange(3, write_fd)
        os.closerange(write_fd + 1, 65536)
        if uid is not None and _private_mounts(request.get("hide", ())):
            scratch = "/tmp/work"  # on the fresh tmpfs: nothing else is there
            os.mkdir(scratch, 0o700)
            os.chown(scratch, uid, uid)
        os.chdir(scratch)
        os.environ.clear()
        os.environ.update({"HOME": scratch, "TMPDIR": scratch, "PATH": "/usr/bin:/bin",
                           "JAX_PLATFORMS": "cpu", "LANG": "C.UTF-8", "XLA_FLAGS": XLA_FLAGS})
        _limit(limits, uid)
        from autograder.sandbox import learner

        learner.serve(request, write_fd)
    finally:
        os._exit(70)


CLONE_NEWNS, CLONE_NEWNET = 0x00020000, 0x40000000
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000


def _private_mounts(hide):
    """Give the learner's process its own mount and network namespaces (root only).

    The network namespace has no interface up, so learner code reaches no
    server (not the grading service, not the internet). Fresh, empty tmpfs
    mounts (256 MiB each) cover :data:`SCRATCH_MOUNTS`, :data:`REPO_MOUNTS` and
    the ``hide`` folders (submissions, results). What the learner's process
    must still import (this package, the venv) is bind-mounted back where a
    cover would hide it, e.g. for a checkout under /tmp. Returns False,
    changing nothing, where namespaces are not available.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS | CLONE_NEWNET) != 0:
        return False
    libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None)
    needed = _needed_paths()
    covers = [t for t in SCRATCH_MOUNTS if os.path.isdir(t) and not os.path.islink(t)]
    kept = [n for n in needed if any(n.startswith(t + "/") for t in covers)]
    staging = "/mnt" if kept else None
    if staging:  # park what a cover would hide, outside every cover
        _tmpfs(libc, staging)
        for i, path in enumerate(kept):
            os.mkdir(f"{staging}/{i}")
            libc.mount(path.encode(), f"{staging}/{i}".encode(), None, MS_BIND | MS_REC, None)
    for target in covers:
        _tmpfs(libc, target)
    for i, path in enumerate(kept):
        os.makedirs(path, exist_ok=True)
        libc.mount(f"{staging}/{i}".encode(), path.encode(), None, MS_BIND | MS_REC, None)
    for target in [*(str(REPO / p) for p in REPO_MOUNTS), *hide]:
        if os.path.isdir(target) and not os.path.islink(target):
            _tmpfs(libc, target)
    return True


def _tmpfs(libc, target):
    libc.mount(b"tmpfs", target.encode(), b"tmpfs", 0, b"size=256m,mode=1777")


def import_paths():
    """Folders learner processes import from: this repo, then every site-packages.

    The zygote's ``sys.path`` is built from this, and neither the private
    mounts nor :func:`autograder.pipeline.hidden_dirs` may cover them.
    """
    import sys

    site = {os.path.realpath(p) for p in sys.path if p.endswith("site-packages")}
    return [str(REPO), *sorted(site)]


def _needed_paths():
    """:func:`import_paths` without those nested in another (one bind mount each)."""
    paths = import_paths()
    return sorted(p for p in paths if not any(p.startswith(q + "/") for q in paths if q != p))


def _limit(limits, uid):
    for res, value in ((resource.RLIMIT_AS, limits.memory_mib * 2**20),
                       (resource.RLIMIT_CPU, int(limits.seconds) + 5),
                       (resource.RLIMIT_FSIZE, limits.file_mib * 2**20),
                       (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(res, (value, value))
    if uid is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)


def _collect(pid, read_fd, deadline):
    """Read the reply until EOF and reap ``pid``; stop at ``deadline``."""
    chunks, size, code, eof = [], 0, None, False
    while code is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        if not eof and select.select([read_fd], [], [], min(remaining, 0.05))[0]:
            data = os.read(read_fd, 65536)
            eof = not data
            size += len(data)
            if size <= REPLY_LIMIT:
                chunks.append(data)
        elif eof:
            time.sleep(min(remaining, 0.01))
        code = _exit_code(pid)
    if code is not None and not eof:  # drain what is buffered after exit
        while select.select([read_fd], [], [], 0)[0] and (data := os.read(read_fd, 65536)):
            chunks.append(data)
    os.close(read_fd)
    return b"".join(chunks), code, code is None


def _exit_code(pid):
    """Exit code of ``pid`` once it has ended (negative: killed by that signal), else None.

    The child is left unreaped (WNOWAIT) so its pid and process group cannot
    be reused by another process before :func:`_kill_all` signals the group.
    """
    info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    if info is None or info.si_pid == 0:
        return None
    if info.si_code == os.CLD_EXITED:
        return info.si_status
    return -info.si_status


def _kill_all(pid, lease):
    """Kill the learner's process group, reap the learner, then its whole uid."""
    for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            target()  # safe: the unreaped learner keeps its pid and group reserved
        except (ProcessLookupError, PermissionError):
            pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    if lease is not None:
        kill_uid(lease, reap=True)


def _become_subreaper():
    """Adopt the learner's orphans, so killed ones are reaped here at once.

    Without this, children that left the learner's session are reparented to
    PID 1, and their zombies (still owned by the sandbox uid) linger until it
    gets round to reaping them -- seconds on some machines (prctl(2),
    PR_SET_CHILD_SUBREAPER, Linux 3.4).
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: orphans go to PID 1 as before


def _reap_children():
    """Reap every exited child of this (supervisor) process."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_uid(lease, reap=False):
    """SIGKILL every process owned by ``lease.uid``, fork bombs included, if the lease is held.

    Fenced by the lease: unless ``lease.fd`` holds the uid's lock (``flock``
    on a descriptor that already holds it succeeds; one held elsewhere
    refuses), a newer run owns the uid and nothing is killed; returns False
    then, else True. A helper process takes the uid and calls ``kill(-1,
    SIGKILL)``, which reaches every process of that uid in one system call
    (kill(2)); repeated until /proc shows none left. With ``reap`` (only in
    the supervisor, see :func:`_become_subreaper`) the adopted zombies are
    reaped between rounds.
    """
    try:
        fcntl.flock(lease.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    uid = lease.uid
    for _ in range(100):
        if not any(_owner(p) == uid for p in Path("/proc").iterdir() if p.name.isdigit()):
            return True
        pid = os.fork()
        if pid == 0:
            try:
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        if reap:  # only in the supervisor, whose children are all the learner's
            _reap_children()
        time.sleep(0.01)
    return True


def _owner(proc_dir):
    try:
        return proc_dir.stat().st_uid
    except OSError:
        return None


def _read_log(log_path, window=65536, tail=2000):
    """``(last tail characters, memory limit hit?)`` from the learner's log.

    The memory signs are looked for in the first and last ``window`` bytes:
    a MemoryError is often followed by a long abort trace.
    """
    try:
        with open(log_path, "rb") as log:
            head = log.read(window)
            log.seek(max(0, os.fstat(log.fileno()).st_size - window))
            end = log.read().decode("utf-8", "replace")
    except OSError:
        return "", False
    text = head.decode("utf-8", "replace") + end
    return end[-tail:], any(sign in text for sign in MEMORY_SIGNS)


def _outcome(code, timed_out, raw, tail, limits, seconds, memory_hit=False):
    if timed_out:
        return Outcome("timeout", f"timed out after {limits.seconds:g} s", None, seconds, tail)
    try:
        reply = json.loads(raw) if raw else None
    except ValueError:
        reply = None
    if code == 0 and isinstance(reply, dict) and "obs" in reply:
        return Outcome("ok", "", reply, seconds, tail)
    if memory_hit:
        return Outcome("memory", f"used more than {limits.memory_mib} MiB of memory",
                       None, seconds, tail)
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        return Outcome("crashed", f"the process running your code was killed by signal {name}",
                       None, seconds, tail)
    return Outcome("exited", f"your code ended the grading process early (exit status {code}) "
                   "before the tests could run", None, seconds, tail)


def to_json(outcome):
    return json.dumps(asdict(outcome))


def from_json(text):
    return Outcome(**json.loads(text))


from autograder.sandbox.zygote import Zygote, shared  # noqa: E402  (split in the next commit)
