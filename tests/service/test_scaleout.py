"""Scale-out on a real PostgreSQL server: an API process with ``--jobs 0`` and
``python -m autograder.service.worker`` processes sharing one database."""
import shutil
import signal
import time

from autograder.service.api.app import POINTS_CHECK_S
from tests.grading.helpers import EXPECTED
from tests.service.running import WAIT, Service, http
from tests.service.submissions import expected_failed, failed_tests, slow_notebook

SAMPLES = ["reference", "wrong_arithmetic", "no_donation", "fails_empty", "wrong_dtype",
           "jit_inside", "reference", "wrong_arithmetic"]


def _check_graded_once(service, ids, plan):
    answers = service.wait_done(ids)
    rows = service.rows()
    for sub_id, (learner, sample) in zip(ids, plan):
        assert answers[sub_id]["learner"] == learner
        assert answers[sub_id]["result"]["score"] == EXPECTED[sample]["score"], sample
        assert failed_tests(answers[sub_id]["result"]) == expected_failed(sample)
        assert rows[sub_id]["graded"] == 1, rows[sub_id]  # one result recorded
    return rows


def test_two_workers_one_killed_mid_grading(new_service, pg_url, worker):
    service = new_service(db=pg_url(), jobs=0).start()  # the API alone
    # Leases longer than the test may wait: the killed worker's grading can only come
    # back through the survivor seeing that its pid is gone.
    workers = [worker(service, lease=3600).start(), worker(service, lease=3600).start()]
    plan = [(f"class-{i}", sample) for i, sample in enumerate(SAMPLES)]
    ids = [service.submit(learner, slow_notebook(sample, 1)) for learner, sample in plan]

    deadline = time.monotonic() + WAIT
    while True:  # the first submission a worker is in the middle of grading
        running = [r for r in service.rows().values() if r["status"] == "running"]
        if running:
            break
        assert time.monotonic() < deadline, service.log.read_text()[-3000:]
        time.sleep(0.05)
    victim = running[0]
    killed = next(w for w in workers if victim["lease_owner"].startswith(w.name + ":"))
    survivor = next(w for w in workers if w is not killed)
    killed.stop(signal.SIGKILL)
    assert killed.proc.returncode == -signal.SIGKILL

    # Both workers run on this host, so the survivor's next heartbeat sees the dead pid
    # and requeues its grading (Store.release_dead); a worker on another machine waits
    # for the lease to run out instead (test_store.py: expired leases).
    rows = _check_graded_once(service, ids, plan)
    assert rows[victim["id"]]["attempts"] == 2  # started by the killed one, redone once
    assert rows[victim["id"]]["lease_owner"].startswith(survivor.name + ":")
    assert all(r["attempts"] == 1 for i, r in rows.items() if i != victim["id"])


def test_postgres_stopped_and_restarted_while_submissions_arrive(new_service, postgres, pg_url,
                                                                 worker):
    service = new_service(db=pg_url(), jobs=0).start()
    worker(service, jobs=2).start()
    plan = [(f"outage-{i}", sample) for i, sample in enumerate(SAMPLES)]
    ids = [service.submit(learner, slow_notebook(sample, 1))
           for learner, sample in plan[:4]]
    before = set(service.rows())

    postgres.stop()
    try:
        late = plan[4:]
        for learner, sample in late:  # refused in plain words, nothing stored
            status, headers, answer = http("POST", service.url + "/api/submissions", {
                "exercise": "update_with_donate", "learner": learner,
                "notebook": slow_notebook(sample, 1)})
            assert (status, answer["code"]) == (503, "store_unavailable"), answer
            assert "nothing was stored" in answer["error"] and int(headers["Retry-After"]) > 0
        status, _, answer = http("GET", f"{service.url}/api/submissions/{ids[0]}")
        assert (status, answer["code"]) == (503, "store_unavailable")
        # workers notice: their claims and renewals fail meanwhile; and the health
        # check's comparison of gradebook points is due again, so it reads the gradebook
        time.sleep(POINTS_CHECK_S + 1)
        status, _, health = http("GET", service.url + "/api/health")
        assert status == 503 and not health["ok"], health
        assert any("database" in problem for problem in health["problems"]), health
    finally:
        postgres.start()

    assert set(service.rows()) == before
    ids += [service.submit(learner, slow_notebook(sample, 1)) for learner, sample in late]
    rows = _check_graded_once(service, ids, plan)
    assert len(rows) == len(plan)
    deadline = time.monotonic() + WAIT
    while http("GET", service.url + "/api/health")[0] != 200:  # workers reported back
        assert time.monotonic() < deadline, http("GET", service.url + "/api/health")
        time.sleep(1)


def test_the_api_starts_as_the_readme_writes_it(course_template, pg_url, tmp_path):
    """``.venv/bin/python -m autograder.service --jobs 0`` on a new PostgreSQL database
    (no nbgrader tables yet), venv not activated: nbgrader's Gradebook creates its
    tables with ``alembic``, found beside the interpreter, not on the caller's PATH."""
    course = tmp_path / "course"
    shutil.copytree(course_template, course)
    service = Service(tmp_path, course, db=pg_url(), jobs=0, env={"PATH": "/usr/bin:/bin"})
    try:
        service.start()
        assert http("GET", service.url + "/api/health")[0] == 200
    finally:
        service.stop()


def _wait_for(what, check, log):
    """``check()``'s first true value within WAIT s (fails with ``log``'s tail)."""
    deadline = time.monotonic() + WAIT
    while not (found := check()):
        assert time.monotonic() < deadline, f"{what}:\n{log.read_text()[-3000:]}"
        time.sleep(0.05)
    return found


def test_a_worker_paused_past_its_lease_cannot_record_over_the_new_holder(
        new_service, pg_url, worker):
    """Worker A is paused (SIGSTOP: a node cut off whose container keeps running) in the
    middle of a grading until its lease runs out; worker B takes the submission over and
    is paused in turn; A resumes and finishes its grading while B holds the lease: A's
    result is refused and the row stays B's; B resumes and records the one result."""
    service = new_service(db=pg_url(), jobs=0).start()
    first = worker(service, lease=3).start()
    sub = service.submit("paused", slow_notebook("reference", 2))
    held_by = lambda w: lambda: ((r := service.rows()[sub])["status"] == "running"  # noqa: E731
                                 and r["lease_owner"].startswith(w.name + ":") and r)
    _wait_for("A never claimed it", held_by(first), first.log)
    first.proc.send_signal(signal.SIGSTOP)
    try:
        second = worker(service, lease=600).start()  # claims once A's 3 s lease ran out
        taken = _wait_for("B never took it over", held_by(second), second.log)
        second.proc.send_signal(signal.SIGSTOP)
    finally:
        first.proc.send_signal(signal.SIGCONT)
    try:
        def recorded_or_refused():  # A's log once it tried to record its result
            said = first.log.read_text()
            return said if ("ran out before its result was stored" in said
                            or f"graded {sub[:8]}" in said) else None

        said = _wait_for("A never tried to record its result", recorded_or_refused, first.log)
        assert f"graded {sub[:8]}" not in said, said[-2000:]
        row = service.rows()[sub]
        assert (row["status"], row["graded"], row["lease_owner"]) == (
            "running", 0, taken["lease_owner"]), row
    finally:
        second.proc.send_signal(signal.SIGCONT)
    answer = service.wait_done([sub])[sub]
    assert answer["result"]["score"] == EXPECTED["reference"]["score"]
    row = service.rows()[sub]
    assert (row["graded"], row["attempts"], row["lease_owner"]) == (1, 2, taken["lease_owner"])
