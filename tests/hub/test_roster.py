"""The roster under the real hub: a student added to nbgrader's gradebook who never
signed in, a learner who signed in and never submitted, and an instructor's own
test submission, as the class page, ``api/class`` and the class CSV show them."""
from __future__ import annotations

import csv
import io
from pathlib import Path

from autograder import exercises
from tests.course import nbgrader
from tests.grading.helpers import released_notebook
from tests.hub.accounts import more_learners
from tests.hub.running import Signed

EXERCISE = "update_with_donate"


def test_every_learner_is_on_the_class_page_and_no_instructor(hub, accounts, sign_in):
    made, _ = accounts
    course = Path(hub.env["GRADER_COURSE"])
    absent = "zed" + made["ada"].name[3:]  # in the gradebook only: never signed in
    nbgrader(course, "db", "student", "add", absent, f"--db=sqlite:///{course / 'gradebook.db'}")
    ins = sign_in("ins")
    ins.wait_done(ins.submit(released_notebook(course)))  # the instructor tries the exercise
    with more_learners(accounts, 1) as (quiet,):
        Signed(hub, quiet)  # signs in, submits nothing

        answer = ins.grader("GET", "api/class").json()
        roster = answer["roster"]
        assert roster[absent] == {"signed_in": False, "submitted": []}
        assert roster[quiet.name] == {"signed_in": True, "submitted": []}
        assert made["ins"].name not in roster
        assert all(made["ins"].name not in ex["learners"] for ex in answer["exercises"].values())
        assert set(answer["exercises"]) >= set(exercises.names())  # released, tried or not

        page = ins.grader("GET", "class").text
        assert f">{absent}</a> <span class=\"absent\">(never signed in)</span>" in page
        assert f">{quiet.name}</a> <span class=\"absent\">(never submitted)</span>" in page
        assert f"?learner={made['ins'].name}" not in page
        assert page.count('<section class="exercise"') == len(answer["exercises"])

        reply = ins.grader("GET", "api/class.csv")
        students = {r["student_id"] for r in csv.DictReader(io.StringIO(reply.text))}
        assert {absent, quiet.name} <= students and made["ins"].name not in students
