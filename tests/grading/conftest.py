"""What several grading test modules read: the command line's run over each corpus
(every exercise's samples, the hostile corpus), graded once per session through the
real sandbox. The modules that read it are one ``make test`` worker group
(tests/tiers.py: SHARED), so each worker that needs a run grades it once."""
import pytest

from tests.grading import golden


@pytest.fixture(scope="session")
def cli_runs(released_course, tmp_path_factory):
    """``cli_runs(group) -> run``: :func:`tests.grading.golden.cli_run` over ``group``
    ("samples" or "hostile") of :func:`tests.grading.golden.corpus`, under
    :func:`tests.grading.golden.fixed_digest` (as recorded in tests/grading/golden/),
    made on first use. Read-only: ``run["out"]`` is the results tree."""
    done = {}

    def run(group):
        if group not in done:
            subs = golden.corpus(released_course)[group]
            with golden.fixed_digest():
                done[group] = golden.cli_run(group, subs, tmp_path_factory.mktemp(f"cli-{group}"))
        return done[group]

    return run
