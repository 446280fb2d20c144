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
import resource
import shutil
import sys
import tempfile
from collections.abc import Iterable
from typing import Any

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


def run_cells(cells, shell, memory_mib=None, reached=None):
    """Run each cell in ``shell`` as a kernel would; return plain-words messages for cells
    that failed. The labels of cells that ended at the memory limit (:func:`at_the_limit`)
    are appended to ``reached`` (a list) when one is given."""
    from autograder.exercises.common import error_text

    errors = []
    for cell in cells:
        label = cell["label"]
        result = shell.run_cell(cell["source"].removeprefix("\ufeff"), store_history=True)
        exc = result.error_before_exec or result.error_in_exec
        if exc is None:
            continue
        if reached is not None and at_the_limit(exc):
            reached.append(label)
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


# What XLA's allocator raises at the address-space limit (jnp arrays): a ValueError.
XLA_OUT_OF_MEMORY = "RESOURCE_EXHAUSTED: Out of memory"


def at_the_limit(exc: BaseException) -> bool:
    """Whether ``exc``, the error that ended a learner's cell, says its code reached the
    process's memory limit: a MemoryError (NumPy's among them) or XLA's allocator out
    of memory."""
    from autograder.exercises.common import error_text

    return isinstance(exc, MemoryError) or XLA_OUT_OF_MEMORY in error_text(exc)


def _mapped() -> int:
    """Bytes of address space this process maps now (VmSize: what RLIMIT_AS bounds)."""
    with open("/proc/self/status", "rb") as status:
        for line in status:
            if line.startswith(b"VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _allow(size: int | None = None) -> None:
    """Let this process map ``size`` bytes in all (the soft RLIMIT_AS), at most the hard
    limit (:data:`autograder.sandbox.confine.RESERVE_MIB` above the submission's; None:
    up to it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if resource.RLIM_INFINITY not in (soft, hard):
        try:
            resource.setrlimit(resource.RLIMIT_AS, (hard if size is None else min(size, hard), hard))
        except (ValueError, OSError):  # learner code changed the limits: left as they are
            pass


def compile_in_the_reserve() -> None:
    """Make each XLA compile of this process (or its load from the compile cache) the
    grader's work: it may map up to the hard limit, and what it leaves mapped (the
    program, XLA's compile threads) is added to what learner code may map, so that a
    compile, which needs more memory without the cache than with it, neither fails nor
    leaves the learner's code less room for want of memory its code did not take."""
    from jax._src import compiler

    compile_ = compiler.compile_or_get_cached

    def compile_or_get_cached(*args: Any, **kwargs: Any) -> Any:
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        before = _mapped()
        _allow()
        try:
            return compile_(*args, **kwargs)
        finally:
            _allow(soft + max(0, _mapped() - before))

    compiler.compile_or_get_cached = compile_or_get_cached


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

    _first_ir_context()
    shell()
    for exercise in exercises:
        for name in exercise_imports(exercise):
            importlib.import_module(name)


def _first_ir_context():
    """Make one MLIR context and drop it: the first in a process costs about 16 ms (its
    dialects are loaded once per process), each later one about 3 ms. Made here, that
    first cost is paid once per zygote, not in every learner process; a learner's
    lowerings still make a context of their own, so what the probes observe is
    unchanged. No backend is started (no threads: the zygote must fork)."""
    try:
        from jax._src.interpreters import mlir
        mlir._create_ir_context()
    except Exception:  # a JAX without it: each learner process pays the first context
        pass


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
    compile_in_the_reserve()
    reached = []
    errors = run_cells(request["cells"], shell(), request.get("memory_mib"), reached)
    if reached:  # its code reached the memory limit: that decides, whatever the probe could do
        obs = {}
    else:
        _allow()  # the probe is the grader's: up to the hard limit
        try:
            obs = probe.observe(ns, request["seed"])
        except BaseException as exc:
            from autograder.exercises.common import error_text

            obs = {"probe_error": error_text(exc)}
    wire.write_reply(reply, errors, obs, compile_cache.counts(), memory_limit=reached)
    for stream in (sys.stdout, sys.stderr):  # keep what the learner printed
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(0)  # skip interpreter teardown: learner atexit hooks must not run
