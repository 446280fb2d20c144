"""The command line, the grading service and Gradescope's entry give, byte for byte,
the results recorded in ``tests/grading/golden/`` on every sample and hostile
submission (:mod:`tests.grading.golden` says what is captured and normalised).

After an intended change of results, ``python -m tests.grading.golden`` records
them again; review the diff of ``tests/grading/golden/`` as the change itself.
Each file is captured by its own test, so ``make test``'s workers share the
doors (tests/tiers.py: group_of); the command line's runs are the session's
(``cli_runs``), which other modules read too. The samples run in the sandbox once, in
the command line's run: the other doors grade them with its outcomes (:data:`SHARED`).
"""
import contextlib
import difflib

import pytest

from tests.grading import golden

FILES = sorted(p.name for p in golden.GOLDEN.glob("*.json"))
# The groups whose learner code the service and Gradescope do not run again: the sandbox's
# outcome of each sample is the command line's (golden.Outcomes), and everything around it
# (loading, digest and seed, judging, the stored record, the reply, results.json) is each
# door's own. Hostile code looks for the folders each door hides, so it runs through each.
SHARED = {"samples"}


@pytest.fixture(scope="module")
def capture(released_course, tmp_path_factory, cli_runs):
    """``capture(name) -> text``: the file ``name`` (``<door>-<group>.json``) captured
    with the code as it is now."""
    def text(name):
        door, group = name.removesuffix(".json").split("-")
        if door == "cli":
            return golden.cli_text(cli_runs(group))
        subs = golden.corpus(released_course)[group]
        shared = cli_runs(group)["outcomes"].replaying() if group in SHARED else contextlib.nullcontext()
        with golden.fixed_digest(), shared:
            return golden.DOORS[door](group, subs, tmp_path_factory.mktemp(f"golden-{door}"))

    return text


def test_every_door_and_group_is_recorded():
    assert FILES == sorted(f"{door}-{group}.json" for door in golden.DOORS
                           for group in ("samples", "hostile"))


@pytest.mark.parametrize("name", FILES)
def test_results_are_unchanged(capture, name):
    want = (golden.GOLDEN / name).read_text()
    got = capture(name)
    diff = "".join(list(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                             f"golden/{name}", "now", n=2))[:100])
    assert got == want, f"results changed:\n{diff}"
