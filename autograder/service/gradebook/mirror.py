"""Mirror the service's results into nbgrader's gradebook.

Each check of a result carries the nbgrader ``grade_id`` of the graded cell it
scores (:class:`autograder.results.CheckResult`), so a result maps onto the
gradebook cell by cell, by id, exactly as ``nbgrader autograde``'s ``SaveAutoGrades``
preprocessor writes it: ``Grade.auto_score`` per graded cell, a manual score
left untouched (and flagged for review if present), ``Comment.auto_comment``
"No response." on an unattempted answer cell, and the submission timestamp.
formgrader and ``nbgrader export`` then read these grades like any others.

nbgrader keeps one submission per learner and exercise: the service writes the
recorded one there (``recorded.py``: the best by default, or the latest).
The notebook itself is also written to ``submitted/<learner>/<exercise>/`` with
nbgrader's ``timestamp.txt``, so ``nbgrader autograde`` can re-check it.
"""
import contextlib
import datetime
import os
import threading
import time
from pathlib import Path

from nbgrader.api import BaseCell, Comment, Grade, Gradebook, MissingEntry

from autograder import exercises
from autograder.exercises import current
from autograder.results import atomic_write
from autograder.service.gradebook.lateness import Deadlines, set_by_hand

RELEASED_CHECK_S = 2.0  # how often the released exercises' checks are read again


class NotReady(Exception):
    """The gradebook cannot take this result yet (e.g. the exercise is not released)."""


@contextlib.contextmanager
def _one_transaction(gb):
    """Make the block's gradebook writes one transaction.

    nbgrader's :class:`~nbgrader.api.Gradebook` commits inside its own methods
    (``add_submission`` commits a new submission before any score is written), so a
    reader such as ``nbgrader export`` could see a timestamped submission scoring 0 and
    no late penalty. Inside the block its commits only flush; the block commits once at
    its end, or rolls everything back."""
    commit = gb.db.commit
    gb.db.commit = gb.db.flush
    try:
        yield
    except BaseException:
        gb.db.rollback()
        raise
    finally:
        del gb.db.commit
    commit()


class Mirror:
    """Writes results into the gradebook and ``<course>/submitted/``.

    The gradebook is ``<course>/gradebook.db`` (SQLite), or the database at
    ``url`` when one is given: with PostgreSQL, the grading service's own
    database holds nbgrader's tables too (release into it with
    ``nbgrader generate_assignment --db <url>``).
    """

    def __init__(self, course_dir, url=None):
        self.course = Path(course_dir)
        self.sqlite = url is None
        self.url = f"sqlite:///{self.course / 'gradebook.db'}" if url is None else url
        self._deadlines = None
        self._open = None  # (Gradebook, the SQLite file's identity) kept between writings
        self._released = None  # (when read, released_checks' answer)
        self._lock = threading.Lock()

    @property
    def deadlines(self):
        """The course's :class:`~autograder.service.gradebook.lateness.Deadlines` (read from this
        gradebook and the course's nbgrader_config.py; made on first use)."""
        if self._deadlines is None:
            self._deadlines = Deadlines(self.url, self.course, self.course / "gradebook.db"
                                        if self.sqlite else None)
        return self._deadlines

    def prepare(self):
        """Create nbgrader's tables in a shared database before the service's own.

        nbgrader's ``Gradebook`` stamps its alembic version only into a database
        with no tables at all; opening it first keeps ``nbgrader db upgrade``
        working on the shared database.
        """
        if not self.sqlite:
            Gradebook(self.url).close()

    def missing(self):
        """True while a SQLite gradebook does not exist yet (nothing released)."""
        return self.sqlite and not (self.course / "gradebook.db").exists()

    def where(self):
        return str(self.course / "gradebook.db") if self.sqlite else "the service's database"

    def record(self, row, penalty=0.0):
        """Write one done :class:`~autograder.service.store.rows.Submission` (as :meth:`Store.graded`
        reads it, with its notebook) into the gradebook, with its late ``penalty`` in points
        (nbgrader's ``late_submission_penalty``), in one transaction of its own."""
        with self.writing() as book:
            book.record(row, penalty)

    @contextlib.contextmanager
    def writing(self):
        """A :class:`Book` for many :meth:`Book.record` calls in one gradebook session and
        one transaction: readers (``nbgrader export``, the class CSV) see all of them or
        none. Raises :class:`NotReady` at once when no gradebook exists; an error inside
        the block rolls every write of the block back."""
        if self.missing():
            raise NotReady(f"no gradebook at {self.course / 'gradebook.db'}: run `make release`")
        with self._lock:
            gb = self._gradebook()
            try:
                with _one_transaction(gb):
                    book = Book(gb)
                    yield book
            except BaseException:
                self._close()  # a connection the database dropped is not kept
                raise
        for args in book.notebooks:  # the gradebook holds them now
            self._write_notebook(*args)

    def _gradebook(self):
        """The Gradebook kept open between writings (opening one costs more than a round
        of grades: an engine, a schema check). Opened again when the SQLite file was
        replaced (a restored backup, a new release), so no write lands in the old file."""
        stat = (self.course / "gradebook.db").stat() if self.sqlite else None
        identity = (stat.st_dev, stat.st_ino) if stat else None
        if self._open is not None and self._open[1] != identity:
            self._close()
        if self._open is None:
            self._open = (Gradebook(self.url), identity)
        return self._open[0]

    def _close(self):
        if self._open is not None:
            self._open[0].close()
            self._open = None

    def released_checks(self):
        """``{exercise: frozenset of grade cell names}`` of every exercise released into the
        gradebook with graded cells (what it can hold a grade of); read at most every
        :data:`RELEASED_CHECK_S` seconds (only a release changes them)."""
        now = time.monotonic()
        if self._released is None or now - self._released[0] > RELEASED_CHECK_S:
            found = {}
            if not self.missing():
                with self._lock:  # the Gradebook kept open: no engine made every read
                    gb = self._gradebook()
                    try:
                        for assignment in gb.assignments:
                            cells = frozenset(c.name for nb in assignment.notebooks
                                              for c in nb.grade_cells)
                            if cells:
                                found[assignment.name] = cells
                    except BaseException:
                        self._close()
                        raise
                    gb.db.rollback()  # the read's transaction ends: the next sees a release
            self._released = (now, found)
        return self._released[1]

    def overridden(self):
        """``{(exercise, learner): Manual}`` (:func:`~autograder.service.gradebook.lateness.set_by_hand`)
        of each grade a person set by hand in nbgrader's formgrader: a graded cell with a
        manual score other than the autograder's, or extra credit. nbgrader totals those
        (``Grade.score``: the manual score takes precedence, extra credit adds), and so does
        every view (:func:`~autograder.service.gradebook.recorded.grade`); the mirror never
        writes either field, so a new grading keeps them, as ``nbgrader autograde`` does.
        Read now (the views' reading is :data:`~.lateness.CACHE_S` old at most)."""
        if self.missing():
            return {}
        with self._lock:
            gb = self._gradebook()
            try:
                found = set_by_hand(gb)
            except BaseException:
                self._close()
                raise
            gb.db.rollback()  # the read's transaction ends: the next sees formgrader's edits
        return dict(sorted(found.items()))

    def unreleased(self, names):
        """``{exercise: why}`` for each of ``names`` whose hidden tests on disk now hold a
        check (a grade id) the released gradebook has no cell for, or lack one it has: its
        submissions wait, queued, until a release makes the two agree, so no grade is made
        that the gradebook, ``nbgrader export`` and the class CSV could not hold. An
        exercise not released yet, or whose hidden tests cannot be loaded now, is not
        named here (each has its own sentence)."""
        released, why = self.released_checks(), {}
        for name in names:
            if name not in released:
                continue
            try:
                tests = {test for test, _, _ in exercises.get(name).tests()}
            except current.NotLoadable:
                continue
            added, removed = sorted(tests - released[name]), sorted(released[name] - tests)
            if added or removed:
                change = "; ".join(filter(None, [
                    added and f"they add check(s) {', '.join(added)}",
                    removed and f"they remove check(s) {', '.join(removed)}"]))
                why[name] = (f"{name}: hidden tests changed since release: run make release "
                             f"({change}, which the released gradebook cannot hold). Until it "
                             f"succeeds, submissions of {name} wait, queued. Once learners "
                             "have submitted, make release refuses this: undo the change, or "
                             "put the new check in a new exercise (docs/exercises.md)")
        return why

    def points_disagree(self, exercise, fix=False):
        """Where the gradebook's points for ``exercise`` differ from its hidden tests'
        (``Exercise.tests``): ``["test_values: hidden tests 3, gradebook 2", ...]``;
        with ``fix``, the gradebook's are set to the hidden tests' first. Empty when the
        exercise is not in the gradebook (nothing released yet) or its hidden tests cannot
        be loaded now."""
        try:
            points = {name: float(p) for name, _, p in exercises.get(exercise).tests()}
        except current.NotLoadable:  # mid-edit: the health check names that problem itself
            return []
        if self.missing():
            return []
        found = []
        with Gradebook(self.url) as gb:
            try:
                notebooks = gb.find_assignment(exercise).notebooks
            except MissingEntry:
                return []
            for cell in (c for nb in notebooks for c in nb.grade_cells if c.name in points):
                if float(cell.max_score) != points[cell.name]:
                    found.append(f"{cell.name}: hidden tests {points[cell.name]:g}, "
                                 f"gradebook {float(cell.max_score):g}")
                    if fix:
                        cell.max_score = points[cell.name]
            if fix:
                gb.db.commit()
        return found

    @staticmethod
    def notebook_of(gb, exercise, grade_ids):
        try:
            assignment = gb.find_assignment(exercise)
        except MissingEntry:
            raise NotReady(f"exercise {exercise!r} is not in the gradebook: run `make release`") from None
        for nb in assignment.notebooks:
            if sorted(c.name for c in nb.grade_cells) == sorted(grade_ids):
                return nb.name
        raise NotReady(f"no notebook of {exercise!r} in the gradebook has graded cells "
                       f"{', '.join(grade_ids)}: run `make release`")

    def _write_notebook(self, exercise, learner, notebook, raw, when):
        """The notebook's bytes as stored (the API serialized them as nbgrader's file)."""
        folder = self.course / "submitted" / learner / exercise
        for made in (folder.parent.parent, folder.parent, folder):  # instructor only,
            made.mkdir(mode=0o700, exist_ok=True)  # whatever the umask
        path = folder / f"{notebook}.ipynb"
        atomic_write(path, raw.decode("utf-8", "replace"))
        atomic_write(folder / "timestamp.txt",
                     when.strftime("%Y-%m-%d %H:%M:%S.%f") + " UTC\n")
        os.chmod(path, 0o600)  # learners' work: instructor only


class Book:
    """An open gradebook the :class:`Mirror` writes results into (see :meth:`Mirror.writing`)."""

    def __init__(self, gb):
        self.gb = gb
        self.notebooks = []  # _write_notebook's arguments, written after the commit

    def record(self, row, penalty=0.0):
        """As :meth:`Mirror.record`, inside this book's transaction. :class:`NotReady` is
        raised before anything of ``row`` is written."""
        gb, exercise, learner, result = self.gb, row.exercise, row.learner, row.result
        if any(c.grade_id is None for c in result.checks):
            raise NotReady("the result's checks do not match the exercise's hidden tests")
        when = datetime.datetime.fromtimestamp(row.submitted_at, datetime.UTC)
        notebook = Mirror.notebook_of(gb, exercise, [c.grade_id for c in result.checks])
        gb.update_or_create_student(learner)
        update_or_create_submission(gb, exercise, learner, timestamp=when)
        submitted = gb.find_submission_notebook(notebook, exercise, learner)
        grades = _by_cell_name(gb, Grade, submitted)
        for check in result.checks:
            grade = grades[check.grade_id]
            grade.auto_score = float(check.score)
            grade.needs_manual_grade = grade.manual_score is not None
        submitted.late_submission_penalty = penalty or None
        unattempted = result.status == "not attempted"
        # nbgrader keeps a comment per solution cell: the "No response." of an unattempted one
        for comment in _by_cell_name(gb, Comment, submitted).values():
            comment.auto_comment = "No response." if unattempted else None
        self.notebooks.append((exercise, learner, notebook, row.notebook, when))


def update_or_create_submission(gb, exercise, learner, **fields):
    """nbgrader's ``Gradebook.update_or_create_submission`` without SQLAlchemy's warnings.

    Its ``add_submission`` reads the exercise's cells before it adds the new submission
    to the session; an autoflush there makes SQLAlchemy 2 warn (on stderr, every first
    submission of a learner) that the half-made rows are not in the session. They are
    added whole at its end, so the flush is held until then. Returns the
    :class:`~nbgrader.api.SubmittedAssignment`."""
    with gb.db.no_autoflush:
        return gb.update_or_create_submission(exercise, learner, **fields)


def _by_cell_name(gb, kind, submitted):
    """``{cell name: row}`` of ``submitted``'s :class:`~nbgrader.api.Grade` or
    :class:`~nbgrader.api.Comment` rows (``kind``), in one query (nbgrader's
    ``find_grade`` and ``find_comment`` make several per cell)."""
    rows = gb.db.query(kind, BaseCell.name).join(BaseCell, kind.cell_id == BaseCell.id) \
        .filter(kind.notebook_id == submitted.id).all()
    return {name: row for row, name in rows}
