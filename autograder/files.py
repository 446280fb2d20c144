"""The command line's source and sink for :func:`autograder.pipeline.grade_all`.

:class:`Files` reads hand-ins from paths: files (``<stem>``) and nbgrader
``submitted/`` trees (``<student>/<exercise>``). :class:`ResultsFolder` writes
``<name>/results.json`` (Gradescope's format, plus a grader fault's traceback
in ``extra_data["fault"]``: the folder is the instructor's) and rebuilds
``summary.csv`` when the run ends.
"""
from autograder import load, pipeline, results


class Files:
    """Hand-ins found under ``paths`` (see :func:`autograder.load.find`).

    ``exercise`` is the exercise every file answers (None: from each path);
    in an nbgrader tree it picks that exercise's notebooks. ``out`` is the
    results folder (hidden from learner code too). ``warnings`` lists, in
    plain words, what was found but is not graded.
    """

    def __init__(self, paths, exercise, out):
        self.exercise, self.private = exercise, out
        found, skipped = load.find(paths)
        self.warnings = [f"skipped {path}: {reason}" for path, reason in skipped]
        self.found = self._only(found)
        self.hide = pipeline.hidden_dirs([*paths, out])

    def _only(self, found):
        """``found`` without an nbgrader tree's notebooks of other exercises than
        ``self.exercise``: a tree says which exercise each notebook answers, so
        ``--exercise`` picks among them instead of grading the others as answers to it."""
        if self.exercise is None:
            return found
        kept = [f for f in found if f[2] in (None, self.exercise)]
        if len(kept) < len(found):
            self.warnings.append(f"--exercise {self.exercise}: left out {len(found) - len(kept)} "
                                 "notebooks of other exercises in the nbgrader tree")
        return kept

    def exercises(self):
        return {self.exercise or load.exercise_for(p, a) for _, p, a in self.found}

    def submissions(self):
        return [load.read(name, path, assignment, self.exercise)
                for name, path, assignment in self.found]


class ResultsFolder:
    """``out/<name>/results.json`` per submission and ``out/summary.csv``."""

    def __init__(self, out):
        self.out = out

    def kept(self, sub, hex_digest):
        return results.kept(self.out, sub.name, hex_digest)

    def put(self, sub, result):
        results.write_results(self.out, sub.name, result)

    def close(self):
        results.write_summary(self.out)
