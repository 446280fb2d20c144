"""A class of 200 under ``make hub``: each learner signs in and submits through the
hub (the grading service grades every notebook), then an instructor finds the
class page from the site's navigation in Chromium. Its plots and its groups of
failing observations match the store (read back through ``api/class``), its
tables sort and filter, axe finds no serious violation; a learner gets no link
and a 403."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from autograder.service import class_stats
from tests.browser.pages import axe_violations, screenshot
from tests.course import REPO
from tests.grading.helpers import SAMPLES, released_notebook, with_answer
from tests.hub.accounts import more_learners
from tests.hub.running import Signed, json_of
from tests.hub.test_class_browser import LESSON, WAIT_MS, browser_sign_in

EXERCISE = "update_with_donate"
CLASS_SIZE = int(os.environ.get("CLASS_PAGE_LEARNERS", "200"))
# a mix of right and wrong answers, so several checks fail in several ways
ANSWERS = ("reference", "no_donation", "wrong_arithmetic", "delta_donated", "wrong_dtype",
           "fails_empty", "reads_donated", "jit_inside", "no_jit", "both_donated")


@pytest.fixture(scope="module")
def graded_class(hub, accounts):
    """``CLASS_SIZE`` learners, each with one graded submission through the hub."""
    course = Path(hub.env["GRADER_COURSE"])
    due = (datetime.now(timezone.utc) + timedelta(days=2)).replace(second=0, microsecond=0)
    set_due(hub, f"{due:%Y-%m-%d %H:%M}")
    notebooks = [with_answer(released_notebook(course), (SAMPLES / f"{a}.py").read_text())
                 for a in ANSWERS]

    def sign_in_and_submit(at, account):
        learner = Signed(hub, account)
        return learner, learner.submit(notebooks[at % len(notebooks)])

    # Each learner submits as soon as she has signed in: the service grades the first
    # notebooks while the hub still signs the others in (a sign-in is eight requests,
    # which JupyterHub's one process answers in turn; the grading slots waited meanwhile).
    with more_learners(accounts, CLASS_SIZE) as made, ThreadPoolExecutor(8) as pool:
        learners, ids = zip(*pool.map(sign_in_and_submit, range(len(made)), made))
        learners = list(learners)
        list(pool.map(lambda p: p[0].wait_done(p[1]), zip(learners, ids)))
        try:
            yield learners, due
        finally:
            set_due(hub, "none")  # as the other hub tests expect it


def set_due(hub, when):
    """docs/instructors.md's deadlines command, on the hub's course."""
    subprocess.run([sys.executable, "-m", "autograder.service.deadlines", "--db", hub.env["GRADER_DB"],
                    "--course", hub.env["GRADER_COURSE"], "due", EXERCISE, when],
                   cwd=REPO, check=True, capture_output=True)


def expected_groups(view):
    """``{check: {(observation, count, learners)}}`` from ``api/class``'s feedback:
    each failed check's observation, grouped as the page should group it."""
    groups = defaultdict(lambda: defaultdict(list))
    for name, who in sorted(view["learners"].items()):
        for test in who["feedback"]:
            if test["status"] != "passed":
                obs = class_stats.observation(test["output"])  # its own tests: test_class_page
                groups[test["name"]][obs].append(name)
    return {check: {(obs, len(who), tuple(who)) for obs, who in by.items()}
            for check, by in groups.items()}


def page_groups(section):
    """The same, read from the class page's DOM (each masked number as ``#``, as
    :func:`class_stats.observation` writes it)."""
    return section.evaluate("""sec => {
        const out = {};
        sec.querySelectorAll('.stuck h4.check').forEach(h => {
            const name = h.textContent.replace(/: \\d+ failing$/, '');
            out[name] = [...h.nextElementSibling.querySelectorAll('li.group')].map(li => [
                // a masked number is drawn as <var class="masked">n</var>: read it back as '#'
                [...li.querySelector('code.observation').childNodes].map(n =>
                    n.nodeType === 1 && n.matches('var.masked') ? '#' : n.textContent).join(''),
                parseInt(li.querySelector('.count').textContent),
                [...li.querySelectorAll('.who a')].map(a => new URL(a.href).searchParams.get('learner'))]);
        });
        return out;
    }""")


def test_the_instructor_sees_where_a_class_of_200_is_stuck(hub, accounts, browser, sign_in,
                                                           graded_class):
    learners, due = graded_class
    made, _ = accounts
    ada = sign_in("ada")
    # the runner's record of a lesson run is the signed-in learner's, whatever the body says
    assert ada.grader("POST", "api/runs", json={"lesson": "lifetimes", "learner": learners[0].name}).ok
    assert ada.grader("POST", "api/runs", json={"lesson": "../etc"}).status_code == 400
    ins = sign_in("ins")
    answer = json_of(ins.grader("GET", "api/class"))
    view, roster = answer["exercises"][EXERCISE], answer["roster"]
    mine = {a.name for a in learners}
    assert mine <= set(view["learners"]) and all(view["learners"][n]["latest"] is not None for n in mine)

    page = browser_sign_in(browser, hub, made["ins"])
    link = page.locator("p.course-instructors a", has_text="The class (instructors)")
    link.wait_for(timeout=WAIT_MS)
    started = time.monotonic()
    link.click()
    page.wait_for_url(re.compile(r"/services/grader/class$"), timeout=WAIT_MS)
    page.wait_for_function("() => document.querySelector('.learners .shown').textContent !== ''",
                           timeout=WAIT_MS)
    print(f"class page of {len(view['learners'])} learners shown in {time.monotonic() - started:.2f} s")
    section = page.locator("section.exercise", has=page.locator(f"h2:text-is('{EXERCISE}')"))

    rates = section.locator("figure.plot svg").nth(0).get_attribute("aria-label")
    for check in view["checks"]:
        assert f"{check['name']}: {check['passed']} of {check['learners']}" in rates, rates
    found = {check: {(o, c, tuple(w)) for o, c, w in groups}
             for check, groups in page_groups(section).items()}
    assert found == expected_groups(view)
    assert any(c > 1 for groups in found.values() for _, c, _ in groups)  # a shared wrong answer
    scores = Counter(int(w["recorded"]) for w in view["learners"].values() if w["recorded"] is not None)
    histogram = section.locator("figure.plot svg").nth(1).get_attribute("aria-label")
    assert histogram == "recorded scores: " + ", ".join(f"{scores[p]} with {p}" for p in sorted(scores))
    timeline = section.locator("figure.plot svg").nth(2).get_attribute("aria-label")
    total = sum(w["submissions"] for w in view["learners"].values())
    assert timeline == f"{total} submissions over time, due {due:%Y-%m-%d %H:%M} UTC"
    assert "lifetimes (1\u00d7)" in page.locator(f"#progress tr:has(a:text-is('{made['ada'].name}'))").inner_text()
    assert page.locator(f"#progress tr:has(a:text-is('{learners[0].name}'))").inner_text().endswith("none")

    rows = section.locator("tbody.list tr")  # every learner, who never submitted too
    assert set(view["learners"]) <= set(roster) and rows.count() == len(roster)
    section.locator("button.sort[data-sort=recorded]").click()
    first = float(next(t for t in rows.locator("td.recorded").all_inner_texts() if t != "-"))
    assert first == min(w["recorded"] for w in view["learners"].values() if w["recorded"] is not None)
    section.locator("input.search").fill(learners[7].name)
    assert rows.count() == 1 and learners[7].name in rows.first.inner_text()
    assert rows.first.locator("a").get_attribute("href") == f"./?learner={learners[7].name}"
    section.locator("input.search").fill("")
    assert rows.count() == len(roster)
    short = [n for n in roster if view["learners"].get(n, {}).get("recorded") is None
             or view["learners"][n]["recorded"] < view["max_score"]]
    section.locator("select.show").select_option("short")
    assert sorted(rows.locator("th.learner a").all_inner_texts()) == sorted(short)
    assert section.locator(".shown").inner_text() == f"{len(short)} of {len(roster)} shown"
    section.locator("select.show").select_option("all")
    screenshot(page, "hub-class-page")
    assert axe_violations(page) == []
    page.emulate_media(color_scheme="dark")  # the site's "auto" mode follows the system
    page.reload()
    page.wait_for_function("() => document.documentElement.dataset.theme === 'dark'", timeout=WAIT_MS)
    screenshot(page, "hub-class-page-dark")
    assert axe_violations(page) == []
    page.context.close()

    # A learner: no link in the site, and the page and its data are refused.
    assert ada.grader("GET", "class").status_code == 403
    learner_page = browser_sign_in(browser, hub, made["ada"])
    learner_page.wait_for_load_state("networkidle")
    assert learner_page.locator("p.course-instructors").count() == 0
    refused = learner_page.goto(hub.url("/services/grader/class"))
    assert refused.status == 403 and "instructors" in learner_page.content()
    learner_page.context.close()
