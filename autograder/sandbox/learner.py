"""Learner code and the exercise's probes, run in IPython's own shell.

Runs in the learner's process, forked by the supervisor
(:mod:`autograder.sandbox.supervisor`) and confined
(:mod:`autograder.sandbox.confine`) before :func:`serve` is called. It takes
one request (``exercise``, ``seed``, ``cells``) and writes one reply to a
private pipe (:func:`autograder.sandbox.wire.write_reply`). The cells run in
IPython's own shell, never an imitation of it. Nothing here decides a score;
the reply is data for the hidden tests in the grader's process.

:func:`preload` runs earlier, in the zygote's process, so that every
learner's process inherits its imports and shell from the fork.
"""
import errno
import importlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable

import autograder.exercises
from autograder.sandbox import compile_cache, wire

_shell = None  # IPython's shell, made once per zygote by preload()


def shell():
    """IPython's ``InteractiveShell``, configured as a kernel's but quiet.

    Cells run with IPython's own semantics (magics, ``%%timeit`` scoping,
    ``display``, shell escapes), as they do in the kernel ``nbgrader
    autograde`` starts, so both graders see the same namespace. History is
    off (no SQLite file, no saving thread) so the shell is safe to make
    before ``fork()``. Its profile folder is a temporary one, removed once
    the shell is made: nothing is written to the grader's home.
    """
    global _shell
    if _shell is None:
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets.config import Config

        config = Config()
        config.HistoryManager.enabled = False
        config.InteractiveShell.colors = "nocolor"  # tracebacks in the log stay plain text
        # Plain tracebacks: IPython's default (Context) reads source around every
        # frame, 40 s for a RecursionError's thousand frames on a loaded machine.
        config.InteractiveShell.xmode = "Plain"
        profile = tempfile.mkdtemp(prefix="ipython-")
        try:
            _shell = InteractiveShell.instance(config=config, ipython_dir=profile)
        finally:
            shutil.rmtree(profile, ignore_errors=True)
    return _shell


def run_cells(cells, shell, memory_mib=None):
    """Run each cell in ``shell`` as a kernel would; return plain-words messages for cells that failed."""
    from autograder.exercises.common import error_text

    errors = []
    for cell in cells:
        label = cell["label"]
        result = shell.run_cell(cell["source"].removeprefix("\ufeff"), store_history=True)
        exc = result.error_before_exec or result.error_in_exec
        if exc is None:
            continue
        if isinstance(exc, SyntaxError) and result.error_before_exec is not None:
            where = f" at line {exc.lineno}" if exc.lineno else ""
            errors.append(f"{label} has a syntax error{where}: {exc.msg}")
        elif isinstance(exc, MemoryError):
            errors.append(f"{label} used more than {memory_mib} MiB of memory (MemoryError)")
            # Leave a mark in the log: if the process dies later for want of
            # memory (XLA cannot start its threads), the grader can say why.
            os.write(2, b"\nMemoryError in learner code\n")
        elif isinstance(exc, OSError) and exc.errno == errno.EFBIG:
            errors.append(f"{label} printed or wrote more than the file-size limit ({exc.strerror})")
        else:  # SystemExit and KeyboardInterrupt included: IPython catches them too
            errors.append(f"{label} raised {error_text(exc)}")
    return errors


def preload(exercises: Iterable[str] = ()) -> None:
    """Import what submissions need, without starting a JAX backend.

    Safe before ``fork()``: importing JAX creates no threads or devices; the
    CPU client starts in each learner process on first use. IPython's shell
    is made here too (a third of a second, paid once per zygote), and each of
    ``exercises`` gets its :func:`exercise_imports` imported.
    """
    import jax  # noqa: F401
    import jax.monitoring  # noqa: F401
    import jax.numpy  # noqa: F401

    import autograder.exercises.common  # noqa: F401

    shell()
    for exercise in exercises:
        for name in exercise_imports(exercise):
            importlib.import_module(name)


def exercise_imports(exercise):
    """Modules to import once in the zygote for ``exercise``: its probe, then the
    heavier imports its learners use (``PRELOAD`` in its metadata,
    autograder/exercises/<exercise>/__init__.py).

    The probe comes from the fork: the learner's process runs as a sandbox uid,
    which may not be able to read this checkout (a root-only folder above it).
    """
    found = autograder.exercises.get(exercise)
    return (found.probe().__name__, *found.preload)


def serve(request, reply_fd):
    """Run ``request`` in this (already confined) process; reply on ``reply_fd``; exit.

    The zygote has already run :func:`preload`, so JAX, the probes' common
    module and the shell come from the fork.
    """
    reply = os.fdopen(reply_fd, "w")
    probe = autograder.exercises.get(request["exercise"]).probe()
    ns = shell().user_ns
    errors = run_cells(request["cells"], shell(), request.get("memory_mib"))
    try:
        obs = probe.observe(ns, request["seed"])
    except BaseException as exc:
        from autograder.exercises.common import error_text

        obs = {"probe_error": error_text(exc)}
    wire.write_reply(reply, errors, obs, compile_cache.counts())
    for stream in (sys.stdout, sys.stderr):  # keep what the learner printed
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(0)  # skip interpreter teardown: learner atexit hooks must not run
