"""The lessons' rule helper (book/lessons/course_rules.py) and the site's collection
of its records (book/_ext/rules_site.py). Fast: no site build, no kernel."""
from __future__ import annotations

import importlib.util
import re

import jax
import pytest

from .sitebuild import LESSONS, REPO


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def rules():
    return _load("course_rules_under_test", REPO / "book" / "lessons" / "course_rules.py")


def test_a_rule_that_holds_is_recorded_once_with_the_jax_version(rules):
    rules.rule("pairing-fifo", "an output takes the first donated input of its shape", True)
    rules.rule("deleted-after", "a taken donation deletes the input", 1 == 1)
    rules.rule("pairing-fifo", "an output takes the first donated input of its shape", True)
    assert rules.records() == [
        {"id": "pairing-fifo", "statement": "an output takes the first donated input of its shape",
         "jax": jax.__version__, "held": True},
        {"id": "deleted-after", "statement": "a taken donation deletes the input", "jax": jax.__version__,
         "held": True}]


def test_a_rule_that_fails_raises_with_its_statement_and_is_not_recorded(rules):
    with pytest.raises(AssertionError, match="no-warning: it prints nothing"):
        rules.rule("no-warning", "it prints nothing", jax.numpy.array(False))
    assert rules.records() == []


def test_the_drift_report_records_a_broken_rule_and_goes_on(rules, monkeypatch):
    monkeypatch.setenv(rules.KEEP_GOING, "1")
    rules.rule("no-warning", "it prints nothing", False)
    rules.rule("still-asserted", "later rules are still checked", True)
    assert [(r["id"], r["held"]) for r in rules.records()] == [("no-warning", False), ("still-asserted", True)]


def test_ids_are_words_and_one_id_has_one_statement(rules):
    with pytest.raises(ValueError, match="lowercase"):
        rules.rule("Pairing FIFO", "x", True)
    rules.rule("a-rule", "first wording", True)
    with pytest.raises(ValueError, match="first wording"):
        rules.rule("a-rule", "second wording", True)


def test_the_list_is_rendered_from_the_records(rules):
    rows = [{"id": "a", "statement": "one", "jax": "0.10.2"}, {"id": "b", "statement": "two", "jax": "0.10.2"}]
    assert rules.render(rows) == "- `a`: one\n- `b`: two\n\nEach held on JAX 0.10.2 when this page was built.\n"
    with pytest.raises(ValueError):
        rules.render([])


def test_the_site_collects_each_page_s_records_or_fails():
    site = _load("rules_site_under_test", REPO / "book" / "_ext" / "rules_site.py")
    glue = {"rules_records": {"data": {"text/plain": '[{"id": "a", "statement": "one", "jax": "0.10.2"}]'}}}
    assert site.page_records(glue, "book/lessons/x") == [
        {"id": "a", "statement": "one", "jax": "0.10.2", "page": "book/lessons/x"}]
    with pytest.raises(Exception, match="no rule records"):
        site.page_records({}, "book/lessons/x")


CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.M | re.S)


@pytest.mark.parametrize("lesson", [f"lessons/{name}" for name in LESSONS] + ["intro"])
def test_a_lesson_asserts_only_through_rule_and_shows_its_list(lesson):
    source = (REPO / "book" / f"{lesson}.md").read_text(encoding="utf-8")
    for cell in CODE_CELL.findall(source):
        bare = [line for line in cell.splitlines() if re.match(r"\s*assert\b", line)]
        assert not bare, f"{lesson}: state these through rule(): {bare}"
    assert "```{glue:md} rules_asserted" in source
    assert "publish()" in source


def test_a_rule_named_in_prose_must_be_asserted_and_have_held():
    site = _load("rules_site_under_test", REPO / "book" / "_ext" / "rules_site.py")
    known = {"a": {"id": "a", "statement": "one", "jax": "0.12.0", "held": True, "page": "p"},
             "b": {"id": "b", "statement": "two", "jax": "0.12.0", "held": False, "page": "p"}}
    assert site.rule_named(known, "a", "book/lessons/x")["statement"] == "one"
    with pytest.raises(Exception, match="names no rule"):
        site.rule_named(known, "missing", "book/lessons/x")
    with pytest.raises(Exception, match="did not hold"):
        site.rule_named(known, "b", "book/lessons/x")
