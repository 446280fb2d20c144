"""Which releases nbgrader could not apply to a running course (autograder/release.py's
refusal, decided before anything is touched), and the atomic put in place (in-process)."""
from autograder.release import put_in_place, refusal

IDS = {"test_values", "test_dtype"}


def test_a_release_before_any_submission_or_with_the_same_cells_goes_ahead():
    assert refusal("ex", IDS, IDS, None) is None  # never released
    assert refusal("ex", IDS | {"test_new"}, IDS | {"test_new"}, (0, IDS)) is None  # no submission
    assert refusal("ex", IDS, IDS, (12, IDS)) is None  # points may change: same cells


def test_adding_or_removing_a_graded_cell_after_submissions_is_refused_with_the_way_out():
    said = refusal("ex", IDS | {"test_new"}, IDS | {"test_new"}, (3, IDS))
    assert "3 learner(s) have submitted" in said and "adds graded cell(s) test_new" in said
    assert "regrade ex" in said and "new exercise" in said
    assert "removes graded cell(s) test_dtype" in refusal("ex", {"test_values"}, {"test_values"},
                                                         (1, IDS))


def test_hidden_tests_without_a_graded_cell_are_refused():
    said = refusal("ex", IDS, IDS | {"test_new"}, None)
    assert "only hidden tests: test_new" in said


def test_put_in_place_replaces_files_and_drops_the_ones_gone(tmp_path):
    new, dest = tmp_path / "new", tmp_path / "dest"
    (new / "data").mkdir(parents=True)
    (new / "ex.ipynb").write_text("new")
    (new / "data" / "a.csv").write_text("a")
    dest.mkdir()
    (dest / "ex.ipynb").write_text("old")
    (dest / "gone.txt").write_text("x")
    put_in_place(new, dest)
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()) == \
        ["data/a.csv", "ex.ipynb"]
    assert (dest / "ex.ipynb").read_text() == "new"
