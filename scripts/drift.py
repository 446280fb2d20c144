"""The drift report: the course's rules, glued values and sample grades on another JAX.

    make drift JAX=0.10.2      # DRIFT_PYTHON=... for another interpreter than Debian's 3.11
    make drift JAX=0.12.0.1    # on a machine with a CUDA GPU: the lessons run on the GPU

builds a throwaway venv (``_build/drift/jax-<version>-py<x.y>/``: what the lessons and
the grader import, at requirements.txt's pins, with JAX's changed, from the same registries), executes every lesson there
(jupytext + nbclient, every rule recorded, none stopping the lesson) and grades every
exercise's sample answers with the course's grader, then compares with the course's
own build (``_build/html/_static/rules.json``, myst-nb's glue caches) and each
sample's ``expected.json``, and prints rule by rule, value by value and sample by
sample: same, changed (old -> new) or failed (the error). It writes the full report
to ``_build/drift/report-<version>.json`` and the last one to ``book/drift_report.json``
(committed: the lessons' lists say from it on which JAX their rules were also checked).

On a machine with a CUDA GPU (``nvidia-smi -L`` lists one; ``--platform cpu`` or
``gpu`` decides instead of looking) the venv gets JAX's CUDA plugin
(``jax[cuda12]``), the lessons run with ``JAX_PLATFORMS=cuda``, and the report,
which records the platform and device kind it ran on (``jax.default_backend()``,
``jax.devices()[0].device_kind``), goes to ``book/drift_report_gpu.json``: each lesson
then also says which of its rules held on that GPU. A CPU run leaves that file alone.

``--interpreter PATH`` uses an existing interpreter that has the course's packages
instead of building a venv. The ``observe`` subcommand is what runs inside it.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from autograder.defaults import CHECKOUT as REPO, DRIFT_PYTHON  # standard library only
from scripts import drift_compare

BUILD = REPO / "_build"
LESSONS = REPO / "book" / "lessons"
PAGES = [REPO / "book" / "intro.md", *sorted(LESSONS.glob("*.md"))]  # the pages that assert rules
SAMPLES = REPO / "autograder" / "exercises"
LAST_REPORT = REPO / "book" / "drift_report.json"
GPU_REPORT = REPO / "book" / "drift_report_gpu.json"  # the last run on a GPU, when one was made
CPU, GPU = "cpu", "gpu"
# What JAX_PLATFORMS names in the observing process: the GPU run must not fall back to the CPU.
JAX_PLATFORM_OF = {CPU: "cpu", GPU: "cuda"}
GLUE_PREFIX = "application/papermill.record/"


# What executing the lessons and grading the samples imports, at the course's pins; their
# own dependencies are left to pip, so another Python (Debian's 3.11.2, say) still
# resolves: the full requirements.txt pins packages that need a newer patch release.
DRIFT_PACKAGES = ("numpy", "optax", "matplotlib", "myst-nb", "ipykernel", "nbclient", "jupytext",
                  "nbformat", "nbgrader", "pytest", "tqdm", "packaging")


def drift_requirements(jax_version: str, platform_name: str = CPU, cuda: str = "cuda12") -> str:
    """requirements.txt's pins of :data:`DRIFT_PACKAGES`, and JAX at ``jax_version``;
    for ``platform_name`` "gpu" with JAX's ``cuda`` extra (its CUDA plugin and libraries)."""
    pins = dict(re.findall(r"(?m)^([A-Za-z0-9_.-]+)==(\S+)$", (REPO / "requirements.txt").read_text()))
    extra = f"[{cuda}]" if platform_name == GPU else ""
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
    return GPU_REPORT if platform_name == GPU else LAST_REPORT


def venv_for(jax_version: str, python: str, platform_name: str = CPU, cuda: str = "cuda12") -> Path:
    """The drift venv's interpreter, created and installed once per (JAX, Python,
    platform): ``..-cuda12`` for a GPU run."""
    minor = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                           capture_output=True, text=True, check=True).stdout.strip()
    suffix = f"-{cuda}" if platform_name == GPU else ""
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


def observe_lesson(path: Path) -> tuple[list, dict, list]:
    """Execute one page (a MyST notebook); its rule records, glued values and
    unexpected errors."""
    import jupytext
    from nbclient import NotebookClient

    nb = jupytext.read(path)
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    page = path.relative_to(REPO).with_suffix("").as_posix()
    glue, errors = {}, []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            glue.update(_glued(cell))
            errors += _errors(cell, index)
    records = json.loads(glue.pop("rules_records", "[]"))
    glue.pop("rules_asserted", None)
    return [dict(r, page=page) for r in records], glue, errors


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


def observe(out: Path, platform_name: str = CPU) -> None:
    # before JAX is imported, here and in every kernel the lessons run in
    os.environ.update({"COURSE_RULES_KEEP_GOING": "1", "JAX_PLATFORMS": JAX_PLATFORM_OF[platform_name],
                       "TF_CPP_MIN_LOG_LEVEL": "3"})
    import platform

    import jax

    from autograder import exercises

    found = {"jax": jax.__version__, "python": platform.python_version(), **platform_record(),
             "rules": [], "glue": {}, "errors": {}, "samples": {}}
    print(f"==> running on {found['platform']} ({found['device_kind']}, {found['device_count']} "
          f"devices)", flush=True)
    for path in PAGES:
        print(f"==> executing {path.relative_to(REPO)} on JAX {jax.__version__}", flush=True)
        records, glue, errors = observe_lesson(path)
        page = path.relative_to(REPO).with_suffix("").as_posix()
        found["rules"] += records
        found["glue"][page], found["errors"][page] = glue, errors
    for exercise in exercises.names():
        print(f"==> grading the samples of {exercise}", flush=True)
        found["samples"].update(grade_samples(exercise))
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
    observer.add_argument("--platform", choices=(CPU, GPU), default=CPU)
    parser.add_argument("--jax", help="the other JAX release, e.g. 0.10.2")
    parser.add_argument("--python", default=DRIFT_PYTHON, help="interpreter for the drift venv")
    parser.add_argument("--interpreter", help="an interpreter with the course's packages (no venv built)")
    parser.add_argument("--platform", choices=("auto", CPU, GPU), default="auto",
                        help="where the lessons run: auto (a GPU when nvidia-smi lists one), cpu, gpu")
    parser.add_argument("--cuda", default="cuda12", help="JAX's CUDA extra for a GPU run (cuda12, cuda13)")
    parser.add_argument("--check", action="store_true",
                        help=f"write nothing; exit 1 unless this JAX gives what "
                             f"{LAST_REPORT.relative_to(REPO)} says (the site's claim)")
    args = parser.parse_args(argv)
    if args.command == "observe":
        observe(args.out, args.platform)
        return 0
    if not args.jax and not args.interpreter:
        parser.error("say which JAX: --jax VERSION (or --interpreter PATH)")
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
    rows = drift_compare.compare(old, new)
    print("\n".join(drift_compare.format_report(rows, old["jax"], new["jax"])))
    report = {"old_jax": old["jax"], "new_jax": new["jax"], "python": new["python"],
              "platform": new.get("platform", CPU), "device_kind": new.get("device_kind", CPU),
              "date": datetime.date.today().isoformat(), "rows": rows}
    last = report_path(where)
    if args.check:
        return check_against_last(report, last)
    text = report_text(report)
    kept = BUILD / "drift" / f"report-{new['jax']}{'-gpu' if where == GPU else ''}.json"
    kept.write_text(text)
    last.write_text(text)
    print(f"==> report: {kept.relative_to(REPO)} and {last.relative_to(REPO)}")
    return 1 if drift_compare.drifted(rows) else 0


if __name__ == "__main__":
    sys.exit(main())
