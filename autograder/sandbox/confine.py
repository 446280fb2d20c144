"""Confining the learner's process before any learner code runs in it.

Runs in the learner's process: the supervisor forks it and calls
:func:`confine`, which gives it a session of its own, a scratch directory, an
empty environment, resource limits and, when grading runs as root, private
mount and network namespaces and an unprivileged uid. Only then does
:mod:`autograder.sandbox.learner` run the learner's code.

:func:`import_paths` and :data:`XLA_FLAGS` are read in the grader's process
too: it starts the zygote with them, so the zygote's imports and the learner's
see the same folders and flags.
"""
import ctypes
import os
import resource
import signal
import sys

from autograder import exercises
from autograder.defaults import CHECKOUT as REPO
from autograder.sandbox import mounts

# Learner programs are tiny, and each XLA compile costs more than running
# them. Skipping LLVM's optimisation passes shortens a compile (an add: about
# 21 ms against 32 ms with no flag, JAX 0.12.0.1, noisy). It does not change
# buffer assignment (donation and input_output_alias are decided on HLO, before
# code generation) nor results beyond float rounding order. (jaxlib 0.12 aborts
# at backend start on a flag it does not know: name only flags it has.)
XLA_FLAGS = "--xla_backend_optimization_level=0"
# Each exercise's hidden tests and sample answers (autograder/exercises/<name>/hidden).
HIDDEN = tuple(str(p.relative_to(REPO)) for p in exercises.private_folders())
# Covered by empty mounts in the learner's mount namespace: every world-writable
# place (so nothing persists or passes between learners) and the repo's private parts.
SCRATCH_MOUNTS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock", "/run/user")
# Where the machine's servers keep their UNIX sockets (every hub's and grading service's
# below /run/course-hub, a database's, the system bus, a mail queue's below /var/spool,
# one below /var/lib), which the network namespace does not cut off: a socket with a path
# is reached through the filesystem. Covered by empty ones, before the scratch folders
# below them, which are made on them.
SERVERS_STATE = ("/run", "/var")
# The top-level folders of the system itself, left visible; every other one (/home,
# /root, /srv, /opt, a course's /work, ...) is covered, so that no checkout, build
# output or copy anywhere on the machine is readable by learner code because of its
# modes alone. /mnt is where mounts.cover parks what it binds back.
SYSTEM = frozenset({"bin", "boot", "dev", "etc", "lib", "lib32", "lib64", "libx32", "mnt",
                    "proc", "run", "sbin", "sys", "tmp", "usr", "var"})
REPO_MOUNTS = (*HIDDEN, "exercises", "tests", ".git", "benchmarks")
CLONE_NEWNS, CLONE_NEWNET, CLONE_NEWIPC = 0x00020000, 0x40000000, 0x08000000
# Own mounts (below), no network, and System V IPC of its own: shared memory it leaves
# is freed with the namespace, when its last process ends (RLIMIT_AS does not count it).
# (No PID namespace: a process that unshared CLONE_NEWPID cannot start threads, clone(2)
# EINVAL, and JAX needs them; its processes are ended by uid, see uids.end_uid.)
NAMESPACES = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC
PR_SET_NO_NEW_PRIVS = 38
SCRATCH = "size=256m,mode=1777"  # tmpfs options of a cover learner code may write in
# Address space above a submission's memory limit that the grader's own work in the
# learner's process may map: XLA compiling a program (about 150 MiB more mapped without
# the compile cache than with it) and starting its CPU client where the learner's code
# did not (about 650 MiB, the same either way), then the probe's calls.
RESERVE_MIB = 1024


def confine(request, limits, uid, scratch, log_path, write_fd, keep=()):
    """Confine this freshly forked process for running ``request``'s cells.

    ``limits`` is a :class:`~autograder.sandbox.Limits`; ``uid`` the leased
    sandbox uid (None when not root), which owns ``scratch``; stdout and
    stderr go to ``log_path``; every descriptor but ``write_fd`` (the reply
    pipe) and ``keep`` (the compile cache's socket) is closed. ``request["hide"]``
    lists folders to cover.
    """
    os.setsid()
    # Past the file-size limit a write fails with EFBIG instead of killing us.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0), os.dup2(log, 1), os.dup2(log, 2)
    # Close every inherited descriptor (the grader's socket among them).
    low = 3
    for fd in sorted({write_fd, *keep}):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 65536)
    if uid is not None and _private_mounts(request.get("hide", ())):
        scratch = "/tmp/work"  # on the fresh tmpfs: nothing else is there
        os.mkdir(scratch, 0o700)
        os.chown(scratch, uid, uid)
    os.chdir(scratch)
    os.environ.clear()
    os.environ.update({"HOME": scratch, "TMPDIR": scratch, "PATH": "/usr/bin:/bin",
                       "JAX_PLATFORMS": "cpu", "LANG": "C.UTF-8", "XLA_FLAGS": XLA_FLAGS})
    _limit(limits, uid)
    # A setuid program learner code runs gains nothing: its uid stays the sandbox's, so
    # it is among the processes of that uid ended with the submission.
    if mounts.libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")


def import_paths() -> list[str]:
    """Folders learner processes import from: this repo, then every site-packages.

    The zygote's ``sys.path`` is built from this, and neither the private
    mounts nor :func:`autograder.pipeline.hidden_dirs` may cover them.
    """
    site = {os.path.realpath(p) for p in sys.path if p.endswith("site-packages")}
    return [str(REPO), *sorted(site)]


def _private_mounts(hide):
    """Give the learner's process its own mount, network and IPC namespaces (root only).

    The network namespace has no interface up and its own abstract UNIX socket
    names, and :data:`SERVERS_STATE` is covered, so learner code reaches no server
    (not the grading service, not a hub, not the internet). Fresh, empty tmpfs
    mounts (256 MiB each) cover :data:`SCRATCH_MOUNTS`, :data:`REPO_MOUNTS` and
    the ``hide`` folders (submissions, results), and small ones :data:`SERVERS_STATE`,
    root's home, this repository and every top-level folder outside :data:`SYSTEM`.
    What the learner's process must still import (this package, the venv, the
    interpreter's standard library, which may be pyenv's under root's home) is
    bound back where a cover would hide it (:mod:`autograder.sandbox.mounts`).
    Returns False, changing nothing, where namespaces are not available.
    """
    lib = mounts.libc()
    if lib.unshare(NAMESPACES) != 0:
        return False
    mounts.make_root_private(lib)
    covers = {**{t: mounts.SMALL for t in SERVERS_STATE}, **{t: SCRATCH for t in SCRATCH_MOUNTS}}
    for top in (*_non_system(), os.path.expanduser("~root"), str(REPO)):
        covers[top] = mounts.SMALL
    # Of this repository only the package comes back (the zygote's sys.path names the
    # repository, so the package imports as ``autograder``); its hidden/ are covered below.
    needed = [(p, p) for p in import_paths() if p != str(REPO)] + mounts.interpreter_paths()
    needed.append((str(REPO / "autograder"), str(REPO / "autograder")))
    mounts.cover(lib, covers, mounts.under(needed, covers))
    for target in [*(str(REPO / p) for p in REPO_MOUNTS), *hide]:
        if os.path.isdir(target) and not os.path.islink(target):
            mounts.mount(lib, "tmpfs", target, "tmpfs", 0, SCRATCH)
    return True


def _non_system():
    """Every top-level folder but :data:`SYSTEM` (absolute paths)."""
    return [entry.path for entry in os.scandir("/")
            if entry.name not in SYSTEM and entry.is_dir(follow_symlinks=False)]


def isolation_problem() -> str | None:
    """Why learner processes would run without their own mount and network namespaces
    (as root), or None when they get them (or when not root: no namespaces are made).

    Tried in a forked child, so this process keeps its own namespaces. Where
    ``unshare`` is refused (a container without CAP_SYS_ADMIN), learner code can
    reach this machine's servers: the grader says so instead of going on silently.
    """
    if os.geteuid() != 0:
        return None
    pid = os.fork()
    if pid == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        os._exit(0 if libc.unshare(NAMESPACES) == 0 else ctypes.get_errno())
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    return None if code == 0 else ("unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC) "
                                   f"failed: {os.strerror(code)}")


def _limit(limits, uid):
    """Set the learner's process's limits. Its address space: ``memory_mib`` MiB for the
    learner's code (the soft limit), and :data:`RESERVE_MIB` above it (the hard limit)
    that only the grader's own work in that process takes (XLA's compiles, the probe's
    calls: :mod:`autograder.sandbox.learner`), so that how much memory that work needs,
    more without the compile cache than with it, never decides a grade."""
    size = limits.memory_mib * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (size, size + RESERVE_MIB * 2**20))
    for res, value in ((resource.RLIMIT_CPU, int(limits.seconds) + 5),
                       (resource.RLIMIT_FSIZE, limits.file_mib * 2**20),
                       (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(res, (value, value))
    if uid is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
