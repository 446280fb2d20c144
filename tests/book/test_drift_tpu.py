"""The drift report on a TPU (scripts/drift.py, scripts/drift_cells.py,
scripts/drift_compare.py, book/_ext/rules_site.py), without a TPU: the report a run on
one made is committed (book/drift_report_tpu.json), and a run is stood in for by a
report whose platform says "tpu" (:data:`TPU_RUN`) and by pages run on the CPU. Fast:
no venv, no site build, no kernel; one small page runs in a new interpreter."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from docutils import nodes

from book._ext import rules_site
from scripts import drift, drift_cells, drift_compare
from tests.course import REPO

from .drift_rows import PAGE, rule_row
from .sitebuild import LESSONS

PAGES = ["book/intro"] + [f"book/lessons/{name}" for name in LESSONS]
COMMITTED = REPO / "book" / "drift_report_tpu.json"


# What `scripts/drift.py --observed` writes to book/drift_report_tpu.json after a run on
# a TPU with the machine's own JAX. One rule held, one did not, one was not reached.
TPU_RUN = {"old_jax": "0.12.0.1", "new_jax": "0.10.2", "python": "3.11.7", "platform": "tpu",
           "device_kind": "TPU v5 lite", "date": "2026-12-05",
           "rows": [rule_row("one-entry-per-leaf", "same"),
                    rule_row("alias-bytes-cover-state", "changed", new="does not hold"),
                    rule_row("shape-change-leaf-warns", "failed", new=None,
                         error="code cell 3: ValueError: Number of devices 1 must be >= 8")]}


def test_a_tpu_report_says_which_device_which_jax_and_which_rules_held_there():
    assert drift_compare.page_summary(TPU_RUN, PAGE) == (
        "On a TPU (TPU v5 lite), the drift report of 2026-12-05 ran them on JAX 0.10.2 (the machine's "
        "own, not the course's pinned 0.12.0.1): 1 of 3 held there; did not hold: alias-bytes-cover-state; "
        "not reached: shape-change-leaf-warns.")
    pinned = dict(TPU_RUN, new_jax="0.12.0.1", rows=TPU_RUN["rows"][:1])
    assert drift_compare.page_summary(pinned, PAGE) == (
        "On a TPU (TPU v5 lite), the drift report of 2026-12-05 ran them on JAX 0.12.0.1: 1 of 1 held there.")
    assert drift_compare.accelerator(TPU_RUN) == "tpu" and not drift_compare.on_gpu(TPU_RUN)
    assert drift_compare.page_summary(TPU_RUN, "book/lessons/other") == ""


def _asserts_section():
    doctree = nodes.document(None, None)
    doctree += nodes.section(ids=["what-this-page-asserts"])
    return doctree


def _drift_paragraphs(doctree):
    return [(p.astext(), p["classes"]) for p in doctree.findall(nodes.paragraph)]


def test_a_page_shows_the_tpu_run_beside_the_other_reports(tmp_path, monkeypatch):
    site = rules_site
    last = json.loads(site.DRIFT_REPORT.read_text())
    monkeypatch.setattr(site, "GPU_DRIFT_REPORT", tmp_path / "drift_report_gpu.json")
    monkeypatch.setattr(site, "TPU_DRIFT_REPORT", tmp_path / "drift_report_tpu.json")
    (tmp_path / "drift_report_tpu.json").write_text(drift.report_text(TPU_RUN))
    page = _asserts_section()
    site.add_drift_sentence(None, page, PAGE)
    assert _drift_paragraphs(page) == [
        (drift_compare.page_summary(last, PAGE), ["course-drift"]),
        (drift_compare.page_summary(TPU_RUN, PAGE), ["course-drift", "course-drift-tpu"])]

    gpu_run = dict(TPU_RUN, platform="gpu", device_kind="NVIDIA H200", new_jax="0.12.0.1")
    (tmp_path / "drift_report_gpu.json").write_text(drift.report_text(gpu_run))
    page = _asserts_section()
    site.add_drift_sentence(None, page, PAGE)
    assert [classes[-1] for _, classes in _drift_paragraphs(page)] == [
        "course-drift", "course-drift-gpu", "course-drift-tpu"]
    assert _drift_paragraphs(page)[1][0].startswith("On a GPU (NVIDIA H200), the drift report")


def test_each_page_says_what_the_committed_tpu_run_found():
    """The committed run: on a TPU, with its device kind and JAX, every page that asserts
    rules has its sentence, and the site reads it."""
    report = json.loads(COMMITTED.read_text())
    assert report["platform"] == "tpu" and report["device_kind"].startswith("TPU")
    if report["new_jax"] != report["old_jax"]:
        assert report["note"] == (f"ran on JAX {report['new_jax']} (the machine's own), not the course's "
                                  f"pinned {report['old_jax']}")
    for page in PAGES:
        sentence = drift_compare.page_summary(report, page)
        assert sentence.startswith(f"On a TPU ({report['device_kind']}), the drift report of "
                                   f"{report['date']} ran them on JAX {report['new_jax']}"), page
    assert rules_site.TPU_DRIFT_REPORT == COMMITTED
    assert {r["status"] for r in report["rows"] if r["kind"] == "rule"} <= {"same", "changed", "failed"}
    assert not [r for r in report["rows"] if r["kind"] == "sample"]  # "samples": "not graded"
    assert report["samples"] == "not graded"


def test_a_tpu_run_asks_for_the_tpu_and_writes_its_own_report():
    assert drift.JAX_PLATFORM_OF["tpu"] == "tpu"  # no silent fall back to the CPU
    assert drift.report_path("tpu") == COMMITTED
    assert drift.drift_requirements("0.12.0.1", "tpu").startswith("jax[tpu]==0.12.0.1\njaxlib==0.12.0.1\n")
    assert drift.platform_of({"platform": "tpu"}) == "tpu"
    assert drift.platform_of({"platform": "cuda"}) == "gpu"
    assert drift.platform_of({}) == "cpu"


def test_a_report_from_an_observation_made_elsewhere():
    """``--observed``: against the course's build as the committed last report records
    it; no sample rows where none were graded; what a broken rule saw goes with it."""
    old = drift.committed_observation()
    last = json.loads(drift.LAST_REPORT.read_text())
    assert old["jax"] == last["old_jax"] and all(r["held"] for r in old["rules"])
    assert len(old["rules"]) == sum(r["kind"] == "rule" for r in last["rows"])
    rules = [dict(r, held=r["id"] != "update-leaves-input") for r in old["rules"] if r["page"] == "book/intro"]
    new = {"jax": "0.10.2", "python": "3.11.7", "platform": "tpu", "device_kind": "TPU v5 lite",
           "date": "2026-12-05", "rules": rules, "glue": {}, "errors": {},
           "pages": {"book/intro": {"observed": {"update-leaves-input": {
               "condition": "not state.is_deleted()", "values": {"state.is_deleted()": "True"}}}}}}
    report = drift.make_report(old, new)
    assert report["platform"] == "tpu" and report["date"] == "2026-12-05"
    assert report["samples"] == "not graded" and "0.12.0.1" in report["note"]
    kinds = {r["kind"] for r in report["rows"]}
    assert kinds == {"rule", "glue"}
    broken = [r for r in report["rows"] if r["status"] == "changed" and r["kind"] == "rule"]
    assert [(r["id"], r["observed"]["values"]) for r in broken] == [
        ("update-leaves-input", {"state.is_deleted()": "True"})]


@pytest.mark.parametrize("page", PAGES)
def test_the_cells_are_the_notebook_s_code_cells(page):
    """drift_cells reads a page's code cells and their tags as jupytext does."""
    import jupytext

    notebook = jupytext.read(REPO / f"{page}.md")
    expected = [(c.source, c.metadata.get("tags", [])) for c in notebook.cells if c.cell_type == "code"]
    assert [(c.source, c.tags) for c in drift_cells.code_cells(REPO / f"{page}.md")] == expected


SMALL_PAGE = '''# A page

```{code-cell} ipython3
:tags: [remove-cell]
import sys
import jax.numpy as jnp
from myst_nb import glue
from course_rules import publish, rule
x = jnp.ones(4)
glue("n", x.shape[0], display=False)
rule("four", "four ones", x.shape[0] == 4)
rule("five", "five ones", x.shape[0] == 5 and not x.is_deleted())
```

```{code-cell} ipython3
:tags: [raises-exception]
raise ValueError("on purpose")
```

```{code-cell} ipython3
:tags: [remove-cell]
rule("last-value", "IPython keeps the last exception", str(sys.last_value) == "on purpose")
undefined_name
publish()
```
'''


def test_a_page_runs_cell_by_cell_and_notes_what_a_broken_rule_saw(tmp_path):
    (tmp_path / "page.md").write_text(SMALL_PAGE)
    (tmp_path / "course_rules.py").write_text((REPO / "book" / "lessons" / "course_rules.py").read_text())
    env = dict(os.environ, JAX_PLATFORMS="cpu", COURSE_RULES_KEEP_GOING="1")
    subprocess.run([sys.executable, str(REPO / "scripts" / "drift_cells.py"), str(tmp_path / "page.md"),
                    str(tmp_path / "out.json")], env=env, check=True, timeout=120)
    found = json.loads((tmp_path / "out.json").read_text())
    assert [(r["id"], r["held"]) for r in found["rules"]] == [("four", True), ("five", False), ("last-value", True)]
    assert found["glue"] == {"n": "4"}
    assert found["errors"] == ["code cell 2: NameError: name 'undefined_name' is not defined"]
    assert found["observed"]["five"]["values"]["x.shape[0]"] == "4"
    assert found["observed"]["five"]["values"]["x.is_deleted()"] == "False"
    assert (found["platform"], found["device_kind"], found["finished"]) == ("cpu", "cpu", True)
