"""The supervisor of one submission: fork the learner's process, wait within the limits, clean up.

Runs in the supervisor's process: a child the zygote forks for each
connection (:mod:`autograder.sandbox.zygote`), as root when grading runs as
root, holding the submission's uid lease. It never runs learner code
itself; it forks the learner's process (as root into a cgroup of the
submission's own), reads its reply, kills whatever that process left running
(the cgroup with ``cgroup.kill``, then the uid), and answers the grader with an
:class:`~autograder.sandbox.Outcome`. Meanwhile it answers the learner's process's
requests for compile cache entries (:mod:`autograder.sandbox.compile_cache`), which it
reads only after that process was forked.
"""
import ctypes
import os
import select
import shutil
import signal
import socket
import tempfile
import time
from io import BufferedIOBase
from pathlib import Path

from autograder.sandbox import cgroups, compile_cache, confine, learner, wire
from autograder.sandbox.uids import kill_uid
from autograder.sandbox.wire import Outcome

REPLY_LIMIT = 32 * 2**20  # bytes of reply read from the learner's process
PR_SET_CHILD_SUBREAPER = 36  # from <linux/prctl.h>
MEMORY_SIGNS = ("MemoryError", "bad_alloc", "Cannot allocate memory", "out of memory")
# What a process says when RLIMIT_NPROC stops it starting a thread (XLA's thread
# pools abort the process; Python raises) or a process (fork's EAGAIN).
PROCESS_SIGNS = ("pthread_create() failed", "can't start new thread",
                 "BlockingIOError: [Errno 11] Resource temporarily unavailable")


def serve(conn: socket.socket, rfile: BufferedIOBase, wfile: BufferedIOBase) -> None:
    """Read one request from the grader on ``conn``, supervise it, answer on ``wfile``."""
    request, limits, lease = wire.receive_request(conn, rfile)
    wire.send_outcome(wfile, supervise(request, limits, lease))


def supervise(request, limits, lease):
    """Fork the learner's process, wait for it within the limits, clean up; an :class:`Outcome`.

    ``lease`` is the :class:`~autograder.sandbox.Lease` of the learner's uid
    (None when not root). As root the learner's process is moved into a cgroup of
    its own (:func:`~autograder.sandbox.cgroups.make_submission_group`, bounding the memory
    and processes of all it starts together) before it runs anything, and that cgroup is
    killed and removed however the submission ends.
    Raises OSError or RuntimeError when the cgroup cannot be made or joined.
    """
    uid = lease.uid if lease else None
    group = (cgroups.make_submission_group(uid, limits.processes, limits.memory_mib)
             if uid is not None else None)
    scratch = tempfile.mkdtemp(prefix="grade-")
    log_path = scratch + ".log"
    if uid is not None:
        os.chown(scratch, uid, uid)
    read_fd, write_fd = os.pipe()
    go_read, go_write = os.pipe()
    cache, cache_child = socket.socketpair() if compile_cache.FOLDERS else (None, None)
    _become_subreaper()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(go_write)
        if cache is not None:
            cache.close()
        _learner(request, limits, uid, scratch, log_path, write_fd, go_read, cache_child)
    os.close(write_fd)
    os.close(go_read)
    if cache is not None:  # its entries are read only from now on, never in a forked learner
        cache_child.close()
        cache.settimeout(1.0)  # a learner that stops reading its answer is no longer served
    try:
        try:
            _let_go(pid, group, go_write)
            raw, code, timed_out = _collect(pid, read_fd, start + limits.seconds, cache)
            # read before the kill: the group's count goes with its folder
            memory_killed = group is not None and group.memory_kills() > 0
        finally:  # however it ended, this supervisor's own failures included
            _kill_all(pid, lease, group)
        tail, hits = _read_log(log_path)
        if memory_killed:  # one of its processes, at the group's memory limit: no score
            hits.add("memory_killed")
        return _outcome(code, timed_out, raw, tail, limits, time.monotonic() - start, hits)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        Path(log_path).unlink(missing_ok=True)


def _let_go(pid, group, go_write):
    """Move the learner's process into ``group`` (when there is one), then let it start:
    it waits for this byte, so nothing it forks is left outside. Raises OSError."""
    try:
        if group is not None:
            group.join(pid)
        os.write(go_write, b"g")
    finally:
        os.close(go_write)


def _learner(request, limits, uid, scratch, log_path, write_fd, go_read, cache=None):
    """In the forked child, the learner's process: wait until the supervisor has put it
    in its cgroup, confine it (keeping ``cache``, its end of the compile cache's socket,
    when there is one), then run the code. Never returns."""
    try:
        if os.read(go_read, 1) != b"g":  # the supervisor failed: run nothing
            os._exit(70)
        os.close(go_read)
        keep = () if cache is None else (cache.fileno(),)
        confine.confine(request, limits, uid, scratch, log_path, write_fd, keep)
        if cache is not None:
            try:
                compile_cache.connect(cache.detach(), compile_cache.FOLDERS[0])
            except Exception:  # no cache then: every program is compiled
                pass
        learner.serve(request, write_fd)
    finally:
        os._exit(70)


def _collect(pid, read_fd, deadline, cache=None):
    """Read the reply until EOF and reap ``pid``; stop at ``deadline``. Meanwhile answer
    the learner's compile cache requests on ``cache`` (a socket, or None), with entries
    of the zygote's folders (:class:`~autograder.sandbox.compile_cache.Served`)."""
    chunks, size, code, eof = [], 0, None, False
    served, budget = compile_cache.Served(compile_cache.FOLDERS), [compile_cache.REQUESTS]
    ended = _pidfd(pid)  # readable once the learner's process has exited: no polling wait
    while code is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        waits = (([] if eof else [read_fd]) + ([] if cache is None else [cache])
                 + ([] if ended is None else [ended]))
        if waits:
            ready = select.select(waits, [], [], min(remaining, 0.01 if eof else 0.05))[0]
        else:
            ready = []
            time.sleep(min(remaining, 0.01))
        if cache is not None and cache in ready and not compile_cache.answer(cache, served, budget):
            cache.close()
            cache = None
        if read_fd in ready:
            data = os.read(read_fd, 65536)
            eof = not data
            size += len(data)
            if size <= REPLY_LIMIT:
                chunks.append(data)
        code = _exit_code(pid)
    if cache is not None:
        cache.close()
    if ended is not None:
        os.close(ended)
    if code is not None and not eof:  # drain what is buffered after exit
        while select.select([read_fd], [], [], 0)[0] and (data := os.read(read_fd, 65536)):
            chunks.append(data)
    os.close(read_fd)
    return b"".join(chunks), code, code is None


def _pidfd(pid):
    """A descriptor that becomes readable when ``pid`` exits (pidfd_open(2), Linux 5.3),
    or None where there is none (then the exit is polled every 10 ms)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


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


def _kill_all(pid, lease, group):
    """Kill the learner's process group, reap the learner, then its cgroup (every process
    in it, whatever its uid, and the cgroup itself), then its whole uid, a second net
    where there is a cgroup and the only one where there is none."""
    for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            target()  # safe: the unreaped learner keeps its pid and group reserved
        except (ProcessLookupError, PermissionError):
            pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    emptied = group is None or group.kill()
    if lease is not None:
        kill_uid(lease, reap=True)
    if not emptied:
        raise RuntimeError(f"processes of a submission outlived their kill in {group.folders()}")


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
        pass  # not Linux: orphans go to PID 1, which reaps them in its own time


def _read_log(log_path, window=65536, tail=2000):
    """``(last tail characters, limits hit)`` from the learner's log; the limits hit are
    a set of ``"memory"`` and ``"processes"`` (:data:`MEMORY_SIGNS`, :data:`PROCESS_SIGNS`).

    The signs are looked for in the first and last ``window`` bytes: a
    MemoryError is often followed by a long abort trace.
    """
    try:
        with open(log_path, "rb") as log:
            head = log.read(window)
            log.seek(max(0, os.fstat(log.fileno()).st_size - window))
            end = log.read().decode("utf-8", "replace")
    except OSError:
        return "", set()
    text = head.decode("utf-8", "replace") + end
    hits = {name for name, signs in (("memory", MEMORY_SIGNS), ("processes", PROCESS_SIGNS))
            if any(sign in text for sign in signs)}
    return end[-tail:], hits


def _signal_name(code):
    try:
        return signal.Signals(-code).name
    except ValueError:
        return str(-code)


def _signal_words(code):
    return f" (it was killed by signal {_signal_name(code)})" if code is not None and code < 0 else ""


def _outcome(code, timed_out, raw, tail, limits, seconds, hits=frozenset()):
    if timed_out:
        return Outcome("timeout", f"timed out after {limits.seconds:g} s", None, seconds, tail)
    reply = wire.read_reply(raw)
    if reply is not None and reply.get("memory_limit"):  # its own code reached the limit
        hits = hits | {"memory_killed"}
    if code == 0 and reply is not None and "memory_killed" not in hits:
        return Outcome("ok", "", reply, seconds, tail)
    if hits & {"memory", "memory_killed"}:
        return Outcome("memory", f"used more than {limits.memory_mib} MiB of memory",
                       None, seconds, tail)
    if "processes" in hits:
        return Outcome("crashed", f"your code reached the limit of {limits.processes} processes "
                       "and threads, so the grading process could not start the threads JAX "
                       f"needs{_signal_words(code)}", None, seconds, tail)
    if code is not None and code < 0:
        return Outcome("crashed", f"the process running your code was killed by signal "
                       f"{_signal_name(code)}", None, seconds, tail)
    return Outcome("exited", f"your code ended the grading process early (exit status {code}) "
                   "before the tests could run", None, seconds, tail)
