"""Grade one submission from Python (used by the grading service).

The command line (:mod:`autograder.__main__`) grades whole classes; this is
the same pipeline for a single file, returning Gradescope results as a dict.
"""
from autograder import pipeline, results, sandbox, submission


def grade_file(path, name, exercise=None, limits=None, slot=0):
    """Grade the notebook or ``.py`` at ``path``; return its results.json dict.

    ``exercise`` defaults to the one named by the path; ``limits`` is a
    :class:`autograder.sandbox.Limits`; ``slot`` picks the sandbox uid, so two
    concurrent calls should use different slots (each is leased to a distinct
    sandbox uid either way). Never raises on bad submissions.
    """
    limits = limits or sandbox.Limits()
    sandbox.protect()
    sub = submission.load(name, path, None, exercise)
    digest = pipeline.digest(sub, limits)
    outcome = pipeline.execute(sub, limits, slot, digest)
    tests, output, status = pipeline.judge(sub, outcome, digest)
    seconds = outcome.seconds if outcome else 0.0
    return results.results_json(tests, output, status, digest, seconds,
                                  outcome.output_tail if outcome else "")
