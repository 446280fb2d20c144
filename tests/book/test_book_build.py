"""Tests of the build itself: broken claims fail it, and a rebuild reuses the cache."""

from __future__ import annotations

import shutil
import textwrap

import pytest
import yaml

from autograder import exercises
from tests.course import copy_tracked

from .sitebuild import LESSONS, REPO, build_book, build_lock

NOTEBOOK_HEADER = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""


def tiny_book(tmp_path, body: str):
    """A one-page book with the course's own _config.yml and `body` as its page."""
    shutil.copy(REPO / "_config.yml", tmp_path / "_config.yml")
    config = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    for static in ((config.get("sphinx") or {}).get("config") or {}).get("html_static_path", []):
        (tmp_path / static).mkdir(parents=True, exist_ok=True)  # the config expects it
    for ext_dir in ((config.get("sphinx") or {}).get("local_extensions") or {}).values():
        if not (tmp_path / ext_dir).exists():  # the course's own Sphinx extensions
            (tmp_path / ext_dir).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / ext_dir).symlink_to(REPO / ext_dir)
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: page\n", encoding="utf-8")
    (tmp_path / "page.md").write_text(NOTEBOOK_HEADER + textwrap.dedent(body), encoding="utf-8")
    return tmp_path


def book_copy(root):
    """The book's sources as a clone has them, in ``root``, with what make made beside
    them copied: the released exercises the exercise pages offer, and the built site's
    execution cache (``_build/.jupyter_cache``). Returns ``root``."""
    copy_tracked(root, "_config.yml", "_toc.yml", "book")
    # the registered exercises' releases only: the hub's tests add one for a while
    made = [f"exercises/release/{name}" for name in exercises.names()]
    for folder in (*made, "_build/.jupyter_cache"):
        shutil.copytree(REPO / folder, root / folder)
    return root


CLAIM = """
# A claim

```{code-cell} ipython3
from myst_nb import glue
alias_bytes = 84
glue("alias_bytes", alias_bytes)
```

```{code-cell} ipython3
:tags: [remove-cell]
assert alias_bytes == EXPECTED
```

The alias covers {glue:text}`alias_bytes` bytes.
"""

WARNING_AND_RAISE = """
# Live warning and live error

```{code-cell} ipython3
import warnings
warnings.warn("shown on the page, not a build warning")
```

```{code-cell} ipython3
:tags: [raises-exception]
raise RuntimeError("expected")
```
"""


# ------------------------------------------------ pages for the lesson 5 case (sharded_state)
EARLIER_PAGE = """
# Uses JAX first

```{code-cell} ipython3
import jax.numpy as jnp
print(float(jnp.ones(3).sum()))
```
"""

EIGHT_DEVICES_PAGE = """
# Asks for eight devices

```{code-cell} ipython3
import jax
jax.config.update("jax_num_cpu_devices", 8)
print("devices:", len(jax.devices()))
```
"""


@pytest.fixture(scope="module")
def passing_book(tmp_path_factory):
    """``(book, build)``: one build of a book whose every page must build (the true claim,
    the live warning and tagged error, eight devices after a page that used JAX): one
    jupyter-book run instead of one per case. Each failing case needs a build of its own."""
    book = tiny_book(tmp_path_factory.mktemp("passing"), EARLIER_PAGE)
    pages = {"claim": CLAIM.replace("EXPECTED", "84"), "warning": WARNING_AND_RAISE,
             "sharded": EIGHT_DEVICES_PAGE}
    for name, body in pages.items():
        (book / f"{name}.md").write_text(NOTEBOOK_HEADER + textwrap.dedent(body), encoding="utf-8")
    (book / "_toc.yml").write_text("format: jb-book\nroot: page\nchapters:\n"
                                   + "".join(f"  - file: {name}\n" for name in pages), encoding="utf-8")
    return book, build_book(book)


def test_a_true_hidden_claim_builds(passing_book):
    book, result = passing_book
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    built = (book / "_build/html/claim.html").read_text(encoding="utf-8")
    assert 'The alias covers <span class="pasted-text">84</span> bytes.' in built


def test_a_false_hidden_claim_fails_the_build(tmp_path):
    result = build_book(tiny_book(tmp_path, CLAIM.replace("EXPECTED", "80")))
    log = result.stdout + result.stderr
    assert result.returncode != 0, "a false assert in a hidden cell did not fail the build"
    assert "AssertionError" in log


def test_a_live_warning_and_a_tagged_error_do_not_fail_the_build(passing_book):
    book, result = passing_book
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    built = (book / "_build/html/warning.html").read_text(encoding="utf-8")
    assert "shown on the page, not a build warning" in built and "expected" in built


def test_an_untagged_error_fails_the_build(tmp_path):
    body = WARNING_AND_RAISE.replace(":tags: [raises-exception]\n", "")
    result = build_book(tiny_book(tmp_path, body))
    assert result.returncode != 0, "an untagged exception did not fail the build"


def test_a_broken_cross_reference_fails_the_build(tmp_path):
    result = build_book(tiny_book(tmp_path, "# Page\n\nSee {doc}`no_such_page`.\n"))
    assert result.returncode != 0, "a broken {doc} reference did not fail the build"


def test_a_rule_named_in_prose_that_no_page_asserted_fails_the_build(tmp_path):
    # book/_ext/rules_site.py resolves {rule}`id` against every page's records
    result = build_book(tiny_book(tmp_path, "# Page\n\nThe input is deleted {rule}`no-such-rule`.\n"))
    assert result.returncode != 0, "a {rule} naming no asserted rule did not fail the build"
    assert "names no rule a page asserted" in result.stdout + result.stderr


@pytest.mark.usefixtures("built_site")
def test_a_rebuild_with_nothing_changed_executes_no_notebook(built_site, tmp_path):
    # `--all` makes Sphinx re-read every page, so each lesson goes through
    # myst-nb again; with unchanged code the jupyter-cache must answer for it.
    # It rewrites every page, so it runs in a copy of the book with the site's cache:
    # the served site's pages are read meanwhile (the hub's tests, on another worker).
    result = build_book(book_copy(tmp_path), "--all")
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-4000:]
    assert "Executing notebook" not in log, "a rebuild re-executed a lesson"
    for lesson in LESSONS:
        assert f"book/lessons/{lesson}.md: Using cached notebook" in log, lesson


# What an unchanged build still writes into the site: Sphinx's stylesheet for highlighted
# code (at every build), and the rules artefact and the lessons' rule helper (at every build,
# book/_ext/rules_site.py; the artefact by a rename).
REWRITTEN = {"_static/pygments.css", "_static/rules.json", "_notebooks/lessons/course_rules.py"}


def test_an_unchanged_build_leaves_the_served_site_alone(built_site):
    """make hub and make serve build the site while other servers serve it (and, under
    make test, other workers' pages load it): with nothing changed, no page, script,
    notebook or folder of it is written again."""
    def files():
        return {p.relative_to(built_site).as_posix(): (p.stat().st_ino, p.stat().st_mtime_ns)
                for p in built_site.rglob("*") if p.is_file()}

    with build_lock():  # no other build (make hub's, on the hub's worker) meanwhile
        before = files()
        result = build_book(REPO, locked=True)
        after = files()
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert set(after) == set(before)
    assert {rel for rel in after if after[rel] != before[rel]} <= REWRITTEN


def test_a_later_page_gets_a_fresh_kernel_for_jax_num_cpu_devices(passing_book):
    # The sharded_state lesson sets jax_num_cpu_devices in its first cell, which
    # raises in a kernel where JAX already ran: the build must give each page its own.
    book, result = passing_book  # its first page uses JAX; "sharded" comes later
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    built = (book / "_build/html/sharded.html").read_text(encoding="utf-8")
    assert "devices: 8" in built
