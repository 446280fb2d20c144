"""Run a hidden test inside ``nbgrader autograde``'s kernel.

The source notebook's graded cells call :func:`check` in their hidden part.
It runs the same probes and the same hidden test as ``python -m autograder``,
so both graders agree on every test. nbgrader scores a cell 0 when it writes
to stderr (``nbgrader.utils.determine_grade``), so probes run with Python
warnings and file descriptor 2 silenced, and a failure is reported by writing
its plain-words message to stderr: the cell scores 0 and the feedback shows
the message alone, with no traceback through hidden test source.
"""
import contextlib
import importlib
import os

SEED = 20261129  # any seed works: correct answers pass for every input
_observed = {}


@contextlib.contextmanager
def _silent_stderr():
    import sys
    import warnings

    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as null, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        os.dup2(null.fileno(), 2)
        try:
            with contextlib.redirect_stderr(null):
                yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def observations(exercise, ns):
    """Probe observations for ``exercise``, computed once per kernel."""
    if exercise not in _observed:
        probe = importlib.import_module(f"autograder.probes.{exercise}")
        with _silent_stderr():
            _observed[exercise] = probe.observe(ns, SEED)
    return _observed[exercise]


def check(exercise, test_name, ns):
    """Run hidden test ``test_name``; on failure write its feedback to stderr (scores 0)."""
    from autograder import grade

    obs = observations(exercise, ns)
    if "missing" in obs:
        return _failed(f"`{obs['missing']}` is not defined")
    message = grade.run_test(exercise, test_name, obs, SEED)
    if message is not None:
        return _failed(message)
    print(f"Passed: {getattr(grade.hidden_module(exercise), test_name).title}.")


def _failed(message):
    import sys

    sys.stdout.flush()
    print(message, file=sys.stderr, flush=True)
