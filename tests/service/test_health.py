"""What ``/api/health`` says, in-process: :func:`autograder.service.api.health.report` over
what the API read (heartbeat rows, problems, out-of-date warnings). The real route
answers in tests/service/test_api.py and test_restart.py."""
import json

from autograder.service.api.health import report

EX = ["update_with_donate"]


def test_a_healthy_service_says_ok_and_what_it_counts():
    status, answer = report(EX, 1000, waiting=3, workers=[("w:1", 2, None), ("w:2", 1, None)],
                            warnings=["ex: out of date"])
    assert status == 200
    assert json.dumps(answer) == json.dumps({  # the key order is the reply's
        "ok": True, "exercises": EX, "max_bytes": 1000, "problems": [], "waiting": 3,
        "workers": 3, "warnings": ["ex: out of date"]})


def test_warnings_keep_it_ok_and_problems_do_not():
    assert report(EX, 1, waiting=0, workers=[], warnings=["a warning"])[1]["ok"]
    status, answer = report(EX, 1, waiting=0, workers=[("w:1", 2, "no zygote")])
    assert (status, answer["ok"], answer["problems"]) == (503, False, ["worker w:1: no zygote"])


def test_waiting_work_without_a_worker_is_a_problem_and_none_waiting_is_not():
    assert report(EX, 1, waiting=0, workers=[])[0] == 200
    status, answer = report(EX, 1, waiting=2, workers=[])
    assert status == 503 and answer["problems"] == [
        "no grading worker has reported in the last 30 s; 2 submission(s) wait"]


def test_every_problem_is_said_in_order_and_unread_counts_are_left_out():
    status, answer = report(EX, 1, store_problem="the database cannot be used: disk I/O error",
                            grading_problem="the sandbox is missing",
                            gradebook_problem="the database cannot be used: locked")
    assert status == 503 and "waiting" not in answer and "workers" not in answer
    assert answer["warnings"] == [] and answer["problems"] == [
        "the database cannot be used: disk I/O error",
        "grading in this process: the sandbox is missing",
        "nbgrader's gradebook: the database cannot be used: locked"]
