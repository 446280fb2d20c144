"""Every requirement of every task is graded, and each has sample answers that prove it.

A row of ``autograder/exercises/<exercise>/requirements.py`` (:mod:`autograder.requirements`)
must have at least two samples in ``hidden/samples/`` that violate it and nothing
else (``expected.json``: ``"violates": "<row id>"``): each fails exactly the row's
checks, so it loses exactly the row's points, and its feedback names the cause
(a ``says`` phrase for one of those checks). A sample that violates nothing scores
full marks. Fast: reads the tables; the samples' real grades are held to
``expected.json`` by tests/grading/test_samples.py and test_exercises.py.
"""
from __future__ import annotations

import pytest

from autograder import exercises, requirements
from tests.grading.helpers import expected

NAMES = list(exercises.names())
MIN_SAMPLES = 2


@pytest.mark.parametrize("exercise", NAMES)
def test_the_table_names_real_checks_and_covers_every_check(exercise):
    assert requirements.problems(exercise) == []


@pytest.mark.parametrize("exercise", NAMES)
def test_every_row_has_samples_that_violate_it_alone_and_lose_its_points(exercise):
    full = exercises.get(exercise).points
    samples = expected(exercise)
    for row in requirements.of(exercise):
        mine = {name: want for name, want in samples.items() if want.get("violates") == row.id}
        assert len(mine) >= MIN_SAMPLES, f"{exercise}: {row.id!r} has {len(mine)} samples"
        for name, want in mine.items():
            assert sorted(want["failed"]) == sorted(row.checks), (exercise, row.id, name)
            assert want["score"] == full - requirements.points(exercise, row), (exercise, row.id, name)
            assert set(want.get("says", {})) & set(row.checks), (
                f"{exercise}/{name}: no 'says' phrase shows its hint names {row.id!r}")


@pytest.mark.parametrize("exercise", NAMES)
def test_a_sample_that_violates_nothing_scores_full_marks(exercise):
    full = exercises.get(exercise).points
    clean = {n: w for n, w in expected(exercise).items() if w.get("violates") is None and not w["failed"]}
    assert clean and all(w["score"] == full for w in clean.values())


@pytest.mark.parametrize("exercise", NAMES)
def test_violates_names_a_row(exercise):
    ids = {row.id for row in requirements.of(exercise)}
    named = {w["violates"] for w in expected(exercise).values() if w.get("violates") is not None}
    assert named <= ids, named - ids
