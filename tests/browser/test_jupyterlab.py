"""The exercise page opens the released notebook in the learner JupyterLab, where
the self-check cell runs, the submit cell grades what the learner ran (without a
save first), and nbgrader's Validate button checks the notebook; Run All on a wrong
answer goes past the failing self-check to the submit cell; nbgrader's menu (it needs
an exchange the course does not have) is not offered."""

from __future__ import annotations

import re

import pytest

from tests.browser.pages import Watched, overwrite_on_conflict, screenshot

WAIT_MS = 180_000  # give-up time for JupyterLab and kernels, not a timing assertion
ANSWER = '''import jax
import jax.numpy as jnp

_add = jax.jit(lambda state, delta: state + delta, donate_argnums=(0,))


def update_with_donate(state, delta):
    return _add(state, delta)
'''


@pytest.fixture
def restored_workspace(servers):
    """The learner workspace as it was: this test edits and saves the exercise notebook."""
    notebook = servers.workspace / "update_with_donate" / "update_with_donate.ipynb"
    before = notebook.read_bytes()
    yield
    notebook.write_bytes(before)


def test_exercise_notebook_opens_runs_submits_and_validates(restored_workspace, servers, open_page):
    watched = open_page(servers.url("book/exercises/update_with_donate.html"))
    page = watched.page
    link = page.locator("nav.course-run a.course-run-lab")
    assert link.get_attribute("href") == (
        f"{servers.jupyter}/lab/tree/update_with_donate/update_with_donate.ipynb?token={servers.token}")
    with page.context.expect_page() as popup:
        link.click()
    lab = popup.value
    overwrite_on_conflict(lab)
    lab_watch = Watched(lab)  # from here on: nothing may be fetched from off this machine
    lab.wait_for_url(re.compile(r"/lab/tree/update_with_donate/update_with_donate\.ipynb"), timeout=WAIT_MS)
    panel = lab.locator(".jp-NotebookPanel:visible")
    panel.wait_for(timeout=WAIT_MS)
    assert lab.locator(".lm-TabBar-tab.lm-mod-current", has_text="update_with_donate.ipynb").count()
    panel.locator(".jp-MarkdownCell", has_text="Exercise: update_with_donate").first.wait_for(timeout=WAIT_MS)
    validate = panel.locator(".jp-Toolbar button, .jp-Toolbar jp-button").filter(has_text="Validate")
    validate.first.wait_for(timeout=WAIT_MS)
    # nbgrader's menu (assignment list, formgrader) needs an exchange this course does not
    # have: not offered. Every plugin has started by now (the toolbar's Validate is in).
    menus = lab.locator(".lm-MenuBar-itemLabel").all_inner_texts()
    assert "Run" in menus and "Nbgrader" not in menus, menus
    assert lab.request.get(f"{servers.jupyter}/assignments?token={servers.token}").status == 404

    # write the answer in the marked cell, run it and the self-check cell
    answer = _write_answer(lab, panel, ANSWER, "donate_argnums=(0,)")
    lab.keyboard.press("Shift+Enter")          # the answer
    answer.locator(".jp-InputPrompt", has_text=re.compile(r"\[\d+\]")).wait_for(timeout=WAIT_MS)
    lab.keyboard.press("Shift+Enter")          # the self-check heading (markdown)
    lab.keyboard.press("Shift+Enter")          # the self-check cell
    check = panel.locator(".jp-CodeCell").nth(1)
    check.locator(".jp-OutputArea-output").filter(has_text="Self-check").first.wait_for(timeout=WAIT_MS)
    assert "Self-check passed" in check.locator(".jp-OutputArea").inner_text()
    screenshot(lab, "jupyterlab-update_with_donate-self-check")

    # submit without saving first: the cell grades the answer just run, not the saved stub
    submit = panel.locator(".jp-CodeCell").last
    assert "submit(" in submit.locator(".cm-content").inner_text()
    lab.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()  # from the cell after the check
    lab.locator(".lm-Menu-itemLabel", has_text="Run Selected Cell and All Below").first.click()
    out = submit.locator(".jp-OutputArea")
    out.filter(has_text=re.compile(r"Score:|Not graded|Not submitted")).first.wait_for(timeout=WAIT_MS)
    text = out.inner_text()
    screenshot(lab, "jupyterlab-update_with_donate-submitted")
    assert f"as {servers.learner}" in text and "after you ran this cell" in text, text
    assert "Score: 10 / 10" in text, text
    lab.keyboard.press("Control+s")
    lab.locator(".jp-mod-dirty").first.wait_for(state="detached", timeout=WAIT_MS)

    validate.first.click()
    dialog = lab.locator(".jp-Dialog")
    dialog.wait_for(timeout=WAIT_MS)
    dialog.filter(has_text=re.compile("Success|fail|error", re.I)).wait_for(timeout=WAIT_MS)
    text = dialog.inner_text()
    screenshot(lab, "jupyterlab-update_with_donate-validate")
    assert "Success" in text, text
    off_machine = [p for p in lab_watch.problems if p.startswith("request off this machine")]
    assert not off_machine, off_machine
    assert not watched.problems, watched.problems


def _write_answer(lab, panel, source, marker):
    """Type ``source`` over the answer cell (the first code cell) once the kernel is
    idle; the cell, once ``marker`` (a piece of ``source``) shows in it."""
    # The kernel status must read Idle before any key is sent: a key press sent
    # while it still reads Starting or Connecting is dropped
    # (status bar: "Python 3 (ipykernel) | Idle").
    lab.locator(".jp-StatusBar-TextItem", has_text=re.compile(r"\| Idle$")).first.wait_for(timeout=WAIT_MS)
    # Each key press waits for what it needs: on a loaded machine a press sent
    # before the editor has focus, or before the text is in, runs the stub.
    answer = panel.locator(".jp-CodeCell").first
    answer.locator(".cm-content").click()
    answer.locator(".cm-editor.cm-focused").wait_for(timeout=WAIT_MS)
    lab.keyboard.press("Control+a")
    lab.keyboard.insert_text(source)
    answer.locator(".cm-content", has_text=marker).wait_for(timeout=WAIT_MS)
    return answer


def test_run_all_on_a_wrong_answer_still_submits(restored_workspace, servers, open_page):
    """The self-check fails on a wrong answer, and says why; Run All goes on past it to
    the submit cell, which grades the answer (a learner who only knows Run All can
    still hand in)."""
    lab = open_page(f"{servers.jupyter}/lab/tree/update_with_donate/update_with_donate.ipynb"
                    f"?token={servers.token}", wait="domcontentloaded").page
    overwrite_on_conflict(lab)
    panel = lab.locator(".jp-NotebookPanel:visible")
    panel.locator(".jp-MarkdownCell", has_text="Exercise: update_with_donate").first.wait_for(timeout=WAIT_MS)
    _write_answer(lab, panel, ANSWER.replace(", donate_argnums=(0,)", ""), "jax.jit(lambda")
    lab.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    lab.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
    out = panel.locator(".jp-CodeCell").last.locator(".jp-OutputArea")
    out.filter(has_text=re.compile(r"Score:|Not graded|Not submitted")).first.wait_for(timeout=WAIT_MS)
    screenshot(lab, "jupyterlab-update_with_donate-run-all-wrong")
    check = panel.locator(".jp-CodeCell").nth(1).locator(".jp-OutputArea").inner_text()
    assert "AssertionError" in check and "state was not donated" in check, check
    text = out.inner_text()
    score = re.search(r"Score: (\d+) / 10", text)
    assert score and int(score.group(1)) < 10, text
