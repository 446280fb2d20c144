"""What the service tests hand in and what they expect back: notebooks made from the
sample answers (``autograder/exercises/update_with_donate/hidden/samples/``), and the
hidden tests a sample fails, as its expected.json says and as a result shows; and a
store where a submission is graded at a chosen moment."""
from autograder.service.store import Store
from tests.grading.helpers import ASSIGNMENT, EXPECTED, SAMPLES, released_notebook, with_answer


def notebook_with(course, sample):
    """The released notebook with ``samples/<sample>.py`` as its answer."""
    release = released_notebook(course)
    if sample == "unattempted":
        return release
    return with_answer(release, (SAMPLES / f"{sample}.py").read_text())


def small_notebook(sample):
    """A one-cell notebook holding a sample answer (small and quick to grade)."""
    return {"cells": [{"cell_type": "code", "id": "answer", "metadata": {}, "outputs": [],
                       "execution_count": None,
                       "source": (SAMPLES / f"{sample}.py").read_text()}],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def failed_tests(result):
    from autograder.judge import hidden_tests
    names = {title: name for name, title, _ in hidden_tests(ASSIGNMENT)}
    return {names[t["name"]] for t in result["tests"] if t["status"] == "failed"}


def expected_failed(sample):
    from autograder.judge import hidden_tests
    want = EXPECTED[sample]["failed"]
    return {n for n, _, _ in hidden_tests(ASSIGNMENT)} if want == "all" else set(want)


def slow_notebook(sample, seconds):
    """:func:`small_notebook` whose answer first sleeps ``seconds`` (a grading one can
    catch in the middle)."""
    notebook = small_notebook(sample)
    notebook["cells"][0]["source"] = f"import time\ntime.sleep({seconds})\n" + \
        notebook["cells"][0]["source"]
    return notebook


class FinishesAfterARead(Store):
    """The real store, where ``pending`` (a running submission's ``(id, lease owner,
    result record)``) is finished right after the first read of a learner's graded
    submissions: it is graded while whoever read them (the gradebook thread, a regrade)
    acts on a list without it."""

    pending = None

    def graded(self, learner, exercise, notebooks=True):
        rows = super().graded(learner, exercise, notebooks)
        if self.pending:
            (sub_id, owner, record), self.pending = self.pending, None
            assert self.finish(sub_id, owner, record)
        return rows
