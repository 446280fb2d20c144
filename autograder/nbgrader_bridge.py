"""Run a hidden test inside ``nbgrader autograde``'s kernel.

The source notebook's graded cells call :func:`check` in their hidden part,
as ``__import__("autograder.nbgrader_bridge").nbgrader_bridge.check(exercise,
test)``: that binds no name in the learner's namespace (an ``import``
statement would bind ``check`` or ``autograder`` over a learner's own). It
runs the same probe and the same hidden test as ``python -m autograder``
(the exercise's probe, then :func:`autograder.judge.check_result`), so both graders
agree on every test.

nbgrader scores a graded cell 0 when any stderr output reaches it
(``nbgrader.utils.determine_grade``), and learner code, JAX and libraries
can write to stderr by many routes (file descriptor 2, ``sys.stderr``, a
logging handler holding the kernel's stderr, a thread). So the verdict does
not rest on stderr staying quiet: a failure is reported as a stderr message
that starts with :data:`FAILED`, and ``exercises/nbgrader_config.py`` has
nbgrader's ``IgnorePattern`` drop every other stderr output of a cell before
grades are saved (:data:`IGNORED_STDERR`). Probes also run with warnings,
logging and both stderr routes silenced, so feedback shows the message alone,
with no traceback through hidden test source.
"""
import contextlib
import logging
import os
import sys
from typing import Any

SEED = 20261129  # any seed works: correct answers pass for every input
FAILED = "\u2717 Not passed: "  # starts the one stderr message that scores a cell 0
# For nbgrader's IgnorePattern: matches (so drops) a stderr output without FAILED.
IGNORED_STDERR = rf"\A(?![\s\S]*{FAILED})"
_observed: dict[str, Any] = {}  # exercise -> its probe's observations, run once per kernel


@contextlib.contextmanager
def _silenced():
    """Python warnings, logging, ``sys.stderr`` and file descriptor 2, all quiet."""
    import warnings

    sys.stderr.flush()
    saved = os.dup(2)
    disabled = logging.root.manager.disable
    with open(os.devnull, "w") as null, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(logging.CRITICAL)
        os.dup2(null.fileno(), 2)
        try:
            with contextlib.redirect_stderr(null):
                yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            logging.disable(disabled)


def observations(exercise, ns):
    """Probe observations for ``exercise``, computed once per kernel."""
    from autograder import exercises

    if exercise not in _observed:
        with _silenced():
            _observed[exercise] = exercises.get(exercise).probe().observe(ns, SEED)
    return _observed[exercise]


def check(exercise, test_name, ns=None):
    """Run hidden test ``test_name`` on the caller's namespace (or ``ns``).

    Prints "Passed: ..." on success; on failure writes :data:`FAILED`, the
    test's title and its feedback to stderr, which scores the cell 0.
    """
    from autograder import judge

    ns = ns if ns is not None else sys._getframe(1).f_globals
    result = judge.check_result(exercise, test_name, observations(exercise, ns), SEED)
    if result.status != "passed":
        return _failed(result.title, result.output)
    print(result.output)


def _failed(title, message):
    sys.stdout.flush()
    print(f"{FAILED}{title}.\n{message}", file=sys.stderr, flush=True)
