"""The learners' servers' network, under ``make hub`` run as root (``course_spawner.py``).

Each learner's server runs in a network namespace of its own, holding only its own
loopback: whatever a learner's process listens on (a port of ``localhost``, of the
machine's addresses) exists only there, where no browser on the machine connects, and
it cannot take a port the hub, the proxy, a service or another learner's server uses.
Three UNIX sockets cross the boundary, all below one folder (``socket_root``, mode 0711):

* ``<name>/server.sock``: the learner's JupyterLab listens on it (jupyter-server's
  ``--ServerApp.sock``) in ``<name>/``, owned by the learner, mode 0700: the proxy and the
  hub (root) connect to it; another learner can neither reach it nor put a socket there,
  so a stopped server's route answers for nobody;
* ``hub.sock``: the hub's API (the server checks tokens and reports activity through it,
  JupyterHub's ``hub_connect_url``);
* ``grader.sock``: the grading service (the submit cell posts there, ``GRADER_SOCKET``).

The last two are byte pipes to the same TCP ports any local user can already open
(:func:`serve_pipe`), run in the hub's own event loop.
"""
import asyncio
import fcntl
import hashlib
import os
import socket
import struct
from pathlib import Path
from urllib.parse import quote

SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
IFREQ = "16sh"  # struct ifreq: the interface's name, then its flags


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


async def _copy(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()


async def serve_pipe(path, host, port):
    """Listen on the UNIX socket ``path`` (mode 0666, replacing a stale one) and pipe each
    connection to ``host``:``port`` (TCP). Returns the :class:`asyncio.Server`."""
    async def pipe(reader, writer):
        try:
            far_reader, far_writer = await asyncio.open_connection(host, port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_copy(reader, far_writer), _copy(far_reader, writer))

    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    server = await asyncio.start_unix_server(pipe, path)
    os.chmod(path, 0o666)
    return server
