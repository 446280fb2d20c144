"""The learners' servers' network, under ``make hub`` run as root (``course_spawner.py``).

Each learner's server runs in a network namespace of its own, holding only its own
loopback: whatever a learner's process listens on (a port of ``localhost``, of the
machine's addresses) exists only there, where no browser on the machine connects, and
it cannot take a port the hub, the proxy, a service or another learner's server uses.
Three UNIX sockets cross the boundary, all below one folder (``socket_root``, mode 0711):

* ``<name>/server.sock``: the learner's JupyterLab binds it (jupyter-server's
  ``--ServerApp.sock``) in ``<name>/``, owned by the learner, mode 0700. Nobody connects
  there: what is at that name is the learner's to change (a symbolic or hard link to
  another socket, another socket renamed in). Once it listens the spawner opens that
  name without following it (``O_PATH | O_NOFOLLOW``), checks what it holds (a socket,
  her uid, no other name) and bind-mounts that very inode at ``.routes/<name>.sock``
  (:func:`adopt`), a folder only root can enter; it checks there that her server
  listens on it, and only then routes the proxy and the hub to that path. A bind mount,
  not a rename: her folder is a small file system of its own (``learner_disk``), and
  rename(2) does not cross file systems. Nothing of the learner's is on the way to the
  route, so it and the connections the proxy keeps open to it reach her own server or
  nothing, whatever she does to her folder afterwards;
* ``hub.sock``: the hub's API (the server checks tokens and reports activity through it,
  JupyterHub's ``hub_connect_url``);
* ``grader.sock``: the grading service (the submit cell posts there, ``GRADER_SOCKET``).

The last two are byte pipes to the same TCP ports any local user can already open
(:func:`serve_pipe`), run in the hub's own event loop, so what they hold is the hub's:
each connection costs it three descriptors (the pipe's two and, for ``hub.sock``, the
hub's own end). So one learner (the peer's uid, ``SO_PEERCRED``) holds at most
:data:`PER_LEARNER` connections through the pipes at once, all together at most a
quarter of the hub's descriptors (:func:`descriptor_cap`), and a connection with no byte
either way for :data:`IDLE_S` seconds is closed. A connection over a cap is closed as
soon as it is accepted (the hub never stops accepting, so the backlog never fills for
others), and said in the log once a minute per learner at most.
"""
import asyncio
import collections
import fcntl
import hashlib
import logging
import os
import resource
import socket
import stat
import struct
import time
from pathlib import Path
from urllib.parse import quote

from autograder.sandbox import mounts

SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
IFREQ = "16sh"  # struct ifreq: the interface's name, then its flags
SERVER_SOCK = "server.sock"
# Below the socket root, root's only; no user name starts with a dot (LEARNER_PATTERN,
# adduser's NAME_REGEX), so no learner's folder is ever called that.
ROUTES = ".routes"
SO_ACCEPTCON = 0x10000  # /proc/net/unix's flag of a listening socket
# A learner's server makes a few calls at a time to the hub's API, and her notebooks hold
# a poll each on the grader (learner_submit.HOLD_S, 15 s): a few dozen is plenty.
PER_LEARNER = 32
IDLE_S = 60.0  # longer than any held poll; nothing else through the pipes waits
LOG_EVERY_S = 60.0  # one line per learner at a cap, at most this often
log = logging.getLogger(__name__)


class NotHers(RuntimeError):
    """What a learner's server socket folder held was not her own listening socket."""


def loopback_up():
    """Bring ``lo`` up in this (new) network namespace, as root: kernels and the server
    talk over it (ZeroMQ on 127.0.0.1). Raises OSError."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        asked = fcntl.ioctl(sock, SIOCGIFFLAGS, struct.pack(IFREQ, b"lo", 0))
        flags = struct.unpack(IFREQ, asked)[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack(IFREQ, b"lo", flags | IFF_UP))


SOCKETS = Path("/run/course-hub")


def socket_folder(state) -> Path:
    """The ``socket_root`` of the hub whose state folder is ``state``: one folder per
    state folder below :data:`SOCKETS` (hubs of other checkouts run side by side)."""
    return SOCKETS / hashlib.sha256(bytes(Path(state).resolve())).hexdigest()[:12]


def unix_url(path):
    """``http+unix://<path, percent-encoded>``: how JupyterHub and configurable-http-proxy
    name a server on a UNIX socket."""
    return "http+unix://" + quote(str(path), safe="")


async def _copy(reader, writer, seen):
    """Copy ``reader`` to ``writer`` until EOF, noting the time of each chunk in
    ``seen[0]``; close ``writer`` at the end."""
    loop = asyncio.get_running_loop()
    try:
        while data := await reader.read(65536):
            seen[0] = loop.time()
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()


async def _idle_watch(seen, idle_s, *writers):
    """Close ``writers`` once no byte went either way for ``idle_s`` seconds."""
    loop = asyncio.get_running_loop()
    while (left := seen[0] + idle_s - loop.time()) > 0:
        await asyncio.sleep(left)
    for writer in writers:
        writer.close()


def peer_uid(writer):
    """The uid of the process at the other end of an accepted UNIX connection."""
    sock = writer.get_extra_info("socket")
    return struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                               struct.calcsize("3i")))[1]


def descriptor_cap():
    """How many pipe connections the hub holds at most, all learners together: a quarter
    of its descriptors (``RLIMIT_NOFILE``'s soft limit, raised first to the hard one),
    three per connection."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return max(resource.getrlimit(resource.RLIMIT_NOFILE)[0] // 4 // 3, 1)


class Caps:
    """Connections held, per uid and in all, shared by a hub's pipes; :meth:`take` one
    (False when over a cap: :data:`PER_LEARNER` for a uid, ``total`` in all), then
    :meth:`give` it back."""

    def __init__(self, per_learner=PER_LEARNER, total=None):
        self.per_learner, self.total = per_learner, total or descriptor_cap()
        self.held, self.said = collections.Counter(), {}

    def take(self, uid):
        if self.held[uid] < self.per_learner and sum(self.held.values()) < self.total:
            self.held[uid] += 1
            return True
        now = time.monotonic()
        if now - self.said.get(uid, -LOG_EVERY_S) >= LOG_EVERY_S:
            self.said[uid] = now
            log.warning("uid %d holds %d connections through the hub's pipes (%d in all): "
                        "more are closed at once", uid, self.held[uid], sum(self.held.values()))
        return False

    def give(self, uid):
        self.held[uid] -= 1
        if not self.held[uid]:
            del self.held[uid]


async def serve_pipe(path, host, port, caps=None, idle_s=IDLE_S):
    """Listen on the UNIX socket ``path`` (mode 0666, replacing a stale one) and pipe each
    connection to ``host``:``port`` (TCP), within ``caps`` (a :class:`Caps`, shared by the
    pipes of one process; a new one by default), closing a connection idle ``idle_s``
    seconds. Returns the :class:`asyncio.Server`."""
    caps = caps or Caps()

    async def pipe(reader, writer):
        uid = peer_uid(writer)
        if not caps.take(uid):
            writer.transport.abort()
            return
        try:
            try:
                far_reader, far_writer = await asyncio.wait_for(
                    asyncio.open_connection(host, port), idle_s)
            except (OSError, TimeoutError):
                writer.transport.abort()
                return
            seen = [asyncio.get_running_loop().time()]
            watch = asyncio.ensure_future(_idle_watch(seen, idle_s, writer, far_writer))
            try:
                await asyncio.gather(_copy(reader, far_writer, seen),
                                     _copy(far_reader, writer, seen))
            finally:
                watch.cancel()
        finally:
            caps.give(uid)

    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    server = await asyncio.start_unix_server(pipe, path)
    os.chmod(path, 0o666)
    return server


def route(socket_root, name):
    """``<socket_root>/.routes/<name>.sock``: where the proxy and the hub reach ``name``'s
    server (a Path)."""
    return Path(socket_root) / ROUTES / f"{name}.sock"


def listening(pid, path):
    """Whether a socket bound at ``path`` (a str) listens in the network namespace of the
    process ``pid``, from its ``/proc/<pid>/net/unix`` (read as root; nothing at ``path``
    is followed or opened). False when the process is gone."""
    try:
        lines = Path(f"/proc/{pid}/net/unix").read_text().splitlines()[1:]
    except OSError:
        return False
    for line in lines:  # Num RefCount Protocol Flags Type St Inode Path
        fields = line.split(None, 7)
        if len(fields) == 8 and fields[7] == path and int(fields[3], 16) & SO_ACCEPTCON:
            return True
    return False


def check(path, uid, pid):
    """Raise :class:`NotHers` unless ``path`` (in root's own folder) is a UNIX socket owned
    by ``uid`` with no other name (``lstat``: ``S_ISSOCK``, ``st_uid``, ``st_nlink == 1``)
    whose listener is the process ``pid`` (``SO_PEERCRED`` of a connection to it)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise NotHers(f"{path}: nothing there") from None
    if not (stat.S_ISSOCK(st.st_mode) and st.st_uid == uid and st.st_nlink == 1):
        raise NotHers(f"{path}: not a socket of uid {uid} with one name "
                      f"(mode {st.st_mode:o}, uid {st.st_uid}, links {st.st_nlink})")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(5)
        try:
            conn.connect(str(path))
        except OSError as err:
            raise NotHers(f"{path}: {err}") from None
        peer_pid, peer_uid, _ = struct.unpack("3i", conn.getsockopt(
            socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    if (peer_pid, peer_uid) != (pid, uid):
        raise NotHers(f"{path}: listened on by pid {peer_pid} (uid {peer_uid}), "
                      f"not the server {pid} (uid {uid})")


def adopt(folder, target, uid, pid):
    """Bind-mount the socket ``folder/server.sock`` names (never what a link there points
    to: it is opened ``O_PATH | O_NOFOLLOW`` and checked through that descriptor) at
    ``target``, then :func:`check` it there; on failure undo it (:func:`unroute`) and raise
    :class:`NotHers`. ``target``'s folder is made root's own (mode 0700). Call it once the
    server listens (:func:`listening`). Raises OSError when the mount fails."""
    target = Path(target)
    target.parent.mkdir(mode=0o700, exist_ok=True)
    os.chown(target.parent, 0, 0)
    target.parent.chmod(0o700)
    unroute(target)
    try:
        fd = os.open(Path(folder) / SERVER_SOCK, os.O_PATH | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise NotHers(f"{folder}: no {SERVER_SOCK}") from None
    try:
        st = os.fstat(fd)
        if not (stat.S_ISSOCK(st.st_mode) and st.st_uid == uid and st.st_nlink == 1):
            raise NotHers(f"{folder}/{SERVER_SOCK}: not a socket of uid {uid} with one name "
                          f"(mode {st.st_mode:o}, uid {st.st_uid}, links {st.st_nlink})")
        os.close(os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600))
        mounts.mount(mounts.libc(), f"/proc/self/fd/{fd}", target, None, mounts.MS_BIND, None)
    finally:
        os.close(fd)
    try:
        check(target, uid, pid)
    except NotHers:
        unroute(target)
        raise


def unroute(target):
    """Remove the route ``target`` (:func:`adopt`): every mount on it (lazily: the proxy
    may still hold connections, which then reach nothing new), then the name."""
    lib = mounts.libc()
    while lib.umount2(os.fsencode(target), mounts.MNT_DETACH) == 0:
        pass
    try:
        os.unlink(target)
    except FileNotFoundError:
        pass
