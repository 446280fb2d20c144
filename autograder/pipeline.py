"""The grading pipeline: load -> run -> judge -> report, for every caller.

1. :func:`load` reads a hand-in with :mod:`autograder.load` (no learner code runs);
2. :func:`run` runs its code and the probes in a limited process (:mod:`autograder.sandbox`);
3. :func:`judge` judges the observations with the hidden tests (:mod:`autograder.judge`),
   giving a typed :class:`~autograder.results.GradingResult`;
4. :func:`report` writes it as Gradescope's results.json (:mod:`autograder.results`).

The command line (:mod:`autograder.__main__`), the grading service
(:mod:`autograder.service.grader`) and Gradescope's ``run_autograder``
(:mod:`autograder.gradescope`) grade through these functions (the benchmarks
time the command line and the service); ``nbgrader autograde``'s kernels run
steps 2-3 in-kernel through :func:`observe` and :func:`check`
(:mod:`autograder.nbgrader_bridge`).

:func:`grade` does steps 2-3 and is safe to call from grading threads (the
learner's process does the work; judging is plain function calls); the caller
reports each result as it arrives, so a class killed midway keeps every
result written so far.
"""
import functools
import hashlib
import time
from pathlib import Path

import autograder.feedback
import autograder.judge
import autograder.load
from autograder import exercises, results, sandbox
from autograder.results import GradingResult


@functools.lru_cache(maxsize=1)
def grader_digest():
    """Hash of the grader's own code: a changed test or probe regrades everything
    (sample answers, in the exercises' ``hidden/samples/``, are not the grader's code)."""
    h, root = hashlib.sha256(), Path(__file__).resolve().parent
    for path in sorted(root.rglob("*.py")):
        if "samples" not in path.relative_to(root).parts:
            h.update(path.read_bytes())
    return h.hexdigest()


def digest(sub, limits):
    """Identity of what is graded: file bytes, exercise, grader code, limits (hex)."""
    h = hashlib.sha256()
    h.update(f"{sub.sha256 or '<unreadable>'}|{sub.exercise}|{grader_digest()}|{limits}".encode())
    return h.hexdigest()


def seed_for(hex_digest):
    """Input seed for a submission: fixed by its digest, unknown before grading."""
    return int(hex_digest[:8], 16)


# -- step 1: load ----------------------------------------------------------
find = autograder.load.find
exercise_for = autograder.load.exercise_for


def load(name, path, assignment=None, exercise=None):
    """Step 1 for a file: its :class:`~autograder.load.Submission` (never raises on bad input)."""
    return autograder.load.read(name, path, assignment, exercise)


def load_bytes(name, raw, exercise, filename):
    """Step 1 for bytes in hand (the service's stored notebook): no file is written."""
    return autograder.load.from_bytes(name, raw, exercise, filename)


def prepare(exercises, private_dir=None):
    """Before step 2: hide grader-only files (and ``private_dir``) from learner uids,
    and start the zygote importing ``exercises``' modules (none: started on first use)."""
    sandbox.protect(private_dir)
    if exercises:
        sandbox.shared().launch(sorted(exercises))


# -- step 2: run -----------------------------------------------------------
def run(sub, limits, slot, hex_digest, hide=()):
    """Step 2: the sandbox :class:`~autograder.sandbox.Outcome`, or None when nothing runs.

    ``hide`` lists directories the learner's process must not see (the
    class's submissions, the results folder).
    """
    if sub.unreadable or not sub.attempted:
        return None
    request = {"exercise": sub.exercise, "seed": seed_for(hex_digest),
               "memory_mib": limits.memory_mib, "hide": list(hide),
               "cells": [{"label": c.label, "source": c.source} for c in sub.cells]}
    return sandbox.run(request, limits, slot)


def observe(exercise, ns, seed):
    """Step 2 inside a kernel that already ran the learner's code (nbgrader's):
    the exercise's probe on namespace ``ns``; the observations dict."""
    return exercises.get(exercise).probe().observe(ns, seed)


def hidden_dirs(paths):
    """Folders holding submissions or results, minus any the grader itself needs."""
    needed = [Path(p) for p in sandbox.import_paths()]
    dirs = set()
    for path in map(Path, paths):
        path = path.resolve()
        folder = path if path.is_dir() else path.parent
        if not any(folder == n or folder in n.parents for n in needed):
            dirs.add(str(folder))
    return sorted(dirs)


# -- step 3: judge ---------------------------------------------------------
check = autograder.judge.check  # one hidden test: what the nbgrader bridge runs per cell


def judge(sub, outcome, hex_digest, seconds=0.0):
    """Step 3: the :class:`GradingResult` for a submission and its outcome.

    ``seconds`` is the wall time of grading so far. Never raises: the reply
    comes from the learner's process, so any shape it has that the hidden
    tests cannot read gives this submission an ``error`` result, never a
    crash of the class run.
    """
    try:
        checks, output, status = _judge(sub, outcome, hex_digest)
    except Exception as exc:
        checks, output, status = _failed(sub, f"the grader could not read what your code "
                                              f"produced ({type(exc).__name__}); please tell "
                                              "your instructor", "error")
    return GradingResult(checks, output, status, hex_digest, seconds,
                         outcome.output_tail if outcome else "", sub.exercise)


def _judge(sub, outcome, hex_digest):
    if sub.unreadable:
        return _failed(sub, sub.unreadable, "wrong exercise" if sub.other_exercise else "unreadable")
    if not sub.attempted:
        return _failed(sub, "not attempted: the answer cell is still the released stub",
                       "not attempted")
    if outcome.status != "ok":
        return _failed(sub, outcome.message, outcome.status)
    reply = outcome.reply
    obs = reply["obs"] if isinstance(reply.get("obs"), dict) else {}
    errors = reply.get("cell_errors")
    notes = [str(e)[:500] for e in errors][:10] if isinstance(errors, list) else []
    if "missing" in obs or "probe_error" in obs:
        reason = (f"`{obs['missing']}` is not defined" if "missing" in obs
                  else f"the tests could not run: {obs['probe_error']}")
        # the cause (a cell that failed, e.g. a syntax error) before its effect
        return _failed(sub, "; ".join(notes + [reason]), "incomplete")
    checks = autograder.judge.checks(sub.exercise, obs, seed_for(hex_digest))
    passed = sum(c.status == "passed" for c in checks)
    output = (f"All {passed} checks passed." if passed == len(checks)
              else f"{passed} of {len(checks)} checks passed.")
    if isinstance(obs.get("stopped"), dict) and passed < len(checks):
        where = autograder.feedback.where_text(obs["stopped"].get("where"))
        output += (f" One error stopped every call: {str(obs['stopped'].get('error'))[:500]}"
                   + (f" at {where}" if where else "") + " (the first failed check says more).")
    if notes:
        output += " Problems while running your code: " + "; ".join(notes) + "."
    return checks, output + "".join(f" Note: {n}." for n in sub.notes), "graded"


def _failed(sub, message, status):
    return autograder.judge.not_run(sub.exercise), message, status


def grade(sub, limits, slot, hex_digest=None, hide=()):
    """Steps 2-3 for a loaded submission: its :class:`GradingResult` (never raises on
    bad input). ``hex_digest`` defaults to :func:`digest`; ``seconds`` of the result
    is the wall time of both steps."""
    hex_digest = hex_digest or digest(sub, limits)
    start = time.monotonic()
    outcome = run(sub, limits, slot, hex_digest, hide)
    return judge(sub, outcome, hex_digest, time.monotonic() - start)


def grader_fault(exercise, exc, hex_digest=""):
    """A result for a submission the grader itself failed on (a bug, not the learner's)."""
    message = (f"the grader failed on this submission ({type(exc).__name__}); "
               "please tell your instructor")
    return GradingResult(autograder.judge.not_run(exercise), message, "error", hex_digest,
                         exercise=exercise)


def stored(data, exercise):
    """A result the grading service stored (:meth:`GradingResult.to_record`) as a
    :class:`GradingResult`; one stored before results were typed (Gradescope's dict)
    gets each check's grade_id from its title."""
    if "checks" in data:
        return GradingResult.from_record(data)
    ids = {title: name for name, title, _ in autograder.judge.hidden_tests(exercise)}
    return GradingResult.from_gradescope(data, ids)


# -- step 4: report --------------------------------------------------------
def report(out_dir, name, result):
    """Step 4: write ``out_dir/<name>/results.json`` (Gradescope's format); its path."""
    return results.write_results(out_dir, name, result)


def reported(out_dir, name, hex_digest):
    """The results.json dict already in ``out_dir`` for this very submission
    (same ``hex_digest``), else None: what a rerun keeps instead of regrading."""
    done = results.read_results(out_dir, name)
    if done and (done.get("extra_data") or {}).get("digest") == hex_digest:
        return done
    return None


def summarize(out_dir):
    """Step 4 for a class: rebuild ``out_dir/summary.csv`` from every results.json."""
    results.write_summary(out_dir)
