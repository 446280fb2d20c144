"""The documentation's front door stays one: README.md under 200 lines, and every
relative link in it, in docs/ and in the other manuals resolves (the file, and the
heading a ``#fragment`` names), so moving a section cannot strand a reader."""
from __future__ import annotations

import re

import pytest

from tests.course import REPO

README_MAX_LINES = 200
MANUALS = ["README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md")),
           "autograder/SERVICE.md", "deploy/README.md", "benchmarks/README.md"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def anchor(heading):
    """GitHub's id for a Markdown heading's text: lower case, punctuation other than
    ``-`` and ``_`` dropped, each space a ``-`` ("The course's grader" ->
    ``the-courses-grader``)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text):
    """The ids of ``text``'s ATX headings, outside code fences."""
    return {anchor(m) for m in re.findall(r"^#{1,6} (.+)$", FENCE.sub("", text), re.M)}


def broken_links(doc):
    """``[(link, why)]`` for each relative link of ``doc`` (a path from the repository's
    root) that names no file, or a heading its target does not have."""
    path = REPO / doc
    text = path.read_text(encoding="utf-8")
    broken = []
    for link in LINK.findall(FENCE.sub("", text)):
        if re.match(r"[a-z][a-z0-9+.-]*:", link):  # https:, mailto: ...
            continue
        target, _, fragment = link.partition("#")
        file = (path.parent / target).resolve() if target else path
        if not file.exists():
            broken.append((link, "no such file"))
        elif fragment and file.suffix == ".md" and fragment not in anchors(file.read_text()):
            broken.append((link, f"no heading #{fragment} in {file.relative_to(REPO)}"))
    return broken


def test_the_checks_see_broken_links(tmp_path, monkeypatch):
    """What the link test reads: a missing file, a missing heading, links in code skipped."""
    assert anchor("Grading with the course's grader") == "grading-with-the-courses-grader"
    assert anchor("`make serve`: the course on one machine") == "make-serve-the-course-on-one-machine"
    (tmp_path / "a.md").write_text("# A\n\n## Sign-in\n\n[ok](b.md#b) [self](#sign-in) "
                                   "[web](https://example.org/x) [gone](c.md) [bad](b.md#nope)\n"
                                   "```\n[in code](nowhere.md)\n```\n")
    (tmp_path / "b.md").write_text("# B\n")
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    assert broken_links("a.md") == [("c.md", "no such file"),
                                    ("b.md#nope", "no heading #nope in b.md")]


@pytest.mark.parametrize("doc", MANUALS)
def test_every_relative_link_resolves(doc):
    assert not broken_links(doc), f"{doc}: {broken_links(doc)}"


def test_the_readme_is_a_front_door():
    lines = (REPO / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines < README_MAX_LINES, (
        f"README.md has {lines} lines; keep it under {README_MAX_LINES}: move detail to docs/")


# Where a reader looks for the course's exercises (the exercise index's table is held to
# the registry by tests/grading/test_exercise_folders.py); elsewhere the docs name one
# exercise as an example, or a few for what they did.
PROSE = ["README.md", "book/intro.md"]


def partial_lists(text, names):
    """The paragraphs of ``text`` that name more than one of ``names`` but not all: a
    list of the exercises typed by hand that a new exercise has left behind."""
    found = []
    for paragraph in re.split(r"\n\s*\n", FENCE.sub("", text)):
        named = {n for n in names if re.search(rf"\b{n}\b", paragraph)}
        if 1 < len(named) < len(names):
            found.append(sorted(named))
    return found


@pytest.mark.parametrize("doc", PROSE)
def test_prose_that_lists_exercises_lists_the_registered_ones(doc):
    """A paragraph naming several exercises names every one autograder.exercises
    registers (better: it names none and points to the exercise index, which the
    folder test holds to the registry)."""
    from autograder import exercises

    text = (REPO / doc).read_text(encoding="utf-8")
    assert partial_lists(text, exercises.names()) == [], f"{doc} lists some exercises, not all"


def test_a_list_missing_a_registered_exercise_is_found():
    names = ("one", "two", "three")
    assert partial_lists("Try `one` and `two`.\n\nThen `three`.", names) == [["one", "two"]]
    assert partial_lists("Try `one`, `two` and `three`.", names) == []
