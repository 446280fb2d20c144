"""The learner's process: run their code, then the exercise's probes.

Forked by :mod:`autograder.sandbox` with limits already applied. Takes one
request (``exercise``, ``seed``, ``cells``) and writes one JSON reply to a
private pipe. Nothing here decides a
score; the reply is data for the hidden tests in the grader's process.
"""
import errno
import importlib
import json
import os
import re
import sys

MAGIC = re.compile(r"^\s*[%!]", re.MULTILINE)


class _Shell:
    """Stands in for ``get_ipython()`` in the learner's namespace.

    Line magics and shell escapes do nothing. A cell magic that only wraps
    Python (``%%time``, ``%%timeit``, ``%%capture``, ...) runs its body once,
    as it would in Jupyter; any other cell magic is reported, not skipped silently.
    """

    RUNS_BODY = {"time", "timeit", "capture", "prun", "debug"}

    def __init__(self, ns):
        self.ns = ns

    def run_cell_magic(self, name, _line, body):
        if name not in self.RUNS_BODY:
            raise RuntimeError(f"the cell magic %%{name} cannot run during grading; "
                               "remove it from your answer")
        exec(compile(_transform(body), f"%%{name} cell", "exec"), self.ns)

    def __getattr__(self, _name):
        return lambda *a, **k: None


def _display(*objects, **_kwargs):
    """``display()`` as in a notebook, printing each object's repr."""
    for obj in objects:
        print(repr(obj))


def _transform(source):
    source = source.removeprefix("\ufeff")
    if not MAGIC.search(source):
        return source
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def run_cells(cells, ns, memory_mib=None):
    """Exec each cell in ``ns``; return plain-words messages for cells that failed."""
    from autograder.probes.common import error_text

    errors = []
    for cell in cells:
        label = cell["label"]
        try:
            code = compile(_transform(cell["source"]), label, "exec")
        except SyntaxError as exc:
            errors.append(f"{label} has a syntax error at line {exc.lineno}: {exc.msg}")
            continue
        except Exception as exc:  # e.g. ValueError for NUL bytes in the source
            errors.append(f"{label} could not be compiled: {error_text(exc)}")
            continue
        try:
            exec(code, ns)
        except MemoryError:
            errors.append(f"{label} used more than {memory_mib} MiB of memory (MemoryError)")
            # Leave a mark in the log: if the process dies later for want of
            # memory (XLA cannot start its threads), the grader can say why.
            os.write(2, b"\nMemoryError in learner code\n")
        except OSError as exc:
            if exc.errno == errno.EFBIG:
                exc = f"printed or wrote more than the file-size limit ({exc.strerror})"
                errors.append(f"{label} {exc}")
            else:
                errors.append(f"{label} raised {error_text(exc)}")
        except BaseException as exc:  # SystemExit and KeyboardInterrupt included
            errors.append(f"{label} raised {error_text(exc)}")
    return errors


def preload(exercises=()):
    """Import what submissions need, without starting a JAX backend.

    Safe before ``fork()``: importing JAX creates no threads or devices; the
    CPU client starts in each learner process on first use. Each exercise's
    probe module may list heavier imports its learners use in ``PRELOAD``.
    """
    import jax  # noqa: F401
    import jax.numpy  # noqa: F401
    import jax.monitoring  # noqa: F401

    import autograder.probes.common  # noqa: F401

    for exercise in exercises:
        probe = importlib.import_module(f"autograder.probes.{exercise}")
        for name in getattr(probe, "PRELOAD", ()):
            importlib.import_module(name)


def serve(request, reply_fd):
    """Run ``request`` in this (already limited) process; reply on ``reply_fd``; exit."""
    reply = os.fdopen(reply_fd, "w")
    preload()
    probe = importlib.import_module(f"autograder.probes.{request['exercise']}")
    ns = {"__name__": "__main__", "display": _display}
    shell = _Shell(ns)
    ns["get_ipython"] = lambda: shell
    errors = run_cells(request["cells"], ns, request.get("memory_mib"))
    try:
        obs = probe.observe(ns, request["seed"])
    except BaseException as exc:
        from autograder.probes.common import error_text

        obs = {"probe_error": error_text(exc)}
    json.dump({"cell_errors": errors, "obs": obs}, reply)
    reply.flush()
    for stream in (sys.stdout, sys.stderr):  # keep what the learner printed
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(0)  # skip interpreter teardown: learner atexit hooks must not run


def main():
    """Entry point for a fresh interpreter: request on stdin, reply fd in argv[1]."""
    serve(json.loads(sys.stdin.read()), int(sys.argv[1]))


if __name__ == "__main__":
    main()
