"""The drift report on a GPU (scripts/drift.py, scripts/drift_compare.py,
book/_ext/rules_site.py), without a GPU: the machine that runs these tests has none,
so a GPU run is stood in for by a report whose platform says "gpu" (:data:`GPU_RUN`)
and, for choosing the platform, by an ``nvidia-smi`` that lists one. Fast: no venv,
no site build, no lesson executed."""
from __future__ import annotations

import json
import os
import stat
from types import SimpleNamespace

import pytest
from docutils import nodes

from book._ext import rules_site
from scripts import drift, drift_compare
from tests.course import REPO

from .drift_rows import PAGE, rule_row

# What `make drift` writes to book/drift_report_gpu.json after a run on an H200 (a
# fixture: no GPU ran it). One rule held, one did not, one was not reached.
GPU_RUN = {"old_jax": "0.12.0.1", "new_jax": "0.12.0.1", "python": "3.12.3", "platform": "gpu",
           "device_kind": "NVIDIA H200", "date": "2026-12-03",
           "rows": [rule_row("one-entry-per-leaf", "same"),
                    rule_row("alias-bytes-cover-state", "changed", new="does not hold"),
                    rule_row("shape-change-leaf-warns", "failed", new=None,
                         error="cell 30: XlaRuntimeError: UNIMPLEMENTED")]}


def test_a_gpu_report_says_which_device_and_which_rules_held_there():
    assert drift_compare.page_summary(GPU_RUN, PAGE) == (
        "On a GPU (NVIDIA H200), the drift report of 2026-12-03 ran them on JAX 0.12.0.1: 1 of 3 held "
        "there; did not hold: alias-bytes-cover-state; not reached: shape-change-leaf-warns.")
    all_held = dict(GPU_RUN, rows=GPU_RUN["rows"][:1])
    assert drift_compare.page_summary(all_held, PAGE).endswith(": 1 of 1 held there.")
    assert drift_compare.page_summary(GPU_RUN, "book/lessons/other") == ""


def test_a_cpu_report_says_what_it_said_before_the_platform_was_recorded():
    older = {k: v for k, v in GPU_RUN.items() if k not in ("platform", "device_kind")}
    on_cpu = dict(GPU_RUN, platform="cpu", device_kind="cpu")
    expected = ("The drift report of 2026-12-03 also ran them on JAX 0.12.0.1 (Python 3.12.3): "
                "1 of 3 held; not: alias-bytes-cover-state, shape-change-leaf-warns.")
    assert drift_compare.page_summary(older, PAGE) == drift_compare.page_summary(on_cpu, PAGE) == expected


def _asserts_section():
    doctree = nodes.document(None, None)
    doctree += nodes.section(ids=["what-this-page-asserts"])
    return doctree


def _drift_paragraphs(doctree):
    return [(p.astext(), p["classes"]) for p in doctree.findall(nodes.paragraph)]


def test_a_page_shows_the_gpu_run_only_where_one_was_made(tmp_path, monkeypatch):
    committed = json.loads(rules_site.DRIFT_REPORT.read_text())
    without = _asserts_section()
    monkeypatch.setattr(rules_site, "GPU_DRIFT_REPORT", tmp_path / "drift_report_gpu.json")
    monkeypatch.setattr(rules_site, "TPU_DRIFT_REPORT", tmp_path / "drift_report_tpu.json")  # none: the GPU's alone
    rules_site.add_drift_sentence(None, without, PAGE)
    assert _drift_paragraphs(without) == [(drift_compare.page_summary(committed, PAGE), ["course-drift"])]

    (tmp_path / "drift_report_gpu.json").write_text(drift.report_text(GPU_RUN))
    with_gpu = _asserts_section()
    rules_site.add_drift_sentence(None, with_gpu, PAGE)
    assert _drift_paragraphs(with_gpu) == [
        (drift_compare.page_summary(committed, PAGE), ["course-drift"]),
        (drift_compare.page_summary(GPU_RUN, PAGE), ["course-drift", "course-drift-gpu"])]


def test_the_pages_are_read_again_when_a_gpu_report_appears(tmp_path, monkeypatch):
    monkeypatch.setattr(rules_site, "GPU_DRIFT_REPORT", tmp_path / "drift_report_gpu.json")
    env = SimpleNamespace(found_docs={"book/intro", PAGE, "book/lessons/lifetimes", "book/exercises/index"})
    rules_site.pages_of_changed_reports(None, env, set(), set(), set())  # the first build: all read anyway
    assert rules_site.pages_of_changed_reports(None, env, set(), set(), set()) == []
    (tmp_path / "drift_report_gpu.json").write_text(drift.report_text(GPU_RUN))
    assert rules_site.pages_of_changed_reports(None, env, set(), {PAGE}, set()) == [
        "book/intro", "book/lessons/lifetimes"]
    assert rules_site.pages_of_changed_reports(None, env, set(), set(), set()) == []


def _nvidia_smi(folder, listing):
    """An ``nvidia-smi`` that prints ``listing`` for ``-L``, as NVIDIA's does on a GPU machine."""
    tool = folder / "nvidia-smi"
    tool.write_text(f"#!/bin/sh\nprintf '%s\\n' '{listing}'\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)


def test_auto_runs_on_the_gpu_that_nvidia_smi_lists(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + os.environ["PATH"])
    if not drift.gpu_present():  # this machine: no nvidia-smi
        assert drift.choose_platform("auto") == "cpu"
    _nvidia_smi(tmp_path, "GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-0000-0000-000000000000)")
    assert drift.gpu_present() and drift.choose_platform("auto") == "gpu"
    assert drift.choose_platform("cpu") == "cpu"
    _nvidia_smi(tmp_path, "No devices were found")
    assert drift.choose_platform("auto") == "cpu"


def test_a_gpu_run_installs_jax_s_cuda_plugin_and_writes_its_own_report():
    pins = drift.drift_requirements("0.12.0.1", "gpu").splitlines()
    assert pins[:2] == ["jax[cuda12]==0.12.0.1", "jaxlib==0.12.0.1"]
    assert drift.drift_requirements("0.12.0.1", "gpu", "cuda13").startswith("jax[cuda13]==0.12.0.1\n")
    assert drift.drift_requirements("0.10.2").startswith("jax==0.10.2\njaxlib==0.10.2\n")
    assert drift.report_path("gpu") == REPO / "book" / "drift_report_gpu.json"
    assert drift.report_path("cpu") == REPO / "book" / "drift_report.json"
    assert drift.JAX_PLATFORM_OF["gpu"] == "cuda"  # no silent fall back to the CPU


def test_the_observation_records_the_platform_it_ran_on():
    import jax

    record = drift.platform_record()
    assert record == {"platform": jax.default_backend(), "device_kind": jax.devices()[0].device_kind,
                      "device_count": jax.device_count()}
    if jax.default_backend() == "cpu":
        assert record["device_kind"] == "cpu"


@pytest.mark.parametrize("report", [GPU_RUN, dict(GPU_RUN, platform="cpu", device_kind="cpu")])
def test_the_committed_report_keeps_its_platform(report):
    text = drift.report_text(report)
    assert json.loads(text)["platform"] == report["platform"]
    assert drift_compare.on_gpu(json.loads(text)) == (report["platform"] == "gpu")
