"""The learners' JupyterLab servers under ``make hub``.

:class:`CourseSpawner` is JupyterHub's :class:`~jupyterhub.spawner.LocalProcessSpawner`
(each learner's server runs as that learner's system user, in their home) with
these additions, all only when the hub runs as root:

* **A private mount namespace** (:func:`confine`, run in the forked child before
  it drops to the learner's uid). The course's Python lives where learners
  cannot go: the venv's interpreter links into root's home (mode 0700), and
  the repository holds the hidden tests, the grading database and the hub's
  state. In the learner's namespace empty tmpfs mounts cover root's home, the
  repository, every other top-level folder that is not the system's own (another
  checkout), ``/run`` and ``/var`` (the machine's servers' sockets), ``/tmp``,
  ``/dev/shm``, ``/var/tmp`` and ``/run/lock`` (their own), System V IPC is the
  server's own (an IPC namespace), and only the interpreter (``sys.base_prefix``), the
  venv (``sys.prefix``), her home and the hub's socket folder are bound back, at the
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
* **Limits** (:meth:`CourseSpawner.make_cgroup`, :mod:`learner_disk`): the server's cgroup
  bounds the memory (``HUB_MEMORY_MIB``), processes (``HUB_PROCESSES``) and CPU
  (``HUB_CPUS``, and an equal share) of all its processes together, in cgroup v2 or the
  v1 hierarchies, wherever each controller is; a process past the memory limit is
  killed by the kernel (a kernel restarts, and its next cell says why: the startup file
  ``learner_home.py`` lays), and the hub's log says so at its next poll. Her home is a
  file system of ``HUB_HOME_MIB`` of its own, mounted when her server first starts; the
  folder of her server's socket a 1 MiB tmpfs. What the server and all it starts print
  goes to a file in her home (:func:`own_output`), not into the hub's log.
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
from traitlets import Float, Integer, Unicode

from autograder.defaults import CHECKOUT as REPO
from autograder.sandbox import cgroups, mounts
from autograder.sandbox.confine import SYSTEM
from autograder.sandbox.uids import end_uid
from deploy.hub import learner_disk, learner_net

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
SERVER_LOG = ".course-server.log"  # in her home: what her server and its processes print
HUB_CGROUP = "course-hub"  # every server's cgroup is below <cgroup v2 root>/course-hub/


def release_state():
    """Each released notebook with its modification time (a sorted tuple): changes
    when an exercise is released, or released again."""
    return tuple(sorted((str(p.relative_to(RELEASE)), p.stat().st_mtime_ns)
                        for p in RELEASE.glob("*/*.ipynb")))


def course_lib(spawner):
    """``$PYTHONPATH`` of a learner's server: the copy of the submit module in their home."""
    return str(Path(pwd.getpwnam(spawner.user.name).pw_dir) / COURSE_LIB)

# The name service's servers (for users from LDAP, say: nscd, sssd, nslcd), which every
# user may ask; bound back only where the machine has them.
NAME_SERVICE = ("/run/nscd", "/var/lib/sss/pipes", "/run/nslcd")
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWNET = 0x00020000, 0x08000000, 0x40000000
PR_SET_NO_NEW_PRIVS = 38


def covers():
    """Folders hidden from learners' servers, with their tmpfs options: the machine's
    shared scratch, /tmp, /dev/shm, /var/tmp and /run/lock (/var/lock links there: each
    server's own, gone with it, so nothing passes between learners or outlives a server),
    root's home, the repository and every other top-level folder that is not the
    system's own (``confine.SYSTEM``: ``/home``, ``/srv``, ``/opt``, ...), as for a
    graded submission, so that no other checkout or copy of the course is readable by
    its modes alone (empty, holding only what is bound back)."""
    tops = sorted(e.path for e in os.scandir("/")
                  if e.name not in SYSTEM and e.is_dir(follow_symlinks=False))
    # /run and /var first (the scratch folders below them are made on their covers): the
    # machine's servers keep their UNIX sockets there (a database's, the system bus,
    # another hub's pipes), which a network namespace does not cut off
    return {"/run": mounts.SMALL, "/var": mounts.SMALL,
            "/tmp": "size=512m,mode=1777", "/dev/shm": "size=512m,mode=1777",
            "/var/tmp": "size=512m,mode=1777", "/run/lock": "size=8m,mode=1777",
            "/var/lock": "size=8m,mode=1777", **{top: mounts.SMALL for top in tops},
            os.path.expanduser("~root"): mounts.SMALL, str(REPO): mounts.SMALL}


def kept(home, socket_root):
    """What is bound back under :func:`covers`: the interpreter's prefix, the venv, the
    learner's ``home``, the hub's ``socket_root`` (her server's socket, ``hub.sock`` and
    ``grader.sock``; str paths) and the name service's sockets where the machine has them
    (nscd's, sssd's, nslcd's: who a uid is)."""
    own = [(p, os.path.realpath(p)) for p in (home, socket_root, *NAME_SERVICE)
           if p in (home, socket_root) or os.path.isdir(p)]
    return mounts.under(mounts.interpreter_paths() + own, covers())


def confine(home, socket_root):
    """In the learner's forked child, as root: the private mount namespace above (``home``
    and ``socket_root`` kept), and a network namespace holding only its own loopback
    (:mod:`learner_net`).

    Raises OSError when namespaces are not available (the server does not start,
    rather than start with the repository in view or its ports on the machine's)."""
    lib = mounts.libc()
    # System V shared memory of its own too: freed when the server's last process ends.
    if lib.unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET)")
    learner_net.loopback_up()
    mounts.make_root_private(lib)
    mounts.cover(lib, covers(), kept(home, socket_root))


def own_output(home):
    """Send this process's output (descriptors 1 and 2, which a server and all it starts
    inherit) to ``<home>/.course-server.log``, made afresh, or to ``/dev/null`` where it
    cannot be made. Called as the learner (her uid), so the file counts against her home's
    size and nothing she placed at that name is followed: the hub's log, on the disk of
    the hub's state, holds nothing she prints."""
    path = os.path.join(home, SERVER_LOG)
    try:
        os.unlink(path)
    except OSError:
        pass
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError:
        fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    if fd > 2:
        os.close(fd)


def no_new_privileges():
    """``PR_SET_NO_NEW_PRIVS`` for this process and all it starts: a setuid program a
    learner runs keeps the learner's uid, so it ends with the learner's processes."""
    if mounts.libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")


class CourseSpawner(LocalProcessSpawner):
    """LocalProcessSpawner + :func:`confine` + the course workspace (see the module)."""

    _laid = None  # release_state() when the workspace was last laid
    _pipes = None  # the hub's and the grader's UNIX sockets (learner_net.serve_pipe), once
    _cgroup = None  # the server's cgroups (a cgroups.Group) while it runs
    _memory_kills = 0  # processes of it killed at its memory limit, as last logged

    socket_root = Unicode(
        "/run/course-hub", config=True,
        help="Folder of the servers' UNIX sockets (learner_net): one per hub on a machine.")
    grader_address = Unicode(
        "", config=True,  # jupyterhub_config.py sets it (GRADER_PORT)
        help="host:port of the grading service, piped to <socket_root>/grader.sock.")
    memory_mib = Integer(0, config=True, help="MiB of memory of the server (0: unbounded).")
    processes = Integer(0, config=True, help="Processes and threads of the server (0: unbounded).")
    cpus = Float(0.0, config=True, help="Cores' time the server may use at most (0: no cap).")
    home_mib = Integer(0, config=True, help="MiB of the learner's home (0: unbounded).")
    home_images = Unicode(
        "", config=True, help="Root-only folder of the homes' file-system images (learner_disk).")

    @property
    def confined(self):
        """Whether servers get their own namespaces (the hub runs as root)."""
        return os.geteuid() == 0

    def socket_dir(self):
        return Path(self.socket_root) / self.user.name

    def make_preexec_fn(self, name, own_log=True):
        """What the forked child runs before the server (``own_log``: its output goes to
        her home, :func:`own_output`; False where the hub reads it, as for the workspace)."""
        drop = super().make_preexec_fn(name)  # setgroups, setgid, setuid, chdir home
        if os.geteuid() != 0:
            return drop

        group = self._cgroup
        home, root = pwd.getpwnam(name).pw_dir, str(self.made_socket_root())

        def preexec():
            if group is not None:
                group.join()  # before anything else: all it starts is in there
            confine(home, root)
            drop()
            if own_log:
                own_output(home)
            no_new_privileges()

        return preexec

    async def start(self):
        await asyncio.to_thread(self.mount_home)
        await asyncio.to_thread(self.lay_workspace)
        if not self.confined:
            return await super().start()
        await self.open_pipes()
        sock = await asyncio.to_thread(self.prepare_socket_dir)
        self._cgroup = await asyncio.to_thread(self.make_cgroup)
        self._memory_kills = 0
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
        root = self.made_socket_root()
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
        """The server's :class:`~autograder.sandbox.cgroups.Group` (emptied first: a server
        of before a crash), bounded by :attr:`memory_mib`, :attr:`processes` and
        :attr:`cpus` with an equal CPU weight; the log says what this host cannot bound,
        and when there is no cgroup v2 with ``cgroup.kill``."""
        names = (HUB_CGROUP, *self.cgroup_names())
        if not cgroups.found(*names).kill():
            raise RuntimeError(f"could not empty the cgroups of {'/'.join(names)}")
        group = cgroups.limited(names, memory_mib=self.memory_mib or None,
                                processes=self.processes or None, cpu_weight=100,
                                cpus=self.cpus or None)
        if group.v2 is None:
            self.log.warning("no cgroup v2 with cgroup.kill here: %s's processes are ended "
                             "by uid only when the server stops", self.user.name)
        wanted = {"memory": self.memory_mib, "processes": self.processes, "cpu": 100,
                  "cpus": self.cpus}
        missing = [k for k, v in wanted.items() if v and k not in group.bounds]
        if missing:
            self.log.warning("this host has no cgroup controller for %s: %s's server is "
                             "not bounded in it", ", ".join(missing), self.user.name)
        return group

    def end_cgroup(self):
        """Kill everything in the server's cgroups and remove them (also those a hub of
        before a restart made)."""
        group = self._cgroup or cgroups.found(HUB_CGROUP, *self.cgroup_names())
        if not group.kill():
            self.log.error("processes of %s's server outlived their kill in %s",
                           self.user.name, group.folders())
        self._cgroup = None

    def memory_environment(self):
        """What the kernels' startup file (``learner_home.py``) reads to say a process was
        killed at the memory limit: the cgroup file counting those kills and the limit."""
        group = self._cgroup
        if group is None or "memory" not in group.bounds:
            return {}
        events = (group.v2 / "memory.events" if group.bounds["memory"][1] == "v2"
                  else group.v1["memory"] / "memory.oom_control")
        return {"COURSE_MEMORY_EVENTS": str(events), "COURSE_MEMORY_MIB": str(self.memory_mib)}

    def get_env(self):
        env = super().get_env()
        env.update(self.memory_environment())
        return env

    def note_memory_kills(self):
        """Say in the hub's log when the kernel killed processes of the server at its
        memory limit since the last look (at each poll)."""
        group = self._cgroup
        kills = group.memory_kills() if group is not None else 0
        if kills > self._memory_kills:
            self.log.warning("%s's server reached its memory limit (%d MiB): the kernel "
                             "killed %d of its processes (a kernel then restarts)",
                             self.user.name, self.memory_mib, kills - self._memory_kills)
            self._memory_kills = kills

    def home_image(self):
        return Path(self.home_images) / f"{self.user.name}.ext4"

    def mount_home(self):
        """The learner's home as a file system of :attr:`home_mib` (:mod:`learner_disk`)."""
        if self.home_mib and self.confined:
            entry = pwd.getpwnam(self.user.name)
            learner_disk.mount_home(entry.pw_dir, self.home_image(), self.home_mib,
                                    entry.pw_uid, entry.pw_gid)

    def prepare_socket_dir(self):
        """A fresh ``<socket_root>/<name>/``, the learner's own (mode 0700): the path of the
        server's socket in it."""
        entry = pwd.getpwnam(self.user.name)
        folder = self.socket_dir()
        # a route of before a crash reaches nothing until adopted again, and it would
        # hold the old folder's file system mounted
        learner_net.unroute(self.route())
        self.remove_socket_dir()
        folder.mkdir(mode=0o700)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
        # hers to write in, on the machine's disk otherwise: a small tmpfs of its own
        learner_disk.mount_small(folder, entry.pw_uid, entry.pw_gid)
        return folder / learner_net.SERVER_SOCK

    def remove_socket_dir(self):
        """Unmount and remove ``<socket_root>/<name>/`` (nothing answers there after)."""
        try:
            learner_disk.unmount_home(self.socket_dir())
        except RuntimeError as error:
            self.log.error("could not unmount %s: %s", self.socket_dir(), error)
        shutil.rmtree(self.socket_dir(), ignore_errors=True)

    async def poll(self):
        """JupyterHub's check that the server runs (every ``poll_interval``, 30 s by
        default); a running server whose workspace predates the release gets it laid
        again: a new exercise appears in the learner's file browser, no restart."""
        status = await super().poll()
        if status is None and self.confined:
            self.note_memory_kills()
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
            # the route first: it holds her socket folder's file system mounted
            await asyncio.to_thread(learner_net.unroute, self.route())
            await asyncio.to_thread(self.remove_socket_dir)

    def staging_root(self):
        """Where the workspace's inputs are copied for the learner's process to read: a
        folder its namespace shows (its /tmp and /var/tmp are its own): the socket root
        (made here, root's, mode 0711), or /var/tmp where servers are not confined."""
        if not self.confined:
            return "/var/tmp"
        return str(self.made_socket_root())

    def made_socket_root(self):
        """:attr:`socket_root` as a :class:`~pathlib.Path`, made (root's) where missing and
        left mode 0711: learners pass through it to their own folders, list nothing."""
        root = Path(self.socket_root)
        root.mkdir(mode=0o711, parents=True, exist_ok=True)
        root.chmod(0o711)
        return root

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
                preexec_fn=self.make_preexec_fn(name, own_log=False), env={"PATH": "/usr/bin:/bin", "HOME": home},
                capture_output=True, text=True, timeout=120)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        if done.returncode != 0:
            raise RuntimeError(f"could not lay the course workspace in {home}: "
                               f"{done.stderr[-2000:]}")
        self._laid = state
        self.log.info("course workspace for %s: %s", name, done.stdout.strip())
