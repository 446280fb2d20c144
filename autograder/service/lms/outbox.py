"""Grades back to the LMS through an outbox in the course's database.

:func:`plan` writes, per learner and exercise, the recorded grade the LMS should hold
(:mod:`autograder.service.gradebook.recorded` decides it, late penalty included) into the
``passback`` table; a change of that number (a better attempt, a late penalty, an
extension, a regrade, another rule) bumps the row's ``version`` and stamps
``changed_at``, the score's AGS ``timestamp``. :func:`send_one` leases one row whose
version the LMS does not hold yet, posts it (:mod:`autograder.service.lms.ags`) and marks
that version sent; a failure keeps the row, with the reason, for a retry after a
backoff (2 s doubling to 5 min). Rows and leases are in the database, so a restart or a
killed process loses nothing: a lease that ran out is taken by the next sender.

Where: the LMS's own column of the exercise when a launch of its link brought one (the
AGS claim's ``lineitem``, :func:`autograder.service.store.lti.lms_line_item`), else the
tool's own line item. A tool's line item deleted in the LMS (404) is made again at the
next try; the LMS's own column gone, or a refusal asking again cannot change (a 4xx
other than 401/404/408/429, such as 422 "not a member"), marks the row refused with the
LMS's words (:func:`autograder.service.store.passback.refused`): not retried until its
grade changes or an instructor re-sends it, and said by :func:`states` (``passback status``, ``api/class``).

Posting a version twice (a sender killed after the LMS took the score, before it marked
it sent; an instructor's :func:`resend_all`) posts the same score with the same
timestamp: the LMS's result for that learner stays one score. Line items are found or
created under a named lock (:meth:`Store.take_lock`), so two processes never make two.
"""
from __future__ import annotations

import dataclasses
import json
import os
import random
import time

from autograder import exercises
from autograder.defaults import points_text
from autograder.service.gradebook.recorded import grade, recorded
from autograder.service.lms.ags import Failed
from autograder.service.store import lti, passback
from autograder.service.store.rows import Source

LEASE_S = 60.0  # a post's lease: longer than a request's timeout
PLAN_EVERY_S = 15.0  # a plan without a new grading (extensions, due dates change grades)
BACKOFF_MAX_S = 300.0


def backoff(tries: int) -> float:
    """Seconds before try ``tries + 1``: 2 s doubling to 5 min, with 20 % jitter."""
    return min(BACKOFF_MAX_S, 2.0 * 2 ** min(20, max(0, tries - 1))) * random.uniform(0.8, 1.2)


def wanted(store, rule, lateness):
    """``{(learner, exercise): (score, max_score, submission id)}``: each learner's recorded
    grade (after the late penalty, an instructor's manual score from formgrader included:
    :func:`~autograder.service.gradebook.recorded.grade`) of each exercise they have a
    graded submission of; none of an instructor's (:func:`~autograder.service.class_views.roster.staff`)."""
    from autograder.service.class_views.roster import staff
    rows_of, instructors = {}, staff(store)
    for row in store.submissions():
        if row.learner not in instructors:  # an instructor's test is no learner's grade
            rows_of.setdefault((row.learner, row.exercise), []).append(row)
    out = {}
    for key, rows in rows_of.items():
        keep = recorded(rows, rule, lateness)
        if keep is not None:
            out[key] = (grade(keep, lateness)[0], float(keep.result.max_score), keep.id)
    return out


def plan(store, rule, lateness, now=None):
    """Bring the outbox to the recorded grades (see the module); the number of rows whose
    grade changed. Call under the store's lock ``passback-plan`` (one planner at a time)."""
    now = time.time() if now is None else now
    return passback.write_plan(store, wanted(store, rule, lateness), now)


def context_url(store, name):
    """The course's endpoint ``name`` (``lineitems``, ``memberships``) a launch of its
    pinned LMS context brought; None while ``LTI_CONTEXT_ID`` names another context than
    the one they came from (no launch of the new one yet)."""
    known = lti.context_values(store, (name, "context_id"))
    configured = os.environ.get("LTI_CONTEXT_ID", "").strip()  # lms_roster.configured_context
    if configured and name != "registration" and known.get("context_id") != configured:
        return None
    return known.get(name)


def remember_registration(store, registration, key_file):
    """Keep the LMS registration a service runs with (its ``LTI_*`` settings but the key:
    ``key_file``, the tool key's path, or None when the key was given itself), so that
    ``passback`` run without the hub's environment posts as the service does."""
    lti.remember_context(store, registration=json.dumps(dict(
        dataclasses.asdict(registration), key_file=str(key_file) if key_file else None)))


def recorded_registration(store):
    """``(Registration, key file path or None)`` a service recorded, or ``(None, None)``."""
    from autograder.service.lms.lti_tool import Registration
    text = context_url(store, "registration")
    if not text:
        return None, None
    kept = json.loads(text)
    key_file = kept.pop("key_file", None)
    return Registration(**{f.name: kept.get(f.name) or "" for f in
                           dataclasses.fields(Registration)}), key_file


def claim(store, owner, now=None):
    """Lease one row due for posting to ``owner`` for :data:`LEASE_S`
    (:func:`autograder.service.store.passback.claim`): its dict, or None."""
    return passback.claim(store, owner, LEASE_S, now)


def failed(store, row, owner, words, now=None):
    """Posting ``row`` failed for ``words``: kept, retried after :func:`backoff`."""
    now = time.time() if now is None else now
    passback.failed(store, row, owner, words, now + backoff(row["tries"] + 1))


def line_item(store, client, lineitems_url, exercise, owner):
    """``(url, source)`` of the LMS's line item for ``exercise``: remembered (the LMS's own
    column a launch brought, or the tool's), else the tool's, found or created (under the
    lock ``lineitem:<exercise>``). Raises :class:`Failed` when it cannot be had now."""
    found = lti.remembered_item(store, exercise)
    if found:
        return found
    if not lineitems_url:
        raise Failed("no line items URL yet: no launch from the LMS has brought one "
                     "(or set LTI_LINEITEMS_URL)")
    if not store.take_lock(f"lineitem:{exercise}", owner, 60.0):
        raise Failed("another process is finding or creating this exercise's line item")
    try:
        found = lti.remembered_item(store, exercise)  # made while this process waited for the lock?
        if found:
            return found
        ex = exercises.get(exercise)
        points = float(sum(p for _, _, p in ex.tests()))
        url = client.line_item(lineitems_url, exercise, ex.title, points)
        lti.add_item(store, exercise, url)
        return url, None
    finally:
        store.take_lock(f"lineitem:{exercise}", owner, 0.0)  # ends at once


def send_one(store, client, owner, lineitems_url=None):
    """Post one due row (:func:`claim`); True if one was tried, False when none is due."""
    row = claim(store, owner)
    if row is None:
        return False
    item = source = None
    try:
        url = lineitems_url or client.registration.lineitems_url or \
            context_url(store, "lineitems")
        item, source = line_item(store, client, url, row["exercise"], owner)
        client.post_score(item, row["sub"], row["score"], row["max_score"], row["changed_at"])
    except Failed as exc:
        if exc.status == 404 and item and source == Source.LMS:
            passback.refused(store, row, owner, "the LMS's own column for this exercise (made in the "
                    f"LMS) is gone ({exc.words}): make the assignment again in the LMS and "
                    "open its link once, and its grades are sent there")
        elif exc.status == 404 and item:
            lti.forget_item(store, row["exercise"], item)  # deleted in the LMS: made again
            failed(store, row, owner, f"the line item was deleted in the LMS ({exc.words}); "
                   "it is made again at the next try")
        elif exc.permanent:
            passback.refused(store, row, owner, exc.words)
        else:
            failed(store, row, owner, exc.words)
    except Exception as exc:  # a bug or an odd answer: kept and retried like a failure
        failed(store, row, owner, f"internal error: {type(exc).__name__}: {exc}")
    else:
        passback.sent(store, row, owner)
    return True


def resend_all(store):
    """The instructor's re-send: every grade is posted again (same score and timestamp);
    the number of grades."""
    return passback.resend_all(store)


def states(store, rows=None):
    """``{(learner, exercise): {"holds": bool, "why": str | None}}``: whether the LMS
    holds the grade last planned for it, and why not (waiting, the last failure, or no
    LMS account); ``rows``: :func:`autograder.service.store.passback.rows` when read already."""
    out = {}
    for r in passback.rows(store) if rows is None else rows:
        holds = r["sent_version"] >= r["version"]
        why = None
        if not holds:
            if r["sub"] is None:
                why = "not an LMS member: never launched from the LMS"
            elif r["refused"]:
                why = (f"refused by the LMS: {r['problem']} (not retried: fix it in the LMS, "
                       "then re-send: passback resend)")
            elif r["problem"]:
                why = f"{r['problem']} (retrying)"
            else:
                why = "waiting to be sent"
        out[(r["learner"], r["exercise"])] = {"holds": holds, "why": why}
    return out


def annotate(view, store):
    """Add to each learner of the class view (:func:`~autograder.service.class_views.class_view.summary`)
    ``lms``: whether the LMS holds their recorded grade and why not (:func:`states`), or
    None while no grade of theirs was planned for the LMS. A recorded grade other than the
    one last planned (an extension, a moved deadline, an edited late policy, a new grade,
    before the next :func:`plan`) is not held, whatever the LMS holds of the old one.
    ``view``, changed."""
    rows = passback.rows(store)
    known, planned = states(store, rows), {(r["learner"], r["exercise"]): r["score"] for r in rows}
    for exercise, ex in view.items():
        for learner, who in ex["learners"].items():
            state, score = known.get((learner, exercise)), planned.get((learner, exercise))
            if state is not None and who.get("recorded") not in (None, score):
                state = {"holds": False, "why": (
                    f"the LMS holds {points_text(score)}, planned before the recorded grade became "
                    f"{points_text(who['recorded'])}; the grading service sends the new one at its "
                    f"next plan (every {PLAN_EVERY_S:g} s while it runs)")}
            who["lms"] = state
    return view


class Sender:
    """Posts the outbox to the LMS of ``client`` as process ``owner`` (``host:pid:...``):
    plans under the store's lock ``passback-plan`` (``lateness()`` gives the current
    :func:`~autograder.service.gradebook.recorded.late_by`), then posts every due row."""

    def __init__(self, store, client, rule, lateness, owner):
        self.store, self.client, self.rule, self.lateness = store, client, rule, lateness
        self.owner = owner

    def plan(self):
        """One plan, unless another process is planning (then it does)."""
        if self.store.take_lock("passback-plan", self.owner, 60.0):
            try:
                return plan(self.store, self.rule, self.lateness())
            finally:
                self.store.take_lock("passback-plan", self.owner, 0.0)
        return 0

    def drain(self, stopping=None):
        """Post every due row; how many were tried."""
        tried = 0
        while not (stopping and stopping.is_set()) and send_one(self.store, self.client,
                                                                 self.owner):
            tried += 1
        return tried

    def loop(self, stopping, wanted):
        """Until ``stopping``: plan when ``wanted`` is set (something was graded) or every
        :data:`PLAN_EVERY_S`, post what is due every second (a backoff ending, a lease
        freed)."""
        planned = -PLAN_EVERY_S
        while not stopping.is_set():
            if wanted.is_set() or time.monotonic() - planned >= PLAN_EVERY_S:
                wanted.clear()
                planned = time.monotonic()
                self.plan()
            self.drain(stopping)
            wanted.wait(timeout=1.0)
