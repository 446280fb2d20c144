"""Grade queued submissions in worker threads, then mirror them to the gradebook.

Each worker owns one sandbox slot; :func:`autograder.sandbox.lease_uid` turns
it into a uid no other grader on the machine holds (and kills what a crashed
grader left on it), so two learners' code never share a uid. Each worker grades
with :func:`autograder.api.grade_file`, the pipeline the command line uses; the
result is committed to the :class:`~autograder.service.store.Store` in the same
statement that marks the row done. One more thread mirrors done
results into nbgrader's gradebook, retrying until it succeeds.
"""
import logging
import tempfile
import threading
import time
import traceback
from pathlib import Path

from autograder import api, pipeline

log = logging.getLogger("autograder.service")


def grade_notebook(row, limits, slot):
    """The results.json dict for a claimed row (never raises on bad submissions)."""
    exercise = row["exercise"]
    with tempfile.TemporaryDirectory(prefix="service-") as tmp:
        path = Path(tmp) / f"{exercise}.ipynb"  # readable by the grader only
        path.write_bytes(row["notebook"])
        return api.grade_file(path, row["learner"], exercise, limits, slot)


class Workers:
    """``jobs`` grading threads on slots ``slot_base .. slot_base + jobs - 1``."""

    def __init__(self, store, mirror, limits, jobs=2, slot_base=100):
        self.store, self.mirror, self.limits = store, mirror, limits
        self.slots = [slot_base + i for i in range(max(1, jobs))]
        self.work = threading.Condition()
        self.sync_wanted = threading.Event()
        self.stopping = threading.Event()
        self.threads = []

    def start(self):
        requeued = self.store.requeue_running()
        if requeued:
            log.warning("requeued %d grading(s) interrupted by the last shutdown", requeued)
        for slot in self.slots:
            self.threads.append(threading.Thread(target=self._grade_loop, args=(slot,),
                                                 name=f"grader-{slot}", daemon=True))
        self.threads.append(threading.Thread(target=self._sync_loop, name="gradebook",
                                             daemon=True))
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

    def _grade_loop(self, slot):
        while not self.stopping.is_set():
            row = self.store.claim()
            if row is None:
                with self.work:
                    self.work.wait(timeout=1.0)
                continue
            start = time.monotonic()
            try:
                result = grade_notebook(row, self.limits, slot)
            except Exception as exc:  # a grader bug must still give the learner an answer
                log.error("grading %s failed:\n%s", row["id"], traceback.format_exc())
                result = pipeline.grader_fault(row["exercise"], exc)
            if self.stopping.is_set():
                return  # stays 'running': requeued and graded at the next start
            self.store.finish(row["id"], result)
            log.info("graded %s (%s): %g/%g in %.1f s", row["id"][:8], row["learner"],
                     result["score"], result["max_score"], time.monotonic() - start)
            self.sync_wanted.set()

    def _sync_loop(self):
        failing = None
        while not self.stopping.is_set():
            self.sync_wanted.wait(timeout=5.0)
            self.sync_wanted.clear()
            try:
                self.sync_once()
                failing = None
            except Exception as exc:  # retried on the next round; logged once per cause
                if str(exc) != failing:
                    log.warning("gradebook not updated yet (will retry): %s", exc)
                failing = str(exc)

    def sync_once(self):
        """Mirror every done, unsynced submission; the newest per learner wins.

        A row that cannot be written stays unsynced (retried later) without
        holding up the others; the first such error is raised at the end.
        """
        errors = []
        for row in self.store.unsynced():
            if self.stopping.is_set():
                return
            if row["seq"] < self.store.newest_recorded(row["learner"], row["exercise"]):
                self.store.mark_gradebook(row["id"], "superseded")
                continue
            try:
                self.mirror.record(row)
            except Exception as exc:
                errors.append(exc)
                continue
            self.store.mark_gradebook(row["id"], "recorded")
        if errors:
            raise errors[0]
