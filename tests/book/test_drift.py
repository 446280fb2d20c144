"""The drift report against the other JAX the site names: ``book/drift_report.json``
was made (``make drift JAX=<its JAX>``) from the pages, samples, grading code and pins
in this checkout, so what it says is what that JAX gives them. The run itself (a venv of
that JAX from the registries, every lesson executed, every sample graded: minutes) is
``make drift``, or ``scripts/drift.py --jax <its JAX> --check``, which writes nothing."""
import json

from scripts import drift
from tests.course import REPO

LAST = json.loads((REPO / "book" / "drift_report.json").read_text())


def test_the_committed_drift_report_was_made_from_this_checkouts_lessons_samples_and_grader():
    assert LAST.get("inputs") == drift.inputs_digest(), (
        "a page, sample, grading file or pin changed since book/drift_report.json was made: "
        f"run `make drift JAX={LAST['new_jax']}` and commit the report")


def test_the_digest_changes_with_a_lesson_a_sample_and_a_hidden_test(monkeypatch):
    """Each kind of input moves the digest (what the test above relies on)."""
    from pathlib import Path

    before = drift.inputs_digest()
    for path in (drift.PAGES[-1], drift.SAMPLES / "update_with_donate" / "hidden" / "samples" / "reference.py",
                 drift.SAMPLES / "update_with_donate" / "hidden" / "tests.py"):
        real = Path.read_bytes
        monkeypatch.setattr(Path, "read_bytes", lambda p, _real=real, _path=path:
                            _real(p) + (b" " if p == _path else b""))
        assert drift.inputs_digest() != before, path
        monkeypatch.undo()
    assert drift.inputs_digest() == before
