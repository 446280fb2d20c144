"""The learners' JupyterLab servers under ``make hub``.

:class:`CourseSpawner` is JupyterHub's :class:`~jupyterhub.spawner.LocalProcessSpawner`
(each learner's server runs as that learner's system user, in their home) with
these additions, all only when the hub runs as root:

* **A private mount namespace** (:func:`confine`, run in the forked child before
  it drops to the learner's uid). The course's Python lives where learners
  cannot go: the venv's interpreter links into root's home (mode 0700), and
  the repository holds the hidden tests, the grading database and the hub's
  state. In the learner's namespace empty tmpfs mounts cover root's home, the
  repository, ``/tmp``, ``/dev/shm``, ``/var/tmp`` and ``/run/lock`` (their own),
  System V IPC is the server's own (an IPC namespace), and only the interpreter
  (``sys.base_prefix``) and the venv (``sys.prefix``) are bound back, at the
  same paths, so ``<repo>/.venv/bin/python`` runs and nothing else of the
  repository is there. Homes are made mode 0700: a learner cannot read
  another's.
* **A network of its own** (:mod:`learner_net`): the server runs in a network namespace
  holding only its loopback and listens on a UNIX socket only the learner and root can
  reach (:attr:`CourseSpawner.socket_root`), which the hub moves into a folder of its own
  once the server listens and routes to only there (:meth:`CourseSpawner.adopt_socket`:
  nothing the learner can change is followed); the hub's API and the grading service are
  reached through two UNIX sockets beside it. A port a learner's process listens on
  exists only in that namespace, where no browser connects.
* **Nothing outlives the server**: it runs in a cgroup of its own
  (:mod:`autograder.sandbox.cgroups`, joined before it drops to the learner's uid), and
  when it stops everything in that cgroup is killed (``cgroup.kill``), whatever its uid
  or session, then every process of the learner's user too (one started outside the
  server, in a shell over SSH) (:meth:`CourseSpawner.stop`); the server runs with
  ``no_new_privs``, so no setuid program it starts leaves the learner's uid. Without
  cgroup v2 (or before Linux 5.14) the hub says so and ends processes by uid only.
* **The course workspace in the home** (:meth:`CourseSpawner.lay_workspace`), before
  each start and again while the server runs whenever the release changed (checked
  at each of JupyterHub's polls, :meth:`CourseSpawner.poll`, so an exercise released
  mid-course reaches running servers without a restart): the lessons and released
  exercises copied by
  ``scripts/jupyter_local.py``'s ``build_workspace`` (a notebook the learner
  changed is never overwritten) plus the learner JupyterLab's settings
  (nbgrader's Validate, no Nbgrader menu). It runs as the
  learner, from a world-readable copy of its inputs, so root never writes into a
  folder the learner controls (no symlink games).
"""
import asyncio
import ctypes
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlparse

from jupyter_server import DEFAULT_JUPYTER_SERVER_PORT
from jupyterhub.spawner import LocalProcessSpawner
from traitlets import Unicode

from autograder.defaults import CHECKOUT as REPO
from autograder.sandbox import cgroups, mounts
from autograder.sandbox.uids import end_uid
from deploy.hub import learner_net

HERE = Path(__file__).resolve().parent
SCRIPTS = REPO / "scripts"
LESSONS = REPO / "_build" / "html" / "_notebooks" / "lessons"
RELEASE = REPO / "exercises" / "release"
# The notebooks' submit cell imports it (and it the course's defaults); the repository
# is hidden from learners' servers, so each home gets a copy (learner_home.py, COURSE_LIB).
SUBMIT = REPO / "autograder" / "learner_submit.py"
DEFAULTS = REPO / "autograder" / "defaults.py"
# What learner_home.py runs with, beside lessons/ and release/ in the staging copy.
STAGED = (SCRIPTS / "jupyter_local.py", HERE / "learner_home.py", SUBMIT, DEFAULTS)
COURSE_LIB = ".course-lib"
HUB_CGROUP = "course-hub"  # every server's cgroup is below <cgroup v2 root>/course-hub/


def release_state():
    """Each released notebook with its modification time (a sorted tuple): changes
    when an exercise is released, or released again."""
    return tuple(sorted((str(p.relative_to(RELEASE)), p.stat().st_mtime_ns)
                        for p in RELEASE.glob("*/*.ipynb")))


def course_lib(spawner):
    """``$PYTHONPATH`` of a learner's server: the copy of the submit module in their home."""
    return str(Path(pwd.getpwnam(spawner.user.name).pw_dir) / COURSE_LIB)

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWNET = 0x00020000, 0x08000000, 0x40000000
PR_SET_NO_NEW_PRIVS = 38


def covers():
    """Folders hidden from learners' servers, with their tmpfs options: the machine's
    shared scratch, /tmp, /dev/shm, /var/tmp and /run/lock (/var/lock links there: each
    server's own, gone with it, so nothing passes between learners or outlives a server),
    root's home and the repository (empty, holding only what is bound back)."""
    return {"/tmp": "size=512m,mode=1777", "/dev/shm": "size=512m,mode=1777",
            "/var/tmp": "size=512m,mode=1777", "/run/lock": "size=8m,mode=1777",
            os.path.expanduser("~root"): mounts.SMALL, str(REPO): mounts.SMALL}


def kept():
    """What is bound back under :func:`covers`: the interpreter's prefix and the venv."""
    return mounts.under(mounts.interpreter_paths(), covers())


def confine():
    """In the learner's forked child, as root: the private mount namespace above, and a
    network namespace holding only its own loopback (:mod:`learner_net`).

    Raises OSError when namespaces are not available (the server does not start,
    rather than start with the repository in view or its ports on the machine's)."""
    lib = mounts.libc()
    # System V shared memory of its own too: freed when the server's last process ends.
    if lib.unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET)")
    learner_net.loopback_up()
    mounts.make_root_private(lib)
    mounts.cover(lib, covers(), kept())


def no_new_privileges():
    """``PR_SET_NO_NEW_PRIVS`` for this process and all it starts: a setuid program a
    learner runs keeps the learner's uid, so it ends with the learner's processes."""
    if mounts.libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")


class CourseSpawner(LocalProcessSpawner):
    """LocalProcessSpawner + :func:`confine` + the course workspace (see the module)."""

    _laid = None  # release_state() when the workspace was last laid
    _pipes = None  # the hub's and the grader's UNIX sockets (learner_net.serve_pipe), once
    _cgroup = None  # the server's cgroup (a Path) while it runs, where there is one

    socket_root = Unicode(
        "/run/course-hub", config=True,
        help="Folder of the servers' UNIX sockets (learner_net): one per hub on a machine.")
    grader_address = Unicode(
        "", config=True,  # jupyterhub_config.py sets it (GRADER_PORT)
        help="host:port of the grading service, piped to <socket_root>/grader.sock.")

    @property
    def confined(self):
        """Whether servers get their own namespaces (the hub runs as root)."""
        return os.geteuid() == 0

    def socket_dir(self):
        return Path(self.socket_root) / self.user.name

    def make_preexec_fn(self, name):
        drop = super().make_preexec_fn(name)  # setgroups, setgid, setuid, chdir home
        if os.geteuid() != 0:
            return drop

        group = self._cgroup

        def preexec():
            if group is not None:
                cgroups.join(group)  # before anything else: all it starts is in there
            confine()
            drop()
            no_new_privileges()

        return preexec

    async def start(self):
        await asyncio.to_thread(self.lay_workspace)
        if not self.confined:
            return await super().start()
        await self.open_pipes()
        sock = await asyncio.to_thread(self.prepare_socket_dir)
        self._cgroup = await asyncio.to_thread(self.make_cgroup)
        # jupyter-server refuses --sock beside a port other than its default; the port
        # in JUPYTERHUB_SERVICE_URL is never bound (the server listens on the socket only)
        self.port = DEFAULT_JUPYTER_SERVER_PORT
        await super().start()
        url = learner_net.unix_url(await self.adopt_socket(sock))
        self.server.connect_url = url + self.server.base_url  # where the hub and proxy connect
        return url

    def route(self):
        """Where the hub and the proxy reach this server: its socket, moved into root's
        own folder (:func:`learner_net.adopt`)."""
        return learner_net.route(self.socket_root, self.user.name)

    async def adopt_socket(self, sock):
        """Wait (up to ``http_timeout``) until the server listens on ``sock``, then move it
        to :meth:`route` and check it there; the route's path. Raises RuntimeError when
        the server ended first, did not listen in time, or what was there was not its
        own socket (then the learner's server does not start)."""
        deadline = asyncio.get_running_loop().time() + self.http_timeout
        while not learner_net.listening(self.pid, str(sock)):
            if await super().poll() is not None:
                raise RuntimeError(f"{self.user.name}'s server ended before it listened")
            if asyncio.get_running_loop().time() > deadline:
                raise RuntimeError(f"{self.user.name}'s server did not listen on {sock}")
            await asyncio.sleep(0.1)
        uid = pwd.getpwnam(self.user.name).pw_uid
        try:
            await asyncio.to_thread(learner_net.adopt, sock.parent, self.route(), uid, self.pid)
        except learner_net.NotHers as err:
            self.log.error("%s's server is not started: %s", self.user.name, err)
            raise RuntimeError(f"{self.user.name}'s server socket was not its own") from None
        return self.route()

    def get_args(self):
        args = super().get_args()
        if self.confined:
            args.append(f"--ServerApp.sock={self.socket_dir() / learner_net.SERVER_SOCK}")
        return args

    async def open_pipes(self):
        """The hub's API and the grading service as UNIX sockets in :attr:`socket_root`
        (once per hub; every learner's server connects to the same two)."""
        if CourseSpawner._pipes is not None:
            return
        root = Path(self.socket_root)
        root.mkdir(mode=0o711, parents=True, exist_ok=True)
        root.chmod(0o711)
        hub = urlparse(self.hub.api_url)
        host, port = self.grader_address.rsplit(":", 1)
        caps = learner_net.Caps()  # what one learner holds through both, in the hub's process
        CourseSpawner._pipes = [
            await learner_net.serve_pipe(str(root / "hub.sock"), hub.hostname, hub.port, caps),
            await learner_net.serve_pipe(str(root / "grader.sock"), host, int(port), caps)]

    def cgroup_names(self):
        """The server's cgroup below ``course-hub/``: this hub's (the name of its
        :attr:`socket_root`), then the learner's name."""
        return Path(self.socket_root).name, self.user.name

    def make_cgroup(self):
        """The server's cgroup (emptied first: a server of before a crash), or None where
        there is no cgroup v2 with ``cgroup.kill`` (then said in the log)."""
        group = cgroups.make(HUB_CGROUP, *self.cgroup_names())
        if group is None:
            self.log.warning("no cgroup v2 with cgroup.kill here: %s's processes are ended "
                             "by uid only when the server stops", self.user.name)
        elif not cgroups.kill(group) or cgroups.make(HUB_CGROUP, *self.cgroup_names()) is None:
            raise RuntimeError(f"could not empty the cgroup {group}")
        return group

    def end_cgroup(self):
        """Kill everything in the server's cgroup and remove it (a no-op without one)."""
        group = self._cgroup
        if group is None:
            root = cgroups.v2_root()
            group = root.joinpath(HUB_CGROUP, *self.cgroup_names()) if root else None
        if group is not None and not cgroups.kill(group):
            self.log.error("processes of %s's server outlived cgroup.kill in %s",
                           self.user.name, group)
        self._cgroup = None

    def prepare_socket_dir(self):
        """A fresh ``<socket_root>/<name>/``, the learner's own (mode 0700): the path of the
        server's socket in it."""
        entry = pwd.getpwnam(self.user.name)
        folder = self.socket_dir()
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(mode=0o700)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
        try:
            self.route().unlink()  # a route of before a crash reaches nothing until adopted
        except FileNotFoundError:
            pass
        return folder / learner_net.SERVER_SOCK

    async def poll(self):
        """JupyterHub's check that the server runs (every ``poll_interval``, 30 s by
        default); a running server whose workspace predates the release gets it laid
        again: a new exercise appears in the learner's file browser, no restart."""
        status = await super().poll()
        if status is None and self.confined and self.server and not self.server.connect_url:
            # a server started before the hub restarted: its route, checked again, the pipes
            await self.open_pipes()
            try:
                await asyncio.to_thread(learner_net.check, self.route(),
                                        pwd.getpwnam(self.user.name).pw_uid, self.pid)
            except learner_net.NotHers as err:
                self.log.error("%s's server has no route of its own: %s", self.user.name, err)
                return 1  # the hub then sees it stopped (and stops it)
            self.server.connect_url = learner_net.unix_url(self.route()) + self.server.base_url
        if status is None and self._laid != release_state():
            try:
                await asyncio.to_thread(self.lay_workspace)
            except Exception:  # the server still runs: say so, and try at the next poll
                self.log.exception("could not lay the new release for %s", self.user.name)
        return status

    async def stop(self, now=False):
        """Stop the server, then everything in its cgroup, then every process of the
        learner's user: nothing a learner started (``setsid nohup``, a daemon, whatever
        its uid) outlives their server, and nothing answers on its socket."""
        await super().stop(now=now)
        if self.confined:
            await asyncio.to_thread(self.end_cgroup)
            await asyncio.to_thread(end_uid, pwd.getpwnam(self.user.name).pw_uid)
            shutil.rmtree(self.socket_dir(), ignore_errors=True)
            try:
                self.route().unlink()  # nothing answers there
            except FileNotFoundError:
                pass

    def staging_root(self):
        """Where the workspace's inputs are copied for the learner's process to read: a
        folder its namespace shows (its /tmp and /var/tmp are its own): the socket root
        (made here, root's, mode 0711), or /var/tmp where servers are not confined."""
        if not self.confined:
            return "/var/tmp"
        root = Path(self.socket_root)
        root.mkdir(mode=0o711, parents=True, exist_ok=True)
        return str(root)

    def lay_workspace(self):
        """Copy the course into the learner's home, as the learner (see the module)."""
        name = self.user.name
        home = pwd.getpwnam(name).pw_dir
        state = release_state()  # before copying: a release made meanwhile is laid next
        if os.geteuid() == 0:
            os.chmod(home, 0o700)  # other learners cannot read it
        staging = Path(tempfile.mkdtemp(prefix=".workspace-", dir=self.staging_root()))
        try:
            shutil.copytree(LESSONS, staging / "lessons")
            shutil.copytree(RELEASE, staging / "release")
            for script in STAGED:
                shutil.copy(script, staging / script.name)
            for path in [staging, *staging.rglob("*")]:
                path.chmod(0o755 if path.is_dir() else 0o644)
            done = subprocess.run(
                [sys.executable, str(staging / "learner_home.py"), home],
                preexec_fn=self.make_preexec_fn(name), env={"PATH": "/usr/bin:/bin", "HOME": home},
                capture_output=True, text=True, timeout=120)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        if done.returncode != 0:
            raise RuntimeError(f"could not lay the course workspace in {home}: "
                               f"{done.stderr[-2000:]}")
        self._laid = state
        self.log.info("course workspace for %s: %s", name, done.stdout.strip())
