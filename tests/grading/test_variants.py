"""The metamorphic corpus (tests/grading/variants.py) graded as a learner's files are.

Every rewrite of every exercise's reference answer and samples is written as a plain
``.py`` answer under ``<exercise>/`` and the whole corpus is graded by one run of the
command line (docs/instructors.md's ``python -m autograder FILES --out DIR``): the
folder names the exercise. A rewrite that keeps the answer's meaning grades as the
answer it was made from; a point-defeating one loses exactly the checks of the rows it
breaks, and its feedback names what was observed. The run prints how many variants it
graded.
"""
import json

import pytest

from autograder.judge import hidden_tests
from tests.course import grader_cli
from tests.grading import variants

CORPUS = variants.corpus()


@pytest.fixture(scope="module")
def graded(tmp_path_factory, pytestconfig):
    """``{variant name: results.json}`` of one command-line run over the whole corpus."""
    root = tmp_path_factory.mktemp("variants")
    for v in CORPUS:
        path = root / "answers" / v.exercise / f"{v.name}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(v.source)
    proc = grader_cli(root / "answers", "--out", root / "out", timeout=900)
    assert proc.returncode == 0, proc.stderr
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        counts = {e: sum(v.exercise == e for v in CORPUS) for e in dict.fromkeys(v.exercise for v in CORPUS)}
        print(f"\nmetamorphic corpus: graded {len(CORPUS)} variants ("
              + ", ".join(f"{e} {n}" for e, n in counts.items()) + ")")
    return {v.name: json.loads((root / "out" / v.name / "results.json").read_text()) for v in CORPUS}


def test_the_corpus_covers_every_exercise_both_ways():
    from autograder import exercises

    for exercise in exercises.names():
        mine = [v for v in CORPUS if v.exercise == exercise]
        assert any(v.like for v in mine) and any(v.failed for v in mine), exercise
    assert len({v.name for v in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("variant", CORPUS, ids=[v.name for v in CORPUS])
def test_each_variant_grades_as_its_kind_says(graded, variant):
    got = graded[variant.name]
    titles = {name: title for name, title, _ in hidden_tests(variant.exercise)}
    by_title = {t["name"]: t for t in got["tests"]}
    failed = sorted(name for name, title in titles.items() if by_title[title]["status"] == "failed")
    score, want_failed = variants.want(variant)
    assert (got["score"], failed) == (score, want_failed), {
        t: by_title[titles[t]]["output"] for t in failed}
    for test, phrase in variant.says.items():
        assert phrase in by_title[titles[test]]["output"], (test, phrase, by_title[titles[test]]["output"])
    for test, phrase in variant.never_says.items():
        assert phrase not in by_title[titles[test]]["output"], (test, phrase, by_title[titles[test]]["output"])
