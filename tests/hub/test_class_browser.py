"""Two learners use the course through the hub in Chromium, as a class would:
sign in, run a lesson's code in the page (on their own server), solve the
exercise in their own JupyterLab, submit from the notebook and from the
page, and read their own result; their servers cannot read each other's
homes; after a restart of ``make hub`` both grades are still there."""
from __future__ import annotations

import csv
import os
import re
import subprocess
from importlib import metadata
from pathlib import Path

import psutil
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from tests.browser.pages import fail_on_other_dialogs, overwrite_on_conflict, screenshot
from tests.course import REPO
from tests.grading.helpers import SAMPLES
from tests.hub.running import class_csv_when

WAIT_MS = 300_000  # give-up time for servers and kernels, not a timing assertion
ANSWER = (SAMPLES / "reference.py").read_text()
LESSON = "book/lessons/donate_argnums.html"
EXERCISE = "update_with_donate"


def browser_sign_in(browser, hub, account):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    page = context.new_page()
    page.goto(hub.url("/hub/login?next=/services/course/" + LESSON))
    page.fill("#username_input", account.name)
    page.fill("#password_input", account.password)
    page.click("#login_submit")
    page.wait_for_url(re.compile(re.escape(LESSON)), timeout=WAIT_MS)
    return page


def run_lesson_in_page(page, name):
    bar = page.locator("nav.course-run")
    assert "token" not in page.url
    assert (bar.locator("a.course-run-lab").get_attribute("href")
            == "/hub/user-redirect/lab/tree/lessons/donate_argnums.ipynb")
    bar.locator("button.course-run-here").click()
    page.wait_for_function(
        "() => /^(Ready|Could not)/.test(document.querySelector('.course-run-status').textContent)",
        timeout=WAIT_MS)
    status = bar.locator(".course-run-status").inner_text()
    assert status.startswith("Ready"), status
    cells = page.locator(".thebe-cell")
    code = "import getpass\nprint('running as', getpass.getuser())"
    cells.first.locator(".CodeMirror").evaluate("(el, code) => el.CodeMirror.setValue(code)", code)
    cells.first.locator("button.thebe-run-button").click()
    cell = page.locator("article div.cell").filter(has=page.locator(".thebe-cell")).first
    out = cell.locator(".cell_output .jp-OutputArea-output").filter(has_text="running as")
    out.first.wait_for(timeout=WAIT_MS)
    assert f"running as {name}" in out.first.inner_text()


def solve_and_submit_in_jupyterlab(page, name):
    page.goto(page.url.split("/services/")[0] + f"/services/course/book/exercises/{EXERCISE}.html")
    link = page.locator("nav.course-run a.course-run-lab")
    assert link.get_attribute("href") == f"/hub/user-redirect/lab/tree/{EXERCISE}/{EXERCISE}.ipynb"
    with page.context.expect_page() as popup:
        link.click()
    lab = popup.value
    overwrite_on_conflict(lab)
    fail_on_other_dialogs(lab, f"hub-jupyterlab-dialog-{name}")
    lab.wait_for_url(re.compile(rf"/user/{name}/lab/tree/{EXERCISE}/{EXERCISE}\.ipynb"), timeout=WAIT_MS)
    panel = lab.locator(".jp-NotebookPanel:visible")
    panel.wait_for(timeout=WAIT_MS)
    lab.wait_for_function("() => document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) "
                          ".jp-Notebook-ExecutionIndicator[data-status=\"idle\"]') !== null",
                          timeout=WAIT_MS)
    answer = panel.locator(".jp-CodeCell").first
    answer.locator(".cm-content").click()
    answer.locator(".cm-editor.cm-focused").wait_for(timeout=WAIT_MS)
    lab.keyboard.press("Control+a")
    lab.keyboard.insert_text(ANSWER)
    answer.locator(".cm-content", has_text="donate_argnums").first.wait_for(timeout=WAIT_MS)
    lab.keyboard.press("Control+s")
    lab.locator(".jp-mod-dirty").first.wait_for(state="detached", timeout=WAIT_MS)
    # Run > Run All Cells: the answer, the self-check, and last the submit cell,
    # which sends the saved notebook with the server's hub token
    lab.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click(timeout=WAIT_MS)
    lab.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click(timeout=WAIT_MS)
    scored = panel.locator(".jp-OutputArea-output").filter(has_text="Score:")
    try:
        scored.first.wait_for(state="attached", timeout=WAIT_MS)
    except PlaywrightTimeoutError:  # say what the notebook showed instead, so a repeat names its cause
        screenshot(lab, f"hub-jupyterlab-no-score-{name}")
        shown = panel.locator(".jp-OutputArea-output").all_text_contents()
        kernel = lab.locator(".jp-Notebook-ExecutionIndicator").first.get_attribute("data-status")
        pytest.fail(f"{name}: no score after {WAIT_MS // 1000} s; the notebook's outputs: "
                    f"{shown!r}; its kernel: {kernel}; unsaved: {lab.locator('.jp-mod-dirty').count() > 0}")
    scored.first.scroll_into_view_if_needed(timeout=WAIT_MS)
    text = " ".join(panel.locator(".jp-OutputArea-output").all_text_contents())
    screenshot(lab, f"hub-jupyterlab-submit-{name}")
    assert f"as {name}" in text and "Score: 10 / 10" in text, text
    lab.close()


def submit_from_page(page, name, notebook):
    form = page.locator("[data-grader-exercise]")
    assert form.locator("[name=learner]").count() == 0  # the hub says who you are
    form.locator("[name=notebook]").set_input_files(str(notebook))
    form.locator("button[type=submit]").click()
    page.wait_for_function(
        "() => /^(Graded|Not graded)/.test(document.querySelector('.grader-status').textContent)",
        timeout=WAIT_MS)
    status = form.locator(".grader-status").inner_text()
    assert status.startswith(f"Graded as {name}."), status
    assert "Score: 10 / 10" in form.locator("#grader-feedback .grader-score").inner_text()
    screenshot(page, f"hub-exercise-page-{name}")
    return status.rsplit(" ", 1)[-1]


def server_pid(name):
    for proc in psutil.process_iter(["username", "cmdline"]):
        if proc.info["username"] == name and "jupyterhub.singleuser" in " ".join(proc.info["cmdline"] or []):
            return proc.pid
    pytest.fail(f"no server of {name} is running")


def as_learner_in_server(name, command):
    """Run ``command`` as ``name`` inside ``name``'s server's mount namespace."""
    uid = str(int(subprocess.check_output(["id", "-u", name])))
    gid = str(int(subprocess.check_output(["id", "-g", name])))
    return subprocess.run(["nsenter", "-t", str(server_pid(name)), "-m", "-S", uid, "-G", gid,
                           "sh", "-c", command], capture_output=True, text=True)


def test_two_learners_work_and_submit_through_the_hub(hub, accounts, browser, sign_in):
    made, _ = accounts
    ids = {}
    for role in ("ada", "bob"):
        account = made[role]
        page = browser_sign_in(browser, hub, account)
        if role == "ada":  # the intro speaks of the hub, not of cloning and make serve
            page.goto(hub.url("/services/course/book/intro.html"))
            assert page.locator(".course-hub-only").first.is_visible()
            assert not page.locator(".course-local-only").first.is_visible()
            page.goto(hub.url("/services/course/" + LESSON))
        run_lesson_in_page(page, account.name)
        solve_and_submit_in_jupyterlab(page, account.name)
        saved = Path(os.path.expanduser(f"~{account.name}")) / EXERCISE / f"{EXERCISE}.ipynb"
        ids[role] = submit_from_page(page, account.name, saved)
        page.context.close()

    # each learner's server: its own user, its own home, nobody else's
    ada, bob = made["ada"].name, made["bob"].name
    peek = as_learner_in_server(ada, f"ls ~{bob}/{EXERCISE}")
    # her server sees no other home at all (/home is covered), or, where one shows, it is closed
    assert peek.returncode != 0 and ("No such file" in peek.stderr or "Permission denied" in peek.stderr), peek
    own = as_learner_in_server(ada, f"ls ~{ada}/{EXERCISE}")
    assert own.returncode == 0 and f"{EXERCISE}.ipynb" in own.stdout, own
    repo = as_learner_in_server(ada, "ls -a " + str(REPO))
    assert "autograder" not in repo.stdout and "tests" not in repo.stdout, repo.stdout
    # the server runs the course's venv (Python 3.12 or newer, wherever it lives: pyenv's
    # under root's home is bound back into the learner's namespace, nothing else of it)
    python = psutil.Process(server_pid(ada)).cmdline()[0]  # the venv's, as the spawner runs it
    version = as_learner_in_server(
        ada, f"{python} -c 'import sys, jax; print(sys.version_info >= (3, 12), jax.__version__)'")
    assert version.stdout.split() == ["True", metadata.version("jax")], version
    home = as_learner_in_server(ada, "ls -a ~root")
    assert set(home.stdout.split()) <= {".", "..", ".pyenv"}, home.stdout

    # both learners' notebook and page submissions, listed for each of them only
    for role in ("ada", "bob"):
        mine = sign_in(role).grader("GET", "api/submissions").json()["submissions"]
        assert ids[role] in [s["id"] for s in mine]
        assert all(s["learner"] == made[role].name for s in mine)
        assert sum(1 for s in mine if s["status"] == "done" and s["result"]["score"] == 10) >= 2

    # the code each ran on the lesson's page is in the class page's progress, as theirs
    progress = sign_in("ins").grader("GET", "class").text.split('id="progress"', 1)[1]
    for role in ("ada", "bob"):
        row = re.search(rf'<tr><th scope="row"><a [^>]*>{made[role].name}</a></th>.*?</tr>', progress)
        assert row and "donate_argnums (" in row.group(0), progress[:2000]

    # restart: learners, notebooks and grades are kept
    hub.stop()
    hub.start()
    for role in ("ada", "bob"):
        learner = sign_in(role)
        sub = learner.grader("GET", f"api/submissions/{ids[role]}").json()
        assert sub["learner"] == made[role].name and sub["result"]["score"] == 10
    page = browser_sign_in(browser, hub, made["ada"])
    saved = Path(os.path.expanduser(f"~{ada}")) / EXERCISE / f"{EXERCISE}.ipynb"
    assert "donate_argnums" in saved.read_text()  # the solved notebook, not a fresh copy
    page.context.close()

    # the instructor downloads the class CSV in the browser (sent through the
    # grading service's sign-in on the way): both learners, full marks. The gradebook
    # is mirrored by a background thread (after the restart too), and other tests may
    # have graded these learners before: first wait for the mirror to hold these.
    class_csv_when(sign_in("ins"), EXERCISE, {ada: 10.0, bob: 10.0}, WAIT_MS / 1000)
    page = browser_sign_in(browser, hub, made["ins"])
    with page.expect_download(timeout=WAIT_MS) as download:
        page.evaluate("url => { window.location.href = url; }", hub.url("/services/grader/api/class.csv"))
    rows = list(csv.DictReader(open(download.value.path(), encoding="utf-8")))
    scores = {r["student_id"]: float(r["score"]) for r in rows if r["assignment"] == EXERCISE}
    assert scores.get(ada) == 10.0 and scores.get(bob) == 10.0, rows
    page.context.close()
