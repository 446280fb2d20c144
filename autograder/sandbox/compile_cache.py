"""The grader's compile cache: each XLA program a course's grading meets, compiled once.

Runs in the grader's process (:func:`ready`: which folders of entries are warm, and a
warming process started for each that is not), the supervisor's (:class:`Served`,
:func:`answer`) and the learner's (:class:`Remote`, :func:`connect`, :func:`counts`). The
warming process is :mod:`autograder.sandbox.warm`.

JAX's persistent compilation cache stores compiled XLA executables under a key of the
program, its compile options, the XLA flags, the devices and JAX's version. Whoever can
write such an entry runs code in every process that loads it (JAX's docs), and whoever
can read them all reads the instructors' answers compiled. So:

- only a warming process writes, one that the grader (as root) starts fresh and that
  has run no learner code: with the zygote's environment (the XLA flags and devices of a
  learner's process) it runs every sample answer of the exercise and its probe, JAX's
  own cache writing into a root-only staging folder; then it records each entry's
  SHA-256 in a manifest and renames the folder into place (mode 0700, root's);
- a learner's process reads no folder and holds no entry it did not compile itself: JAX's
  cache there is :class:`Remote`, which asks the supervisor for the one key JAX computed
  from the learner's own program, and the supervisor (root, after forking that process)
  answers with the entry, if its folder and file are root's alone and its bytes are the
  manifest's. What JAX would write from a learner's process goes nowhere.

A hit is visible to learner code (its compile is quicker), so it says the learner's
program is one a sample answer compiled: every sample is warmed, full-mark and wrong
alike, so that a hit does not tell a right program from a wrong one, and without the
samples' source lines in the programs' metadata.

A folder is keyed (:func:`key`) on the exercise's grading version (its hidden tests, probe,
metadata and the probes' helpers: :mod:`autograder.exercises.current`), JAX's, jaxlib's
and Python's versions, the zygote's JAX and XLA variables and this machine's CPU: an
edited probe or hidden test, a new JAX or new flags name a new folder, warmed afresh (the
exercise's other folders are removed then). A miss costs only the compile: an entry that
is missing, unreadable, not root's alone or not what its manifest says is a miss.
"""
import functools
import hashlib
import json
import logging
import os
import platform
import re
import stat
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from autograder import defaults

log = logging.getLogger("autograder.sandbox")
MANIFEST = "manifest.json"
SUFFIX = "-cache"  # the file name JAX's cache gives an entry: <key>-cache
ENTRY_BYTES = 64 * 2**20  # a larger entry is not served
KEY = re.compile(r"[A-Za-z0-9_.-]{1,300}")  # a JAX cache key (module name, then SHA-256)
KEY_CHARS = 300
REQUESTS = 100_000  # keys one learner's process may ask for
NEVER_WRITE_S = 1e9  # a learner's process writes nothing: no compile takes this long


def root():
    """The cache's folder (a Path), or None where the setting ``GRADER_COMPILE_CACHE`` is
    empty (the cache is off)."""
    text = defaults.setting("GRADER_COMPILE_CACHE")
    return Path(text) if text else None


@functools.lru_cache(maxsize=1)
def _machine():
    """What this machine's XLA compiles for: its architecture and CPU model and flags."""
    wanted = ("model name", "flags", "Features", "CPU part")
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        lines = []
    found = sorted({line for line in lines if line.split(":")[0].strip() in wanted})
    return hashlib.sha256("\n".join([platform.machine(), *found]).encode()).hexdigest()


@functools.lru_cache(maxsize=1)
def _packages():
    """``{"jax": version, "jaxlib": version}`` as installed (read once: a grading service
    asks for every grading)."""
    return {name: metadata.version(name) for name in ("jax", "jaxlib")}


def key_parts(exercise, version, environment):
    """What a folder of entries is keyed on (a JSON-able dict): ``exercise`` and its grading
    ``version``, JAX's, jaxlib's and Python's versions, the JAX and XLA variables of
    ``environment`` (the zygote's: platform, flags, device count) and the machine."""
    return {"exercise": exercise, "grading_version": version, **_packages(),
            "python": platform.python_version(),
            "environment": {k: v for k, v in sorted(environment.items())
                            if k.startswith(("JAX_", "XLA_"))},
            "machine": _machine()}


def key(exercise, version, environment):
    """The name of the folder of ``exercise``'s entries: ``<exercise>-<digest>``."""
    parts = json.dumps(key_parts(exercise, version, environment), sort_keys=True)
    return f"{exercise}-{hashlib.sha256(parts.encode()).hexdigest()[:32]}"


def untrusted(path, ancestors=True):
    """Why ``path`` may have been written by someone other than root, or None.

    It must be root's, not a symbolic link, and writable by no group or other user; each
    folder above it (with ``ancestors``) root's and writable by no one else, or sticky
    (like /tmp, where no one can rename or remove what root made).
    """
    path = Path(os.path.abspath(path))
    for part in ([*reversed(path.parents)] if ancestors else []) + [path]:
        try:
            info = os.lstat(part)
        except OSError as exc:
            return f"{part}: {exc.strerror}"
        if stat.S_ISLNK(info.st_mode):
            return f"{part} is a symbolic link"
        if info.st_uid != 0:
            return f"{part} belongs to uid {info.st_uid}, not root"
        sticky = part != path and info.st_mode & stat.S_ISVTX
        if info.st_mode & 0o022 and not sticky:
            return f"{part} is writable by others (mode {stat.S_IMODE(info.st_mode):o})"
    return None


def problem(folder):
    """Why the cache at ``folder`` cannot be used by this process, or None. Only a grader
    running as root uses it: otherwise learner code runs as the grader's own user, who
    can write the cache."""
    if folder is None:
        return "it is off (GRADER_COMPILE_CACHE is empty)"
    if os.geteuid() != 0:
        return "grading does not run as root, so learner code could write it"
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError as exc:
        return f"{folder} cannot be made: {exc.strerror}"
    return untrusted(folder)


def ready(versions, environment, folder=None):
    """The folders of entries for ``versions`` (``{exercise: grading version}``) that are
    warm now; for each that is not, a warming process is started (:mod:`autograder.sandbox.warm`,
    once per key at a time) and this grading goes without it. [] when the cache cannot be
    used here (:func:`problem`, logged). Runs in the grader's process; ``environment`` is
    the zygote's."""
    folder = root() if folder is None else Path(folder)
    why = problem(folder)
    if why:
        log.info("no compile cache: %s", why)
        return []
    found = []
    for exercise, version in sorted(versions.items()):
        target = folder / key(exercise, version, environment)
        if (target / MANIFEST).exists():
            found.append(str(target))
        else:
            start_warming(exercise, folder, environment)
    return found


# (exercise, folder, environment) -> (its warming process, when it started)
_warming: dict[tuple[Any, ...], tuple[Any, float]] = {}
RETRY_S = 600  # a warming that ended without a warm folder is tried again this long after


def start_warming(exercise, folder, environment, python=None, retry_s=RETRY_S):
    """Start a warming process for ``exercise`` into the cache at ``folder`` unless this
    process started one less than ``retry_s`` seconds ago (or it still runs); return the
    one started (a Popen) without waiting. It runs as this process's user (root), in a
    session of its own, with ``environment``."""
    which = (exercise, str(folder), json.dumps(environment, sort_keys=True))
    running, since = _warming.get(which, (None, 0.0))
    if running is not None and (running.poll() is None or time.monotonic() - since < retry_s):
        return running
    code = f"from autograder.sandbox.warm import main; main({exercise!r}, {str(folder)!r})"
    proc = subprocess.Popen([python or sys.executable, "-I", "-c", code], env=dict(environment),
                            cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    _warming[which] = (proc, time.monotonic())
    return proc


class Served:
    """The entries of ``folders`` as the supervisor serves them, one asked-for key at a time
    (:meth:`get`). Each manifest is read on first use, after the learner's process was
    forked: no entry, nor the list of them, is ever in the memory of a process a learner's
    is forked from."""

    def __init__(self, folders):
        self.folders, self.listed = [str(f) for f in folders], None

    def _manifests(self):
        """``{JAX key: (folder, SHA-256)}`` of every folder root alone can write."""
        listed = {}
        for folder in self.folders:
            why = untrusted(folder)
            try:
                entries = {} if why else json.loads(_read_trusted(Path(folder) / MANIFEST))["entries"]
                listed.update({k: (folder, v) for k, v in dict(entries).items()})
            except (OSError, ValueError, KeyError, TypeError) as exc:
                why = f"its manifest cannot be read ({type(exc).__name__})"
            if why:
                log.warning("compile cache folder %s not used: %s", folder, why)
        return listed

    def get(self, key):
        """The entry's bytes for JAX cache ``key`` (str), or None: not listed, not root's
        alone, or not what its manifest says (logged; a miss)."""
        if self.listed is None:
            self.listed = self._manifests()
        folder, digest = self.listed.get(key, (None, None))
        if folder is None:
            return None
        try:
            raw = _read_trusted(Path(folder) / f"{key}{SUFFIX}")
        except OSError as exc:
            log.warning("compile cache entry %s not used: %s", key, exc.strerror or exc)
            return None
        if hashlib.sha256(raw).hexdigest() != digest:
            log.warning("compile cache entry %s not used: not what its manifest says", key)
            return None
        return raw


def _read_trusted(path):
    """The bytes of ``path``, a regular file root alone can write (not a link); OSError
    otherwise. Opened without following links, then checked on the open file."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
            raise OSError(f"{path} is not a regular file only root can write")
        if info.st_size > ENTRY_BYTES:
            raise OSError(f"{path} is larger than {ENTRY_BYTES} bytes")
        with os.fdopen(os.dup(fd), "rb") as file:
            return file.read(ENTRY_BYTES + 1)
    finally:
        os.close(fd)


def answer(conn, served, budget):
    """Supervisor side: answer one request read from ``conn`` (a socket to the learner's
    process): a key line in, its entry out (8-byte length, then the bytes; length 0: a
    miss). Returns False when the learner's side closed, misbehaved or ``budget`` (a
    one-element list: requests left) ran out; the caller then stops serving it."""
    try:
        line = conn.recv(KEY_CHARS + 1)
        if not line or not line.endswith(b"\n") or budget[0] <= 0:
            return False
        budget[0] -= 1
        key = line[:-1].decode("ascii", "replace")
        raw = served.get(key) if KEY.fullmatch(key) else None
        conn.sendall(len(raw or b"").to_bytes(8, "big") + (raw or b""))
        return True
    except OSError:  # a learner that stopped reading: no more answers
        return False


class Remote:
    """JAX's cache interface in a learner's process: ``get`` asks the supervisor over a
    socket for the one key JAX computed (a program the learner's process already holds),
    and counts hits and misses; ``put`` keeps nothing."""

    def __init__(self, fd, path):
        import socket

        self._conn, self._path = socket.socket(fileno=fd), path
        self.hits = self.misses = 0

    def get(self, key):
        found = None
        if self._conn is not None and KEY.fullmatch(key or ""):
            try:
                self._conn.sendall(key.encode("ascii") + b"\n")
                size = int.from_bytes(self._read(8), "big")
                found = self._read(size) if size else None
            except OSError:  # the supervisor stopped answering: misses from now on, and no
                self._conn.close()  # warning (JAX's would reach the probes' records)
                self._conn = None
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def _read(self, size):
        chunks, left = [], size
        while left:
            chunk = self._conn.recv(min(left, 1 << 20))
            if not chunk:
                raise OSError("the supervisor closed the compile cache")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def put(self, key, value):
        pass


_remote = None


def connect(fd, path):
    """Learner side: make the supervisor's entries, through ``fd`` (a connected socket),
    JAX's compilation cache in this process, read-only; before JAX's backend starts.
    Does nothing when this JAX has no cache to hand them to."""
    global _remote
    import jax
    from jax._src import compilation_cache

    if not hasattr(compilation_cache, "_cache"):
        os.close(fd)
        return
    jax.config.update("jax_compilation_cache_dir", path)
    # JAX would serialise each compile to write it: a learner's never is.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", NEVER_WRITE_S)
    _remote = Remote(fd, path)
    compilation_cache._cache = _remote
    compilation_cache._cache_initialized = True


def counts():
    """``{"hits", "misses"}`` of this process's cache, or None when it has none (what a
    learner's process reports with its reply)."""
    return None if _remote is None else {"hits": _remote.hits, "misses": _remote.misses}


FOLDERS: list[str] = []  # in the zygote: the warm folders it was started with (paths only)
