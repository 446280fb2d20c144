"""Release one exercise (``make release`` runs this for each): nbgrader's
``generate_assignment``, made safe for a course that is running.

    python -m autograder.release EXERCISE     (--db, --course as for the grading service)

1. Before anything is touched, the release is refused (exit status
   :data:`REFUSED`, with what to do instead) when nbgrader could not apply it: the
   exercise has submissions in the gradebook and the release would add or remove a
   graded cell (nbgrader refuses to change an assignment's cells once learners have
   submitted), or the hidden tests and the source notebook's graded cells differ.
   Changing a check's points is always possible: release, then regrade
   (``python -m autograder.service.regrade``).
2. nbgrader writes the new release into a folder of its own
   (``--CourseDirectory.release_directory``), so its ``--force`` removes nothing a
   learner is given; each graded cell's points are the hidden tests'
   (:class:`autograder.nbgrader_release.AddSubmitCells`), so a release never writes
   old points back into the gradebook.
3. Only then are the released files put in place, each by an atomic rename: the
   released notebook is never missing, and a failed release leaves it as it was.
"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from autograder import defaults, exercises
from autograder.defaults import CHECKOUT as REPO

REFUSED = 3  # exit status of a release refused before anything was touched


def source_grade_ids(path):
    """The grade_ids of the graded cells of the source notebook at ``path`` (a set)."""
    cells = json.loads(Path(path).read_text("utf-8"))["cells"]
    return {c["metadata"]["nbgrader"]["grade_id"] for c in cells
            if c.get("metadata", {}).get("nbgrader", {}).get("grade")}


def released_state(url, exercise):
    """``(submissions, {grade cell ids})`` of ``exercise`` in the gradebook at ``url``;
    None when it is not there yet."""
    from nbgrader.api import Gradebook, MissingEntry
    with Gradebook(url) as gb:
        try:
            assignment = gb.find_assignment(exercise)
        except MissingEntry:
            return None
        return (len(assignment.submissions),
                {c.name for nb in assignment.notebooks for c in nb.grade_cells})


def refusal(exercise, source_ids, test_ids, released):
    """Why this release cannot be applied, in words (None when it can). ``source_ids`` and
    ``test_ids`` are the source notebook's graded cells and the hidden tests' names;
    ``released`` what :func:`released_state` says."""
    if source_ids != test_ids:
        return (f"{exercise}: not released, nothing changed: each hidden test needs a graded "
                f"cell of the same grade_id in the source notebook and each graded cell a "
                f"hidden test; only hidden tests: {', '.join(sorted(test_ids - source_ids)) or '-'}; "
                f"only graded cells: {', '.join(sorted(source_ids - test_ids)) or '-'}; "
                f"python -m autograder.new_exercise {exercise} --cells writes the graded cells "
                "from the hidden tests (docs/exercises.md)")
    if released is None or not released[0] or released[1] == source_ids:
        return None
    added, removed = sorted(source_ids - released[1]), sorted(released[1] - source_ids)
    change = "; ".join(filter(None, [added and f"adds graded cell(s) {', '.join(added)}",
                                     removed and f"removes graded cell(s) {', '.join(removed)}"]))
    return (f"{exercise}: not released, nothing changed: {released[0]} learner(s) have "
            f"submitted it, and this release {change}. nbgrader cannot add or remove an "
            "assignment's graded cells once it has submissions. What you can do: change "
            "the points of existing checks (their @graded points in the hidden tests), "
            f"then make release and python -m autograder.service.regrade {exercise}; or "
            "put the new check in a new exercise (docs/exercises.md), and "
            "revert this one's source notebook and hidden tests.")


def put_in_place(new, dest):
    """Move every file of folder ``new`` into ``dest`` by atomic renames, then remove the
    files of ``dest`` that the new release no longer has."""
    dest.mkdir(parents=True, exist_ok=True)
    kept = set()
    for path in sorted(p for p in new.rglob("*") if p.is_file()):
        target = dest / path.relative_to(new)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
        kept.add(target)
    for path in sorted((p for p in dest.rglob("*") if p.is_file()), reverse=True):
        if path not in kept:
            path.unlink()


def release(exercise, course, url=None):
    """Release ``exercise`` of the course at ``course``; 0, :data:`REFUSED` (said on
    stderr), or nbgrader's own failing status."""
    course = Path(course).resolve()
    gradebook = url or f"sqlite:///{course / 'gradebook.db'}"
    source = course / "source" / exercise / f"{exercise}.ipynb"
    tests = {name for name, _, _ in exercises.get(exercise).tests()}
    released = released_state(gradebook, exercise) if url or (course / "gradebook.db").exists() \
        else None
    why = refusal(exercise, source_grade_ids(source), tests, released)
    if why:
        print(why, file=sys.stderr)
        return REFUSED
    if not url:
        from autograder.service.store import owner_only
        owner_only(course / "gradebook.db")  # made by nbgrader otherwise, as the umask says
    with tempfile.TemporaryDirectory(prefix=".release-", dir=course) as staging:
        argv = [*defaults.release_argv(exercise, Path(sys.executable).parent),
                f"--CourseDirectory.root={course}",
                f"--CourseDirectory.release_directory={Path(staging).name}",
                *(["--db", url] if url else [])]
        done = subprocess.run(argv, cwd=REPO / "exercises")
        if done.returncode:
            return done.returncode
        put_in_place(Path(staging) / exercise, course / "release" / exercise)
    return 0


def main(argv=None):
    from autograder.service import config
    p = config.parser("python -m autograder.release", __doc__.split("\n\n")[0],
                      names=("GRADER_DB", "GRADER_COURSE"))
    p.add_argument("exercise")
    args = p.parse_args(argv)
    config.known_name(p, "exercise", args.exercise, exercises.names(),
                      " (registered in autograder/exercises/__init__.py)")
    mirror = config.mirror_of(args)  # the gradebook the grading service writes
    return release(args.exercise, args.course, None if mirror.sqlite else mirror.url)


if __name__ == "__main__":
    sys.exit(main())
