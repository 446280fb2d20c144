"""The grader's compile cache: each XLA program a course's grading meets, compiled once.

Runs in the grader's process (:func:`ready`: which folders of entries are warm, and a
warming process started for each that is not), the zygote's (:func:`load`, :func:`install`)
and the learner's (:func:`counts`). The warming process is :mod:`autograder.sandbox.warm`.

JAX's persistent compilation cache stores compiled XLA executables under a key of the
program, its compile options, the XLA flags, the devices and JAX's version. Whoever can
write such an entry runs code in every process that loads it (JAX's docs), so this cache
is written and read only where no learner reaches:

- written only by a warming process the grader (as root) starts fresh, which has run no
  learner code: with the zygote's environment (the XLA flags and devices of a learner's
  process) it runs the exercise's reference answers and its probe, JAX's own cache
  writing into a root-only staging folder, then records each entry's SHA-256 in a
  manifest and renames the folder into place;
- read only by the zygote, as root, before it forks anything: each entry of a folder root
  alone can write, checked against the manifest, is held in memory and handed to JAX as a
  read-only cache (:class:`Held`) that every learner's process inherits from the fork. A
  learner's process never opens the folder (its mount namespace covers it, and it is
  root's, mode 0700), and what JAX would write from there goes nowhere.

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
import stat
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from autograder import defaults

log = logging.getLogger("autograder.sandbox")
MANIFEST = "manifest.json"
SUFFIX = "-cache"  # the file name JAX's cache gives an entry: <key>-cache
LOADED_BYTES = 256 * 2**20  # at most this much of entries is held in a zygote's memory
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


def key_parts(exercise, version, environment):
    """What a folder of entries is keyed on (a JSON-able dict): ``exercise`` and its grading
    ``version``, JAX's, jaxlib's and Python's versions, the JAX and XLA variables of
    ``environment`` (the zygote's: platform, flags, device count) and the machine."""
    return {"exercise": exercise, "grading_version": version,
            "jax": metadata.version("jax"), "jaxlib": metadata.version("jaxlib"),
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


_warming = {}  # (exercise, folder) -> its warming process, while it runs


def start_warming(exercise, folder, environment, python=None):
    """Start a warming process for ``exercise`` into the cache at ``folder`` unless this
    process already has one running; return it (a Popen) without waiting. It runs as this
    process's user (root), in a session of its own, with ``environment``."""
    from autograder.sandbox.confine import import_paths

    running = _warming.get((exercise, str(folder)))
    if running is not None and running.poll() is None:
        return running
    code = (f"import sys; sys.path[:0] = {import_paths()!r}; "
            f"from autograder.sandbox.warm import main; main({exercise!r}, {str(folder)!r})")
    proc = subprocess.Popen([python or sys.executable, "-I", "-c", code], env=dict(environment),
                            cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    _warming[(exercise, str(folder))] = proc
    return proc


def load(folders, budget=LOADED_BYTES):
    """``{JAX cache key: entry bytes}`` of every good entry in ``folders`` (this process
    must be root's: the zygote's). A folder or entry that is not root's alone, or whose
    bytes are not what its manifest says, is left out (logged): a miss, never a wrong
    program. At most ``budget`` bytes are kept."""
    entries, size = {}, 0
    for folder in folders:
        why = untrusted(folder)
        try:
            listed = {} if why else json.loads(_read_trusted(Path(folder) / MANIFEST))["entries"]
            listed = dict(listed)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            why = f"its manifest cannot be read ({type(exc).__name__})"
        if why:
            log.warning("compile cache folder %s not used: %s", folder, why)
            continue
        left_out = []
        for name, digest in listed.items():
            try:
                raw = _read_trusted(Path(folder) / f"{name}{SUFFIX}")
            except OSError as exc:
                left_out.append(f"{name} ({exc.strerror or exc})")
                continue
            if hashlib.sha256(raw).hexdigest() != digest or size + len(raw) > budget:
                left_out.append(f"{name} (not what the manifest says)")
                continue
            entries[name], size = raw, size + len(raw)
        if left_out:
            log.warning("compile cache folder %s: %d entries not used (compiled instead), "
                        "such as %s", folder, len(left_out), left_out[0])
    return entries


def _read_trusted(path):
    """The bytes of ``path``, a regular file root alone can write (not a link); OSError
    otherwise. Opened without following links, then checked on the open file."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
            raise OSError(f"{path} is not a regular file only root can write")
        with os.fdopen(os.dup(fd), "rb") as file:
            return file.read()
    finally:
        os.close(fd)


class Held:
    """JAX's cache interface over entries in memory: ``get`` counts hits and misses,
    ``put`` keeps nothing (a learner's process writes no entry anyone else reads)."""

    def __init__(self, entries, path):
        self._entries, self._path = dict(entries), path
        self.hits = self.misses = 0

    def get(self, key):
        found = self._entries.get(key)
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def put(self, key, value):
        pass


_held = None


def install(entries, path):
    """Make ``entries`` (from :func:`load`) JAX's compilation cache in this process and
    every process forked from it, read-only; call it before JAX's backend starts. Returns
    False, changing nothing, when this JAX has no cache to hand them to."""
    global _held
    import jax
    from jax._src import compilation_cache

    if not entries or not hasattr(compilation_cache, "_cache"):
        return False
    jax.config.update("jax_compilation_cache_dir", path)
    # JAX would serialise each compile to write it: a learner's never is.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", NEVER_WRITE_S)
    _held = Held(entries, path)
    compilation_cache._cache = _held
    compilation_cache._cache_initialized = True
    return True


def counts():
    """``{"hits", "misses"}`` of this process's in-memory cache, or None when none is
    installed (what a learner's process reports with its reply)."""
    return None if _held is None else {"hits": _held.hits, "misses": _held.misses}
