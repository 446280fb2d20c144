"""The drift report: the course's rules, glued values and sample grades on another JAX.

    make drift JAX=0.10.2      # DRIFT_PYTHON=... for another interpreter than Debian's 3.11
    make drift JAX=0.12.0.1    # on a machine with a CUDA GPU: the lessons run on the GPU

builds a throwaway venv (``_build/drift/jax-<version>-py<x.y>/``: what the lessons and
the grader import, at requirements.txt's pins, with JAX's changed, from the same
registries), executes every lesson there
(jupytext + nbclient, every rule recorded, none stopping the lesson) and grades every
exercise's sample answers with the course's grader, then compares with the course's
own build (``_build/html/_static/rules.json``, myst-nb's glue caches) and each
sample's ``expected.json``, and prints rule by rule, value by value and sample by
sample: same, changed (old -> new) or failed (the error). It writes the full report
to ``_build/drift/report-<version>.json`` and the last one to ``book/drift_report.json``
(committed: the lessons' lists say from it on which JAX their rules were also checked).

On an accelerator the lessons run there and the report, which records the platform
and device kind they ran on (``jax.default_backend()``, ``jax.devices()[0].device_kind``,
read in the lessons' own processes: the observing process never opens the device, which
a TPU lets one program at a time hold), goes to the accelerator's own committed report;
each lesson then also says which of its rules held on that device. A CPU run leaves
those files alone.

* On a machine with a CUDA GPU (``nvidia-smi -L`` lists one; ``--platform cpu`` or
  ``gpu`` decides instead of looking) the venv gets JAX's CUDA plugin
  (``jax[cuda12]``), the lessons run with ``JAX_PLATFORMS=cuda``, and the report goes
  to ``book/drift_report_gpu.json``.
* ``--platform tpu`` runs them with ``JAX_PLATFORMS=tpu`` (a venv gets ``jax[tpu]``),
  and the report goes to ``book/drift_report_tpu.json``. On a TPU machine that has its
  own JAX and no network, ``observe OUT --platform tpu --cells --no-samples`` runs
  there with that JAX (``--cells``: each page's code cells in a new interpreter,
  ``scripts/drift_cells.py``, no notebook kernel; ``--no-samples``: the sample answers
  are not graded), and ``--observed OUT`` makes the report from it back here.

``--interpreter PATH`` uses an existing interpreter that has the course's packages
instead of building a venv. The ``observe`` subcommand is what runs inside it.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder.defaults import CHECKOUT as REPO, DRIFT_PYTHON  # standard library only
from scripts import drift_compare

BUILD = REPO / "_build"
LESSONS = REPO / "book" / "lessons"
PAGES = [REPO / "book" / "intro.md", *sorted(LESSONS.glob("*.md"))]  # the pages that assert rules
SAMPLES = REPO / "autograder" / "exercises"
LAST_REPORT = REPO / "book" / "drift_report.json"
GPU_REPORT = REPO / "book" / "drift_report_gpu.json"  # the last run on a GPU, when one was made
TPU_REPORT = REPO / "book" / "drift_report_tpu.json"  # the last run on a TPU, when one was made
CPU, GPU, TPU = "cpu", "gpu", "tpu"
PLATFORMS = (CPU, GPU, TPU)
# What JAX_PLATFORMS names where the lessons run: an accelerator run must not fall back to the CPU.
JAX_PLATFORM_OF = {CPU: "cpu", GPU: "cuda", TPU: "tpu"}
CELLS = Path(__file__).resolve().parent / "drift_cells.py"  # one page without a kernel (--cells)
PAGE_TIMEOUT = 600  # seconds for one page run by --cells (--page-timeout)
# What a lesson's kernel prints last, so the report says where the lessons ran (the
# observing process itself does not open the device).
PLATFORM_MARK = "course-drift-platform "
PLATFORM_CELL = ("import json as _json, jax as _jax\n"  # noqa: UP031 (the cell's braces)
                 "print(%r + _json.dumps({'jax': _jax.__version__, 'platform': _jax.default_backend(), "
                 "'device_kind': _jax.devices()[0].device_kind, 'device_count': len(_jax.devices())}))"
                 % PLATFORM_MARK)
GLUE_PREFIX = "application/papermill.record/"


# What decides a drift observation besides the other JAX, beside the pages (PAGES) and the
# code that decides a grade (autograder.pipeline.grading_files): the lessons' rule module,
# the build's settings and the site extension that writes its own rules.json, the command
# line that grades the samples (its reading of notebooks, its limits in defaults.py), the
# samples with their expected outcomes, the pins (both builds' environments) and the
# observer and comparison (drift_cells.py only runs --cells pages, made elsewhere).
INPUTS = ("book/lessons/course_rules.py", "_config.yml", "book/_ext/rules_site.py",
          "autograder/__main__.py", "autograder/files.py", "autograder/load.py",
          "autograder/options.py", "autograder/defaults.py", "requirements.txt",
          "scripts/drift.py", "scripts/drift_compare.py")


def inputs_digest() -> str:
    """SHA-256 (hex) of every file an observation depends on besides the other JAX (the
    pages, :data:`INPUTS`, the grading code and every exercise's samples; of
    requirements.txt its pins), by path relative to the checkout. A report records the
    digest it was made from: when it equals this checkout's, running the same JAX again
    observes the same (make test checks that instead of re-running minutes of lessons
    and samples in a new venv)."""
    from autograder import pipeline

    files = {*PAGES, *(REPO / name for name in INPUTS), *pipeline.grading_files(),
             *(p for p in SAMPLES.glob("*/hidden/samples/*") if p.suffix in (".py", ".json"))}
    h = hashlib.sha256()
    for path in sorted(files):
        data = path.read_bytes()
        if path.name == "requirements.txt":  # its pins: a comment moves no observation
            data = b"".join(line for line in data.splitlines(True) if not line.startswith(b"#"))
        h.update(path.relative_to(REPO).as_posix().encode() + b"\0" + data + b"\0")
    return h.hexdigest()


# What executing the lessons and grading the samples imports, at the course's pins; their
# own dependencies are left to pip, so another Python (Debian's 3.11.2, say) still
# resolves: the full requirements.txt pins packages that need a newer patch release.
DRIFT_PACKAGES = ("numpy", "optax", "matplotlib", "myst-nb", "ipykernel", "nbclient", "jupytext",
                  "nbformat", "nbgrader", "pytest", "tqdm", "packaging")


def drift_requirements(jax_version: str, platform_name: str = CPU, cuda: str = "cuda12") -> str:
    """requirements.txt's pins of :data:`DRIFT_PACKAGES`, and JAX at ``jax_version``;
    for ``platform_name`` "gpu" with JAX's ``cuda`` extra (its CUDA plugin and libraries),
    for "tpu" with its ``tpu`` extra (libtpu)."""
    pins = dict(re.findall(r"(?m)^([A-Za-z0-9_.-]+)==(\S+)$", (REPO / "requirements.txt").read_text()))
    extra = {GPU: f"[{cuda}]", TPU: "[tpu]"}.get(platform_name, "")
    lines = [f"jax{extra}=={jax_version}", f"jaxlib=={jax_version}"]
    lines += [f"{name}=={pins[name]}" if name in pins else name for name in DRIFT_PACKAGES]
    return "\n".join(lines) + "\n"


def gpu_present() -> bool:
    """Whether this machine has a CUDA GPU: NVIDIA's ``nvidia-smi -L`` lists one."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    listed = subprocess.run([smi, "-L"], capture_output=True, text=True)
    return listed.returncode == 0 and "GPU" in listed.stdout


def choose_platform(asked: str) -> str:
    """"cpu" or "gpu": ``asked`` itself, or for "auto" a GPU when :func:`gpu_present`."""
    if asked != "auto":
        return asked
    return GPU if gpu_present() else CPU


def report_path(platform_name: str) -> Path:
    """The committed report a run on ``platform_name`` writes and ``--check`` reads."""
    return {GPU: GPU_REPORT, TPU: TPU_REPORT}.get(platform_name, LAST_REPORT)


def venv_for(jax_version: str, python: str, platform_name: str = CPU, cuda: str = "cuda12") -> Path:
    """The drift venv's interpreter, created and installed once per (JAX, Python,
    platform): ``..-cuda12`` for a GPU run, ``..-tpu`` for a TPU run."""
    minor = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                           capture_output=True, text=True, check=True).stdout.strip()
    suffix = {GPU: f"-{cuda}", TPU: "-tpu"}.get(platform_name, "")
    venv = BUILD / "drift" / f"jax-{jax_version}-py{minor}{suffix}"
    ready = venv / ".installed"
    if not ready.exists():
        venv.mkdir(parents=True, exist_ok=True)
        (venv / "requirements.txt").write_text(drift_requirements(jax_version, platform_name, cuda))
        print(f"==> creating {venv.relative_to(REPO)} (JAX {jax_version}, Python {minor}, "
              f"{platform_name})", flush=True)
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                        "--progress-bar", "off", "-r", str(venv / "requirements.txt")], check=True)
        ready.touch()
    return venv / "bin" / "python"


# ------------------------------------------------------------------ inside the drift interpreter
def _glued(cell) -> dict:
    out = {}
    for output in cell.get("outputs", []):
        name = output.get("metadata", {}).get("scrapbook", {}).get("name")
        text = output.get("data", {}).get(GLUE_PREFIX + "text/plain", output.get("data", {}).get("text/plain"))
        if name and text is not None:
            out[name] = text
    return out


def _errors(cell, index) -> list[str]:
    if "raises-exception" in cell.get("metadata", {}).get("tags", []):
        return []
    return [f"cell {index}: {o['ename']}: {o['evalue'].splitlines()[0] if o['evalue'] else ''}"
            for o in cell.get("outputs", []) if o.get("output_type") == "error"]


def observe_lesson(path: Path) -> tuple[list, dict, list, dict]:
    """Execute one page (a MyST notebook) in a kernel; its rule records, glued values,
    unexpected errors, and where its JAX ran (:data:`PLATFORM_CELL`, run last)."""
    import jupytext
    from nbclient import NotebookClient
    from nbformat.v4 import new_code_cell

    nb = jupytext.read(path)
    nb.cells.append(new_code_cell(PLATFORM_CELL))
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    where = nb.cells.pop()
    page = path.relative_to(REPO).with_suffix("").as_posix()
    glue, errors = {}, []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            glue.update(_glued(cell))
            errors += _errors(cell, index)
    records = json.loads(glue.pop("rules_records", "[]"))
    glue.pop("rules_asserted", None)
    printed = "".join(o.get("text", "") for o in where.get("outputs", []) if o.get("output_type") == "stream")
    ran_on = next((json.loads(line[len(PLATFORM_MARK):]) for line in printed.splitlines()
                   if line.startswith(PLATFORM_MARK)), {})
    return [dict(r, page=page) for r in records], glue, errors, ran_on


def _backend_refused(record: dict) -> bool:
    """Whether a page run by --cells found the device held by another program (a TPU
    refuses a program started just after another ended): worth one more try."""
    text = json.dumps(record.get("errors", [])) + record.get("platform_error", "")
    return not record.get("calls") and any(
        s in text for s in ("lockfile", "Unable to initialize backend", "TPU initialization failed"))


def observe_cells(path: Path, env: dict, timeout: float = PAGE_TIMEOUT) -> dict:
    """Run one page by :data:`CELLS` in a new interpreter (``env``: its environment), once
    more after 5 s where the device refused it; its record (scripts/drift_cells.py)."""
    page = path.relative_to(REPO).with_suffix("").as_posix()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "page.json"
        for attempt in (1, 2):
            out.unlink(missing_ok=True)
            started = time.monotonic()
            try:
                done = subprocess.run([sys.executable, str(CELLS), str(path), str(out)], env=env,
                                      capture_output=True, text=True, timeout=timeout)
                ended = f"exit status {done.returncode}" if done.returncode else None
                tail = (done.stderr or done.stdout)[-2000:]
            except subprocess.TimeoutExpired as stopped:
                stderr = stopped.stderr or b""  # bytes, whatever text= said
                ended = f"timed out after {timeout:g} s"
                tail = (stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr)[-2000:]
            record = json.loads(out.read_text()) if out.is_file() else {
                "page": page, "rules": [], "glue": {}, "errors": [], "calls": []}
            if ended:
                record["errors"].append(f"{ended}: {tail.strip().splitlines()[-1] if tail.strip() else ''}")
                record["stopped"] = {"how": ended, "tail": tail}
            record["seconds"], record["attempts"] = round(time.monotonic() - started, 1), attempt
            if attempt == 1 and _backend_refused(record):
                time.sleep(5)
                continue
            return record
    return record


def grade_samples(exercise: str) -> dict:
    """``{"<exercise>/<sample>": {"score", "failed"} or {"error"}}`` with the course's grader."""
    from autograder.judge import hidden_tests

    names = {title: name for name, title, _ in hidden_tests(exercise)}
    samples = sorted((SAMPLES / exercise / "hidden" / "samples").glob("*.py"))
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run([sys.executable, "-m", "autograder", *map(str, samples), "--exercise", exercise,
                              "--out", tmp, "--force"], cwd=REPO, capture_output=True, text=True)
        for sample in samples:
            result = Path(tmp) / sample.stem / "results.json"
            if not result.exists():
                out[f"{exercise}/{sample.stem}"] = {"error": (run.stderr or run.stdout)[-300:] or "no result"}
                continue
            data = json.loads(result.read_text())
            failed = [names.get(t["name"], t["name"]) for t in data.get("tests", []) if t["status"] != "passed"]
            graded = data.get("tests") and any(t["status"] == "passed" for t in data["tests"])
            out[f"{exercise}/{sample.stem}"] = {"score": round(data["score"]),
                                                "failed": failed if graded or not failed else "all"}
    return out


def platform_record() -> dict:
    """Where this process's JAX runs: ``{"platform": jax.default_backend() ("cpu",
    "gpu", ...), "device_kind": the first device's kind ("cpu", "NVIDIA H200", ...),
    "device_count": int}``."""
    import jax

    devices = jax.devices()
    return {"platform": jax.default_backend(), "device_kind": devices[0].device_kind,
            "device_count": len(devices)}


def observe(out: Path, platform_name: str = CPU, cells: bool = False, samples: bool = True,
            page_timeout: float = PAGE_TIMEOUT) -> None:
    """Run every page on ``platform_name`` and (``samples``) grade every sample answer;
    write the observation to ``out`` (after each page, so a run stopped midway still
    says what it reached). ``cells``: each page by :data:`CELLS` instead of a kernel.
    This process imports JAX but never opens a device: where the pages ran is read in
    the pages' own processes."""
    # before JAX is imported, here and in every kernel or interpreter the lessons run in
    os.environ.update({"COURSE_RULES_KEEP_GOING": "1", "JAX_PLATFORMS": JAX_PLATFORM_OF[platform_name],
                       "TF_CPP_MIN_LOG_LEVEL": "3", "MPLBACKEND": "Agg"})
    import platform

    import jax

    from autograder import exercises

    found = {"jax": jax.__version__, "python": platform.python_version(),
             "date": datetime.date.today().isoformat(), "platform": None,
             "device_kind": None, "device_count": None, "mode": "cells" if cells else "kernel",
             "rules": [], "glue": {}, "errors": {}}
    if cells:
        found["pages"] = {}
    if samples:
        found["samples"] = {}
    for path in PAGES:
        page = path.relative_to(REPO).with_suffix("").as_posix()
        print(f"==> executing {path.relative_to(REPO)} on JAX {jax.__version__} "
              f"(JAX_PLATFORMS={JAX_PLATFORM_OF[platform_name]})", flush=True)
        if cells:
            record = observe_cells(path, dict(os.environ), page_timeout)
            records = [dict(r, page=page) for r in record.get("rules", [])]
            glue, errors = record.get("glue", {}), record.get("errors", [])
            ran_on = {k: record[k] for k in ("jax", "platform", "device_kind", "device_count") if k in record}
            found["pages"][page] = {k: v for k, v in record.items() if k not in ("rules", "glue", "errors")}
        else:
            records, glue, errors, ran_on = observe_lesson(path)
        for key, value in ran_on.items():  # the first page that says where it ran (and each, which JAX)
            if key == "jax" or found.get(key) is None:
                found[key] = value
        found["rules"] += records
        found["glue"][page], found["errors"][page] = glue, errors
        print(f"    {len(records)} rules, {sum(not r.get('held', True) for r in records)} did not hold, "
              f"{len(errors)} errors; ran on {ran_on.get('platform')} ({ran_on.get('device_kind')})", flush=True)
        out.write_text(json.dumps(found, indent=1))
    for exercise in exercises.names() if samples else ():
        print(f"==> grading the samples of {exercise}", flush=True)
        found["samples"].update(grade_samples(exercise))
    found["platform"] = found["platform"] or platform_name  # no page said: where they were sent
    found["device_kind"] = found["device_kind"] or (CPU if platform_name == CPU else "unknown")
    out.write_text(json.dumps(found, indent=1))


# ------------------------------------------------------------------ in the course's interpreter
def course_observation() -> dict:
    """What the course's own build observed (run `make book` first)."""
    rules = json.loads((BUILD / "html" / "_static" / "rules.json").read_text())
    glue = {}
    executed = BUILD / "jupyter_execute"
    for cache in sorted(executed.glob("book/**/*.glue.json")):
        page = cache.relative_to(executed).as_posix()[:-len(".glue.json")]
        values = json.loads(cache.read_text())
        glue[page] = {k: v["data"]["text/plain"] for k, v in values.items()
                      if "text/plain" in v.get("data", {}) and not k.startswith("rules_")}
    samples = {}
    for expected in sorted(SAMPLES.glob("*/hidden/samples/expected.json")):
        exercise = expected.parents[2].name
        for name, want in json.loads(expected.read_text()).items():
            if (expected.parent / f"{name}.py").exists():
                samples[f"{exercise}/{name}"] = want
    return {"jax": rules[0]["jax"] if rules else "?", "python": platform.python_version(),
            "rules": rules, "glue": glue, "samples": samples}


def committed_observation(report_path: Path = LAST_REPORT) -> dict:
    """What the course's own build observed, as the committed last report recorded it
    (its ``old`` side: each rule's status, each glued value), for making a report where
    the site is not built here; the samples from their ``expected.json``."""
    report = json.loads(report_path.read_text())
    rules = [{"id": r["id"], "page": drift_compare.current_page(r), "jax": report["old_jax"],
              "held": r["old"] == "holds", "prose": r.get("prose", [])}
             for r in report["rows"] if r["kind"] == "rule" and r["old"] != "not asserted"]
    glue = {}
    for r in report["rows"]:
        if r["kind"] == "glue":
            glue.setdefault(drift_compare.current_page(r), {})[r["id"]] = r["old"]
    samples = {}
    for expected in sorted(SAMPLES.glob("*/hidden/samples/expected.json")):
        for name, want in json.loads(expected.read_text()).items():
            if (expected.parent / f"{name}.py").exists():
                samples[f"{expected.parents[2].name}/{name}"] = want
    # the build's, as the landing page glued it
    python = glue.get("book/intro", {}).get("built_python", "'?'").strip("'\"")
    return {"jax": report["old_jax"], "python": python, "rules": rules, "glue": glue, "samples": samples}


def platform_of(observation: dict) -> str:
    """"cpu", "gpu" or "tpu": where an observation says its pages ran (``jax.default_backend()``)."""
    said = observation.get("platform") or CPU
    return GPU if said in ("gpu", "cuda", "rocm") else TPU if said == TPU else CPU


def make_report(old: dict, new: dict) -> dict:
    """The report of observation ``new`` against the course's own ``old``: its rows, and
    where and how the pages ran. An accelerator's report that ran on another JAX than the
    course's says so in ``note`` (the pages say it too)."""
    rows = drift_compare.compare(old, new)
    for row in rows:  # what a rule that did not hold saw there, where the run noted it (--cells)
        seen = new.get("pages", {}).get(row["where"], {}).get("observed", {}).get(row["id"])
        if row["kind"] == "rule" and row["new"] == "does not hold" and seen:
            row["observed"] = {"condition": seen.get("condition"),
                               "values": {k: v[:300] for k, v in seen.get("values", {}).items()}}
    report = {"old_jax": old["jax"], "new_jax": new["jax"], "python": new["python"],
              "platform": new.get("platform", CPU), "device_kind": new.get("device_kind", CPU),
              "date": new.get("date") or datetime.date.today().isoformat(), "inputs": inputs_digest()}
    if platform_of(new) != CPU:
        report["device_count"] = new.get("device_count")
        report["mode"] = new.get("mode", "kernel")
        report["samples"] = "graded" if "samples" in new else "not graded"
        if new["jax"] != old["jax"]:
            report["note"] = (f"ran on JAX {new['jax']} (the machine's own), not the course's "
                              f"pinned {old['jax']}")
    return dict(report, rows=rows)


def report_text(report: dict) -> str:
    """The report as JSON with one row per line (the committed copy stays readable in a diff)."""
    head = {k: v for k, v in report.items() if k != "rows"}
    rows = ",\n".join(" " + json.dumps(r) for r in report["rows"])
    return json.dumps(head)[:-1] + ', "rows": [\n' + rows + "\n]}\n"


def check_against_last(report: dict, last_path: Path = LAST_REPORT) -> int:
    """0 when ``report`` finds what the committed last report (``last_path``) says (the
    same JAX, the same rules, values and samples, each with the same status), else 1,
    printing each row that differs. Values may move in both builds alike: the site
    states statuses."""
    if not last_path.is_file():
        print(f"==> no committed report to check against: {last_path.relative_to(REPO)}")
        return 1
    last = json.loads(last_path.read_text())
    key = lambda r: (r["kind"], r["where"], r["id"])  # noqa: E731
    said = {key(r): r for r in last["rows"]}
    found = {key(r): r for r in report["rows"]}
    differ = [k for k in said.keys() | found.keys()
              if said.get(k, {}).get("status") != found.get(k, {}).get("status")]
    if last["new_jax"] != report["new_jax"]:
        print(f"==> {last_path.relative_to(REPO)} is of JAX {last['new_jax']}, not {report['new_jax']}")
        return 1
    for k in sorted(differ):
        print(f"==> differs from the committed report: {' '.join(k)}: "
              f"{said.get(k, {}).get('status')} -> {found.get(k, {}).get('status')}")
    return 1 if differ else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    observer = sub.add_parser("observe")
    observer.add_argument("out", type=Path)
    observer.add_argument("--platform", choices=PLATFORMS, default=CPU)
    observer.add_argument("--cells", action="store_true",
                          help="run each page's code cells in a new interpreter (scripts/drift_cells.py), "
                               "no notebook kernel")
    observer.add_argument("--no-samples", action="store_true", help="do not grade the sample answers")
    observer.add_argument("--page-timeout", type=float, default=PAGE_TIMEOUT,
                          help="seconds for one page run by --cells")
    parser.add_argument("--jax", help="the other JAX release, e.g. 0.10.2")
    parser.add_argument("--python", default=DRIFT_PYTHON, help="interpreter for the drift venv")
    parser.add_argument("--interpreter", help="an interpreter with the course's packages (no venv built)")
    parser.add_argument("--platform", choices=("auto", *PLATFORMS), default="auto",
                        help="where the lessons run: auto (a GPU when nvidia-smi lists one), cpu, gpu, tpu")
    parser.add_argument("--cuda", default="cuda12", help="JAX's CUDA extra for a GPU run (cuda12, cuda13)")
    parser.add_argument("--observed", type=Path,
                        help="make the report from this observation (what `observe OUT` wrote on "
                             "another machine) instead of running the lessons here")
    parser.add_argument("--check", action="store_true",
                        help=f"write nothing; exit 1 unless this JAX gives what "
                             f"{LAST_REPORT.relative_to(REPO)} says (the site's claim)")
    args = parser.parse_args(argv)
    if args.command == "observe":
        observe(args.out, args.platform, cells=args.cells, samples=not args.no_samples,
                page_timeout=args.page_timeout)
        return 0
    if not args.jax and not args.interpreter and not args.observed:
        parser.error("say which JAX: --jax VERSION (or --interpreter PATH, or --observed FILE)")
    built = (BUILD / "html" / "_static" / "rules.json").is_file()
    if args.observed:
        old = course_observation() if built else committed_observation()
        source = "_build/ holds it" if built else "book/drift_report.json records it"
        print(f"==> against the course's own build, as {source}")
        new = json.loads(args.observed.read_text())
        where = platform_of(new)
    else:
        where = choose_platform(args.platform)
        old = course_observation()
        python = args.interpreter or str(venv_for(args.jax, args.python, where, args.cuda))
        (BUILD / "drift").mkdir(parents=True, exist_ok=True)
        observed = BUILD / "drift" / "observed.json"
        # The drift venv has the pins only, not the course: run from the checkout's root,
        # where ``-m`` finds this module and the grader, as grade_samples runs the grader.
        subprocess.run([python, "-m", "scripts.drift", "observe", str(observed), "--platform", where],
                       cwd=REPO, check=True)
        new = json.loads(observed.read_text())
    report = make_report(old, new)
    if args.observed:  # made on another machine, from whatever checkout it had
        report.pop("inputs")
    rows = report["rows"]
    print("\n".join(drift_compare.format_report(rows, old["jax"], new["jax"])))
    last = report_path(where)
    if args.check:
        return check_against_last(report, last)
    text = report_text(report)
    (BUILD / "drift").mkdir(parents=True, exist_ok=True)
    kept = BUILD / "drift" / f"report-{new['jax']}{'' if where == CPU else '-' + where}.json"
    kept.write_text(text)
    last.write_text(text)
    print(f"==> report: {kept.relative_to(REPO)} and {last.relative_to(REPO)}")
    status, said = drift_compare.verdict(rows, new["jax"])
    print(f"==> {said}")
    return status


if __name__ == "__main__":
    sys.exit(main())
