"""JAX's persistent compilation cache for learner processes: written only by the
instructor's own answer, read-only to learners.

Runs in the grader's process (which folder, sealing it), except :func:`configure`, which
runs in the learner's process.

Why: most of a grading's CPU is XLA compiling, and much of what a learner's code and the
exercise's probe compile, the instructor's answer compiles too. Measured on JAX 0.12.0.1
over every exercise's samples, each with its own seed: 125 s of CPU in learner processes
(76 s of it XLA's backend compile) without a cache, 86 s with one warmed by the four
source notebooks. JAX keys an entry by the compiled module and all that shapes its
compilation (JAX's and XLA's versions, flags, devices), so an entry serves only a compile
that would have made it: the golden results are byte-identical with and without it.

Trust:

- Entries are written only by a warm-up run of the exercise's source notebook (its
  solution in its answer cell), graded through the sandbox like any submission
  (:func:`autograder.pipeline.warm_compile_cache`), into a staging folder that only that
  run's mount namespace reaches, read-write.
- The grader then seals the folder: root's, entries 0644, the folder 0711, renamed into
  place under :data:`ROOT` (root's, 0700).
- A learner's process gets the sealed folder bound read-only at :data:`TARGET` in its own
  mount namespace (:func:`autograder.sandbox.confine.confine`): it cannot write an entry
  another learner reads, nor list the folder. It can open an entry whose name it
  computes, which means compiling that very module itself (JAX's key is a hash of it).
- Only as root, where learner processes get namespaces of their own; elsewhere they
  compile everything, as without a cache.

A new version of JAX, of the hidden tests or of the source notebook gets a folder of its
own; an old one is never read again and may be deleted at any time.
"""
import functools
import hashlib
import os
import shutil
import stat
import tempfile
from importlib import metadata

from autograder.defaults import CHECKOUT
from autograder.sandbox.confine import CACHE_TARGET as TARGET
from autograder.sandbox.confine import XLA_FLAGS

ROOT = CHECKOUT / ".cache" / "compile"
"""Sealed folders, one per exercise and version (:func:`key`); root's alone (0700)."""
SEED = 20261206  # the warm-up's inputs: any seed (an entry is keyed by the module, not values)
ENTRY_SUFFIX = "-cache"  # what JAX's file cache names an entry (jax/_src/lru_cache.py)


def key(exercise):
    """Hex name of ``exercise``'s sealed folder: JAX's and jaxlib's versions, the XLA flags
    learner processes run with, the exercise's grading version (hidden tests and probe) and
    its source notebook. Raises OSError when the notebook cannot be read."""
    from autograder import exercises
    from autograder.exercises import current

    h = hashlib.sha256()
    for part in (*_versions(), XLA_FLAGS, exercise, current.version(exercise)):
        h.update(part.encode() + b"\0")
    h.update(exercises.get(exercise).source.read_bytes())
    return h.hexdigest()


@functools.cache
def _versions():
    """JAX's and jaxlib's installed versions (read once per process)."""
    return metadata.version("jax"), metadata.version("jaxlib")


def sealed(exercise):
    """The path (str) of ``exercise``'s sealed folder when there is a sound one (a folder,
    not a link, root's, 0711, under a :data:`ROOT` that is root's and 0700), else None."""
    try:
        path = ROOT / key(exercise)
        if not (_is(ROOT, 0o700) and _is(path, 0o711)):
            return None
    except (OSError, ValueError, LookupError):
        return None
    return str(path)


def _is(path, mode):
    """Whether ``path`` is a real folder of root's with exactly ``mode``."""
    st = os.lstat(path)
    return stat.S_ISDIR(st.st_mode) and st.st_uid == 0 and stat.S_IMODE(st.st_mode) == mode


def for_request(exercise):
    """What :func:`autograder.sandbox.run` adds to a request of ``exercise``: its sealed
    folder (``{"compile_cache": path}``), or nothing where there is none."""
    if os.geteuid() != 0:
        return {}
    path = sealed(exercise)
    return {"compile_cache": path} if path else {}


def staging():
    """A new folder under :data:`ROOT` for a warm-up to write in (str): 0777, since the
    run's sandbox uid writes there, and nobody else gets past :data:`ROOT`. Raises OSError."""
    _make_root()
    path = tempfile.mkdtemp(prefix=".warm-", dir=ROOT)
    os.chmod(path, 0o777)
    return path


def seal(path, exercise):
    """Make the warm-up folder ``path`` ``exercise``'s sealed folder (:func:`_seal`, then
    renamed into place). Raises OSError, among others when another process sealed one first."""
    _seal(path)
    os.rename(path, ROOT / key(exercise))


def _make_root():
    """:data:`ROOT`, root's and 0700 (made so, or checked). Raises OSError otherwise."""
    ROOT.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not _is(ROOT, 0o700):
        os.chmod(ROOT, 0o700, follow_symlinks=False)
        if not _is(ROOT, 0o700):
            raise PermissionError(f"{ROOT} is not a folder of root's")


def _seal(path):
    """Keep only JAX's entries in ``path`` (plain files, no second link), each root's and 0644, and make
    the folder root's and 0711. The warm-up's processes have all ended (the sandbox ends
    every process of its uid), so nothing writes here any more."""
    for entry in os.scandir(path):
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and entry.name.endswith(ENTRY_SUFFIX):
            os.chown(entry.path, 0, 0, follow_symlinks=False)
            os.chmod(entry.path, 0o644)
        elif entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)
    os.chown(path, 0, 0)
    os.chmod(path, 0o711)


def configure(request):
    """In the learner's process: point JAX at the folder
    :func:`autograder.sandbox.confine.confine` bound, as ``request["jax_cache"]`` says (``{"dir", "writable"}``; absent: no cache). A read-only
    one is never written to (JAX writes only compiles slower than its threshold)."""
    cache = request.get("jax_cache")
    if not cache:
        return
    import jax

    jax.config.update("jax_compilation_cache_dir", cache["dir"])
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0 if cache["writable"] else 1e9)
    try:  # XLA's own caches (GPU autotuning) stay out of it
        jax.config.update("jax_persistent_cache_enable_xla_caches", "none")
    except AttributeError:  # a JAX without the option
        pass

