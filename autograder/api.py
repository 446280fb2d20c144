"""Grade one submission from Python (used by the grading service).

The command line (:mod:`autograder.__main__`) grades whole classes; this is
the same pipeline for a single file, returning Gradescope results as a dict.
"""
from autograder import load, pipeline, sandbox


def grade_file(path, name, exercise=None, limits=None, slot=0):
    """Grade the notebook or ``.py`` at ``path``; return its results.json dict.

    ``exercise`` defaults to the one named by the path; ``limits`` is a
    :class:`autograder.sandbox.Limits`; ``slot`` picks the sandbox uid, so two
    concurrent calls should use different slots (each is leased to a distinct
    sandbox uid either way). Never raises on bad submissions. Callers run
    :func:`autograder.sandbox.protect` once before grading.
    """
    limits = limits or sandbox.Limits()
    sub = load.read(name, path, None, exercise)
    return pipeline.grade(sub, limits, slot, pipeline.digest(sub, limits))
