"""Warming the grader's compile cache (:mod:`autograder.sandbox.compile_cache`).

Runs in the grader's process (the command below, :func:`warm_all`) and in the warming
process: a fresh interpreter the grader's process starts as root
(:func:`autograder.sandbox.compile_cache.start_warming`), which never runs learner code,
with the zygote's environment. :func:`main` runs the exercise's source notebook (its
reference answer) and each of its sample answers in the answer cell, full-mark and wrong
alike, then its probe, as a learner's process would, each in a forked child with a
backend of its own, while JAX's own cache writes every program compiled into a root-only
staging folder; then it writes the manifest (each entry's SHA-256) and renames the
folder into place.

``python -m autograder.sandbox.warm [EXERCISE...]`` warms (as root) what is not warm yet,
every registered exercise by default, and waits: after a deploy or a change of the
grading code, so that the first submissions do not go without it.
"""
import argparse
import fcntl
import hashlib
import json
import os
import resource
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from autograder import defaults
from autograder.sandbox import compile_cache

RUN_SECONDS = 30  # one sample's run, at most (a sample that hangs is cut short)
MEMORY_MIB = defaults.MEMORY_MIB  # a sample's run, as a learner's process


def warming_runs(exercise):
    """The cells of each warming run: the exercise's source notebook (its reference
    answer in place), then the same with each sample answer in the answer cell, full-mark
    and wrong alike (``[[{"label", "source"}]]``, the cells a submission's request carries)."""
    from autograder import exercises, load

    found = exercises.get(exercise)
    base = [{"label": c.label, "source": c.source}
            for c in load.read("reference", found.source, exercise=exercise).cells]
    runs = [base]
    for sample in sorted(found.samples.glob("*.py")):
        answer = sample.read_text("utf-8")
        runs.append([dict(c, source=answer) if c["label"] == "the answer cell" else c
                     for c in base])
    return runs


def main(exercise, folder):
    """Warm ``exercise``'s entries in the cache at ``folder`` for its grading version on
    disk now, unless they are there or another process is warming them."""
    from autograder.exercises import current

    folder = Path(folder)
    target = folder / compile_cache.key(exercise, current.version(exercise), os.environ)
    lock = os.open(folder / f".{target.name}.lock", os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return  # another process warms this very key
    if (target / compile_cache.MANIFEST).exists():
        return
    staging = Path(tempfile.mkdtemp(prefix=".warm-", dir=folder))  # mode 0700
    try:
        fill(exercise, staging, warming_runs(exercise))
        publish(staging, target, compile_cache.key_parts(exercise, current.version(exercise),
                                                         os.environ))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        os.close(lock)
    for other in [*folder.glob(f"{exercise}-*"), *folder.glob(f".{exercise}-*.lock")]:
        if target.name not in other.name and not other.is_symlink():  # other versions, JAX, flags
            (shutil.rmtree if other.is_dir() else os.unlink)(other)


def fill(exercise, staging, runs):
    """Run each of ``runs`` (lists of cells) and then ``exercise``'s probe in a forked
    child, with JAX's cache writing every compiled program into ``staging``."""
    import jax

    from autograder.sandbox import learner

    jax.config.update("jax_compilation_cache_dir", str(staging))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    # The programs' metadata (which the key leaves out) keeps no sample's file or lines:
    # a learner's process that hits an entry may print its program.
    jax.config.update("jax_traceback_in_locations_limit", 0)
    jax.config.update("jax_hlo_source_file_canonicalization_regex", ".*")
    learner.preload([exercise])  # as the zygote does: JAX imported, no backend yet
    for seed, cells in enumerate(runs):
        scratch = tempfile.mkdtemp(prefix="warm-run-")
        pid = os.fork()
        if pid == 0:
            try:
                null = os.open(os.devnull, os.O_RDWR)
                os.dup2(null, 0), os.dup2(null, 1), os.dup2(null, 2)
                signal.alarm(RUN_SECONDS)
                for limit, value in ((resource.RLIMIT_AS, MEMORY_MIB * 2**20),
                                     (resource.RLIMIT_FSIZE, 64 * 2**20),
                                     (resource.RLIMIT_CORE, 0)):
                    resource.setrlimit(limit, (value, value))
                os.chdir(scratch)
                os.environ.update(HOME=scratch, TMPDIR=scratch)
                _run(exercise, cells, seed)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        shutil.rmtree(scratch, ignore_errors=True)


def _run(exercise, cells, seed):
    import autograder.exercises
    from autograder.sandbox import learner

    shell = learner.shell()
    learner.run_cells(cells, shell)
    autograder.exercises.get(exercise).probe().observe(shell.user_ns, seed)


def publish(staging, target, parts):
    """Write ``staging``'s manifest (``{"key": parts, "entries": {JAX key: SHA-256}}``),
    leave only the entries, and rename it to ``target`` (root-only: mode 0700, files 0600)."""
    staging, entries = Path(staging), {}
    for path in sorted(staging.iterdir()):
        if path.name.endswith(compile_cache.SUFFIX) and path.is_file() and not path.is_symlink():
            name = path.name[:-len(compile_cache.SUFFIX)]
            entries[name] = hashlib.sha256(path.read_bytes()).hexdigest()
            os.chmod(path, 0o600)
        elif path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    manifest = staging / compile_cache.MANIFEST
    manifest.write_text(json.dumps({"key": parts, "entries": entries}, indent=1))
    os.chmod(manifest, 0o600)
    try:
        os.rename(staging, target)
    except OSError:
        if not (Path(target) / compile_cache.MANIFEST).exists():
            raise  # not a warming process that published the same key first


def warm_all(names, folder=None, environment=None):
    """Warm ``names`` (exercises) in the cache at ``folder`` (the setting's by default)
    and wait; ``{exercise: seconds}``. Raises RuntimeError when the cache cannot be used."""
    from autograder import sandbox

    folder = compile_cache.root() if folder is None else Path(folder)
    why = compile_cache.problem(folder)
    if why:
        raise RuntimeError(f"the compile cache cannot be used: {why}")
    environment = environment or sandbox.zygote_environment()
    took = {}
    for name in names:
        start = time.monotonic()
        compile_cache.start_warming(name, folder, environment, retry_s=0).wait()
        took[name] = time.monotonic() - start
    return took


def command(argv=None):
    """``python -m autograder.sandbox.warm [EXERCISE...]``; exit status 1 when the cache
    cannot be used here."""
    from autograder import exercises

    parser = argparse.ArgumentParser(prog="python -m autograder.sandbox.warm",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("exercises", nargs="*", help="default: every registered exercise")
    args = parser.parse_args(argv)
    try:
        took = warm_all(args.exercises or exercises.names())
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    for name, seconds in took.items():
        print(f"{name}: warm ({seconds:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(command())
