"""The command line, the grading service and Gradescope's entry give, byte for byte,
the results recorded in ``tests/grading/golden/`` on every sample and hostile
submission (:mod:`tests.grading.golden` says what is captured and normalised).

After an intended change of results, ``python -m tests.grading.golden`` records
them again; review the diff of ``tests/grading/golden/`` as the change itself.
"""
import difflib

import pytest

from tests.grading import golden

FILES = sorted(p.name for p in golden.GOLDEN.glob("*.json"))


@pytest.fixture(scope="module")
def captured(released_course, tmp_path_factory):
    """``{file name: text}`` of a capture with the code as it is now."""
    return golden.capture(released_course, tmp_path_factory.mktemp("golden"))


def test_every_door_and_group_is_recorded():
    assert FILES == sorted(f"{door}-{group}.json" for door in golden.DOORS
                           for group in ("samples", "hostile"))


@pytest.mark.parametrize("name", FILES)
def test_results_are_unchanged(captured, name):
    want = (golden.GOLDEN / name).read_text()
    got = captured[name]
    diff = "".join(list(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                             f"golden/{name}", "now", n=2))[:100])
    assert got == want, f"results changed:\n{diff}"
