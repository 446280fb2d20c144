"""Grading threads: claim a submission's lease, grade it, record the result.

:class:`GradingThreads` runs ``jobs`` grading threads in this process, one sandbox
slot each (:func:`autograder.sandbox.lease_uid` turns a slot into a uid no
other grader on the machine holds), plus a heartbeat thread and a gradebook
thread. Any number of such processes, on any machines, can share one
database (``python -m autograder.service.worker``); the store's leases decide
who grades what (see :mod:`autograder.service.store`).

A thread never dies of a storage fault: every database call is retried with
exponential backoff (0.5 s doubling to 15 s), the problem is published in
the heartbeat (``/api/health`` shows it), and a result waits in memory until
it is written. While grading, the lease is renewed every third of its length;
if it ran out meanwhile (the database was away longer than the lease) the
result is discarded by :meth:`Store.finish` and the submission is graded
again, so it still ends with exactly one result.
"""
import logging
import os
import random
import socket
import threading
import time
import traceback

from sqlalchemy.exc import SQLAlchemyError

from autograder import load, pipeline, sandbox
from autograder.defaults import lti_key_file, setting
from autograder.exercises import current, names as exercise_names
from autograder.service.gradebook.mirror import NotReady
from autograder.service.gradebook.recorded import late_by
from autograder.service.gradebook.sync import GradebookSync
from autograder.service.lms import outbox
from autograder.service.store import process_name, storage_problem
from autograder.service.store.rows import Role

log = logging.getLogger("autograder.service")
HIDDEN_TESTS = "hidden tests"  # the problems' key while some cannot be loaded


def lms_client():
    """The :class:`~autograder.service.lms.ags.Client` of the LMS the environment registers
    (``LTI_*``), or None when none is (no client id or token URL)."""
    from autograder.service.lms.ags import Client
    from autograder.service.lms.lti_tool import Registration, private_key_pem
    registration = Registration.from_settings()
    return Client(registration, private_key_pem()) if registration.can_post else None


def grade_row(row, limits, slot):
    """The :class:`~autograder.results.GradingResult` for a claimed
    :class:`~autograder.service.store.rows.Submission`: its stored
    notebook bytes loaded as they are (no file is written) and graded by
    :func:`autograder.pipeline.grade_one`. The process prepared the sandbox once
    (:func:`autograder.service.config.start_grading`); naming the row's exercise to the
    zygote here starts a new one when its probe changed on disk since
    (:meth:`autograder.sandbox.Zygote.launch`). Never raises: a grader fault gives an
    ``error`` result whose ``fault`` holds the traceback."""
    exercise = row.exercise
    sub = load.from_bytes(row.learner, row.notebook, exercise, f"{exercise}.ipynb")
    try:
        sandbox.shared().launch([exercise])
    except Exception as exc:  # the zygote could not start: a grader fault, said to the learner
        return pipeline.fault(exercise, exc, pipeline.digest(sub, limits))
    return pipeline.grade_one(sub, limits, slot)


class Backoff:
    """Waits of 0.5 s doubling to ``cap`` seconds, with jitter; ``reset`` on success."""

    def __init__(self, cap=15.0):
        self.cap, self.delay = cap, 0.0

    def next(self):
        self.delay = min(self.cap, max(0.5, self.delay * 2))
        return self.delay * random.uniform(0.8, 1.2)

    def reset(self):
        self.delay = 0.0


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class GradingThreads:
    """``jobs`` grading threads on slots ``slot_base .. slot_base + jobs - 1``, each
    holding a claimed row for ``lease`` seconds, renewed every third of it; ``rule`` is
    which graded submission the gradebook holds (the options' ``--jobs``, ``--slot-base``,
    ``--lease``, ``--recorded``)."""

    def __init__(self, store, mirror, limits, jobs, slot_base, lease, rule):
        self.store, self.mirror, self.limits, self.lease = store, mirror, limits, lease
        self.rule = rule
        self.slots = [slot_base + i for i in range(max(1, jobs))]
        self.name = process_name()
        self.work = threading.Condition()
        self.sync_wanted = threading.Event()
        self.passback_wanted = threading.Event()
        self.lms = lms_client()  # None: no LMS registered, no grades go back
        if self.lms is not None:  # for `passback` run without the hub's environment
            outbox.remember_registration(store, self.lms.registration, None if setting(
                "LTI_PRIVATE_KEY") else lti_key_file().resolve())
        self.stopping = threading.Event()
        self.problems = {}  # thread name -> plain words, while it cannot proceed
        self.threads = []
        # what the gradebook thread does each round (autograder/service/gradebook/sync.py)
        self.sync = GradebookSync(store, mirror, rule, self.name, self.stopping)

    def start(self):
        loops = [(f"grader-{slot}", self._grade_loop, (slot,)) for slot in self.slots]
        loops += [("gradebook", self._sync_loop, ()), ("heartbeat", self._heartbeat_loop, ())]
        if self.lms is not None:
            loops.append(("passback", self._passback_loop, ()))
        for name, target, args in loops:
            self.threads.append(threading.Thread(target=self._forever, args=(target, *args),
                                                 name=name, daemon=True))
        for thread in self.threads:
            thread.start()
        self.sync_wanted.set()

    def notify(self):
        """A submission was queued: wake one worker."""
        with self.work:
            self.work.notify()

    def stop(self):
        self.stopping.set()
        with self.work:
            self.work.notify_all()
        self.sync_wanted.set()
        self.passback_wanted.set()
        try:
            self.store.forget(self.name)
        except SQLAlchemyError:
            pass

    def problem(self):
        """What keeps this process's threads from working, in words (None if nothing)."""
        return "; ".join(sorted(set(self.problems.values()))) or None

    # -- the loops ------------------------------------------------------------
    def _forever(self, loop, *args):
        """Run ``loop`` until stopping; whatever it raises is logged and retried."""
        backoff = Backoff()
        name = threading.current_thread().name
        while not self.stopping.is_set():
            try:
                loop(*args)
                return
            except SQLAlchemyError as exc:
                self.problems[name] = storage_problem(exc)
                log.warning("%s: %s (retrying)", name, self.problems[name])
            except Exception:  # a bug must not stop grading for good
                self.problems[name] = f"internal error in {name} (see the log)"
                log.error("%s failed (restarting it):\n%s", name, traceback.format_exc())
            self.stopping.wait(backoff.next())

    def _retry(self, call, *args):
        """``call(*args)``, retried with backoff through storage faults (None if stopping)."""
        backoff, name = Backoff(), threading.current_thread().name
        while not self.stopping.is_set():
            try:
                value = call(*args)
                self.problems.pop(name, None)
                return value
            except SQLAlchemyError as exc:
                if self.problems.get(name) != storage_problem(exc):
                    log.warning("%s: %s (retrying)", name, storage_problem(exc))
                self.problems[name] = storage_problem(exc)
            self.stopping.wait(backoff.next())
        return None

    def _heartbeat_loop(self):
        slots = len(self.slots)
        while not self.stopping.is_set():
            self._retry(self.store.heartbeat, self.name, Role.WORKER, slots, self.problem())
            # Every round, not only at start: a process on this host that crashed
            # (another worker, or this service before a restart) gets its gradings
            # requeued and its gradebook lock freed within a round, not after the lease.
            requeued = self._retry(self.store.release_dead, socket.gethostname(), _alive)
            if requeued:
                log.warning("requeued %d grading(s) interrupted by a crash", requeued)
                self.notify()
            self.stopping.wait(5.0)

    def unloadable(self):
        """The exercises whose submissions wait, queued: those whose hidden tests on disk
        cannot be loaded now (the heartbeat and /api/health's problems say why), and those
        whose hidden tests hold a check the released gradebook cannot hold
        (:meth:`Mirror.unreleased`: /api/health's warnings and the class page say why, until
        ``make release`` makes them agree; a grade is never made ahead of the gradebook)."""
        names = exercise_names()
        bad = current.loadable(names)[1]
        if bad:
            self.problems[HIDDEN_TESTS] = "; ".join(bad[ex] for ex in sorted(bad))
        else:
            self.problems.pop(HIDDEN_TESTS, None)
        try:
            held = self.mirror.unreleased([n for n in names if n not in bad])
        except NotReady:
            held = {}
        return tuple(bad) + tuple(held)

    def ahead_of_gradebook(self, exercise, result):
        """Whether ``result`` holds checks (grade ids) other than the released gradebook's
        cells of ``exercise``: hidden tests edited after this grading was claimed
        (:meth:`unloadable` holds the exercise from then on). False when the exercise is
        not released, or the gradebook cannot be read now (the mirror retries then)."""
        try:
            cells = self.mirror.released_checks().get(exercise)
        except Exception:  # read again by the next claim's unloadable()
            return False
        ids = {c.grade_id for c in result.checks if c.grade_id}
        return bool(cells and ids and ids != cells)

    def _grade_loop(self, slot):
        owner = f"{self.name}:{slot}"
        while not self.stopping.is_set():
            row = self._retry(self.store.claim, owner, self.lease, self.unloadable())
            if row is None:
                with self.work:
                    self.work.wait(timeout=1.0)
                continue
            start = time.monotonic()
            result = self._grade_renewing(row, slot, owner)
            if self.stopping.is_set():
                return  # the lease runs out (or the next start requeues it)
            if self.ahead_of_gradebook(row.exercise, result):
                # the hidden tests changed while it was graded: it waits with the others
                self._retry(self.store.give_back, row.id, owner)
                log.info("%s (%s) graded by hidden tests the gradebook cannot hold: queued "
                         "again", row.id[:8], row.learner)
                continue
            if self._retry(self.store.finish, row.id, owner, result.to_record()):
                log.info("graded %s (%s): %g/%g in %.1f s", row.id[:8], row.learner,
                         result.score, result.max_score, time.monotonic() - start)
                self.sync_wanted.set()
                self.passback_wanted.set()
            elif not self.stopping.is_set():
                log.warning("lease on %s ran out before its result was stored: result "
                            "discarded, the submission is graded again", row.id[:8])

    def _grade_renewing(self, row, slot, owner):
        """Grade ``row`` while a thread renews its lease every third of it."""
        done = threading.Event()

        def renew():
            while not done.wait(self.lease / 3):
                try:
                    if not self.store.renew(row.id, owner, self.lease):
                        return  # lost (expired and reclaimed): finish will say so
                except SQLAlchemyError as exc:
                    log.warning("renewing the lease on %s: %s", row.id[:8],
                                storage_problem(exc))

        renewer = threading.Thread(target=renew, name=f"lease-{slot}", daemon=True)
        renewer.start()
        try:
            result = grade_row(row, self.limits, slot)
        finally:
            done.set()
        if result.fault:  # for the instructor: the learner reads only result.output
            log.error("grading %s failed:\n%s", row.id, result.fault)
        return result

    def _sync_loop(self):
        failing = None
        while not self.stopping.is_set():
            self.sync_wanted.wait(timeout=5.0)
            self.sync_wanted.clear()
            # One process at a time writes the gradebook (nbgrader's rows are not
            # safe to create from two writers at once).
            taken = self.sync.take()
            self.problems.pop(threading.current_thread().name, None)  # the store answers
            if not taken:
                continue
            problem = self.sync.round()  # retried next round; logged once per cause
            if problem and str(problem) != failing:
                log.warning("gradebook not updated yet (will retry): %s", problem)
            failing = problem and str(problem)

    def _passback_loop(self):
        outbox.Sender(self.store, self.lms, self.rule, lambda: late_by(self.mirror.deadlines),
                      f"{self.name}:passback").loop(self.stopping, self.passback_wanted)

