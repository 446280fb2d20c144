"""The store's queue rules on SQLite and on a real PostgreSQL server: leases,
one slot per learner, newest-wins replacement, the caps, exactly one result."""
import time

import pytest

from autograder.results import CheckResult, GradingResult
from autograder.service.store import CapReached, Caps, Store

NB = b'{"cells": []}'


def points(score):
    """A stored result (:meth:`GradingResult.to_record`) scoring ``score`` of 3 points."""
    check = CheckResult("t1", "t1", float(score), 3.0, "passed" if score == 3 else "failed", "")
    return GradingResult(checks=(check,), output="", status="graded").to_record()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request, tmp_path):
    url = tmp_path / "grading.db" if request.param == "sqlite" else request.getfixturevalue(
        "pg_url")()
    store = Store(url)
    yield store
    store.engine.dispose()


def add(store, learner, exercise="update_with_donate", client="10.0.0.1", caps=None):
    return store.admit(learner, exercise, NB, client, caps or Caps(rate_count=0))[0]


def test_a_result_from_an_expired_lease_is_discarded(store):
    sub = add(store, "ada")
    assert store.claim("host:1:0", lease=0.5).id == sub
    assert store.claim("host:2:0", lease=30) is None  # leased: nobody else takes it
    time.sleep(0.7)
    assert not store.renew(sub, "host:1:0", 30)  # too late to renew
    again = store.claim("host:2:0", lease=30)  # expired: claimable
    assert again.id == sub and again.attempts == 2
    assert not store.finish(sub, "host:1:0", points(1))  # the first worker's late result
    assert store.finish(sub, "host:2:0", points(2))
    assert not store.finish(sub, "host:2:0", points(3))  # one result, once
    row = store.get(sub)
    assert (row.status, row.graded, row.result.score) == ("done", 1, 2.0)


def test_an_expired_lease_nobody_took_still_discards_the_result(store):
    sub = add(store, "ada")
    store.claim("host:1:0", lease=0.3)
    time.sleep(0.5)
    assert not store.finish(sub, "host:1:0", points(1))
    assert store.get(sub).graded == 0


def test_a_learner_holds_one_slot_while_others_wait(store):
    hog = [add(store, "hog", exercise) for exercise in ("update_with_donate", "donation_report")]
    fair = add(store, "ann")
    assert store.claim("w:1:0", 30).id == hog[0]
    assert store.claim("w:1:1", 30).id == fair  # not hog's second
    assert store.claim("w:1:2", 30) is None  # hog's second waits for hog's first
    assert store.finish(hog[0], "w:1:0", {})
    assert store.claim("w:1:2", 30).id == hog[1]


def test_newest_wins_while_queued(store):
    first = add(store, "ann")
    second = add(store, "ann")
    other = add(store, "ann", "donation_report")  # another exercise is not replaced
    assert store.get(first).status == "replaced"
    assert store.get(first).replaced_by == second
    assert store.claim("w:1:0", 30).id == second
    third = add(store, "ann")  # the running one is not replaced
    assert store.get(second).status == "running"
    assert {store.get(i).status for i in (third, other)} == {"queued"}


def test_a_queued_regrade_is_neither_replaced_nor_counted_by_a_learner(store):
    """The instructor's regrade of bob's graded submission waits in the queue; bob's new
    submission of that exercise must not replace it (his earlier grade would be gone,
    regraded into nothing), and the regrade counts against none of his caps (rate,
    quota, waiting) nor the queue's."""
    graded = add(store, "bob")
    store.claim("w:1:0", 30)
    assert store.finish(graded, "w:1:0", points(3))
    [regrade] = store.requeue({graded: [graded]})
    caps = Caps(rate_count=3, rate_seconds=3600, per_learner=1, per_client=0, max_queue=1,
                learner_bytes=3 * len(NB))  # his own three notebooks, not the regrade's copy
    mine = add(store, "bob", caps=caps)
    assert store.get(regrade).status == "queued" and store.get(mine).status == "queued"
    again = add(store, "bob", caps=caps)  # his own queued one is still replaced
    assert store.get(mine).replaced_by == again and store.get(regrade).status == "queued"


def test_caps_refuse_and_store_nothing(store):
    caps = Caps(rate_count=3, rate_seconds=60, per_learner=2, per_client=3, max_queue=5)
    add(store, "a1", caps=caps)
    add(store, "a1", "donation_report", caps=caps)
    with pytest.raises(CapReached) as refused:
        add(store, "a1", "fix_training_loop", caps=caps)
    assert refused.value.kind == "learner" and store.waiting() == 2
    add(store, "b1", caps=caps)
    with pytest.raises(CapReached) as refused:  # a fourth from the same address
        add(store, "c1", caps=caps)
    assert refused.value.kind == "client" and store.waiting() == 3
    add(store, "c1", client="10.0.0.2", caps=caps)
    add(store, "d1", client="10.0.0.3", caps=caps)
    with pytest.raises(CapReached) as refused:
        add(store, "e1", client="10.0.0.4", caps=caps)
    assert refused.value.kind == "queue" and store.waiting() == 5
    add(store, "a1", caps=caps)  # replaces a1's queued one: the queue does not grow
    with pytest.raises(CapReached) as refused:
        add(store, "a1", caps=caps)
    assert refused.value.kind == "rate" and refused.value.count == 3


def test_a_crashed_process_on_this_host_frees_its_leases_and_locks(store):
    """A restart after a crash mirrors the gradebook at once: the dead process's
    gradebook lock does not hold it back for the lock's 120 s (nor its leases for theirs)."""
    sub = add(store, "ada")
    assert store.claim("here:11:0", lease=600).id == sub
    assert store.take_lock("gradebook", "here:11", 120.0)
    assert store.take_lock("other", "there:12", 120.0)  # another host's: left to expire
    assert not store.take_lock("gradebook", "here:13", 120.0)
    assert store.release_dead("here", alive=lambda pid: pid != 11) == 1
    assert store.take_lock("gradebook", "here:13", 120.0)
    assert not store.take_lock("other", "here:13", 120.0)
    assert store.claim("here:13:0", lease=30).id == sub


def test_a_learner_stores_no_more_than_their_quota(store):
    """Every stored notebook's bytes count, replaced ones too; another learner is not held."""
    caps = Caps(rate_count=0, learner_bytes=3 * len(NB))
    for _ in range(3):
        store.admit("ada", "update_with_donate", NB, "10.0.0.1", caps)
    with pytest.raises(CapReached) as cap:
        store.room("ada", len(NB), caps)  # what the API asks before it parses
    assert (cap.value.kind, cap.value.count, cap.value.limit) == ("quota", 3 * len(NB), 3 * len(NB))
    with pytest.raises(CapReached, match="quota"):
        store.admit("ada", "update_with_donate", NB, "10.0.0.1", caps)
    store.room("bea", len(NB), caps)
    add(store, "bea", caps=caps)


def test_a_view_of_scores_reads_no_notebook(store):
    """api/standing reads the learner's graded rows; their notebooks stay in the database."""
    from sqlalchemy import event

    sub = add(store, "ada")
    store.claim("host:1:0", lease=30)
    store.finish(sub, "host:1:0", points(1))
    statements = []
    event.listen(store.engine, "before_cursor_execute",
                 lambda conn, cursor, sql, *rest: statements.append(sql))
    rows = store.graded("ada", "update_with_donate", notebooks=False)
    assert [r.id for r in rows] == [sub] and rows[0].notebook is None
    assert statements and not any("notebook" in sql for sql in statements), statements


def test_the_pace_is_the_median_grading_so_one_slow_grading_inflates_no_promise(store):
    from sqlalchemy import update

    from autograder.service.store.schema import submissions
    taken = {}
    for learner, seconds in (("cold", 30.0), ("ann", 1.0), ("bob", 2.0)):
        sub = add(store, learner)
        store.claim("host:1:0", 30)
        assert store.finish(sub, "host:1:0", points(3))
        taken[sub] = seconds
    with store.engine.begin() as conn:  # the first grading waited for a zygote to start
        for sub, seconds in taken.items():
            conn.execute(update(submissions).where(submissions.c.id == sub)
                         .values(finished_at=submissions.c.started_at + seconds))
    assert store.pace()[0] == 2.0


@pytest.mark.parametrize("given", ["postgresql://grader:s3cr%40t@db.example:5433/grading",
                                   "postgres://grader:s3cr%40t@db.example:5433/grading"])
def test_a_database_url_keeps_its_password_when_given_again(given):
    """The service opens its store with the URL it already parsed (``config.open_store``);
    its password must survive (a URL's ``str()`` shows ``***``), or every process on a
    PostgreSQL server that asks for one is refused."""
    from autograder.service.store import database_url
    url = database_url(given)
    for again in (database_url(url), database_url(database_url(url))):
        assert again.password == "s3cr@t" and again == url
        assert again.drivername == "postgresql+psycopg"
