"""What ``python -m autograder.service.members`` prints when there is nothing to do: a
sentence that says so, not an empty list after a colon or no line at all."""
from autograder.service.commands import members
from tests.course import copy_course


def test_show_and_enroll_say_so_when_there_is_nothing_to_do(released_course, tmp_path, capsys,
                                                             monkeypatch):
    monkeypatch.setenv("HUB_LEARNERS_GROUP", "no-such-group-of-this-test")  # nobody in the class
    course = copy_course(released_course, tmp_path / "course")
    where = ["--db", str(tmp_path / "grading.db"), "--course", str(course)]
    assert members.main([*where, "show"]) == 0
    assert capsys.readouterr().out == "nobody is dropped from the course\n"
    assert members.main([*where, "enroll"]) == 0
    assert capsys.readouterr().out == (
        "nobody new to enrol: every learner of the class is in nbgrader's gradebook already\n")
