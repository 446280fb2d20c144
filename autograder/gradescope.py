"""Gradescope autograders: one zip per exercise, graded by the course's own pipeline.

``python -m autograder gradescope EXERCISE --out DIR`` writes
``DIR/EXERCISE-gradescope.zip`` as Gradescope's autograder specification
(gradescope-autograders.readthedocs.io, "Autograder Specifications") asks:
``setup.sh`` and ``run_autograder`` at the root of the zip. Gradescope
unpacks the zip into ``/autograder/source``, runs ``setup.sh`` once when it
builds the image, then for each upload runs ``run_autograder`` with the
learner's files in ``/autograder/submission`` and reads
``/autograder/results/results.json``. ``GRADESCOPE_ROOT`` moves
``/autograder`` (tests lay out a temporary folder the same way).

The zip holds the grader modules grading imports, this exercise's probe and
hidden tests only, the instructor's read-only cells (never a solution cell)
and the pins of requirements.txt that grading needs. :func:`grade_upload` is what
``run_autograder`` calls: :mod:`autograder.pipeline`'s steps, unchanged, and
:func:`for_gradescope` at the edge.
"""
import argparse
import ast
import dataclasses
import importlib.metadata
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

from autograder import defaults, exercises, load, options, pipeline, results, sandbox

ROOT_ENV = "GRADESCOPE_ROOT"
# Top-level results.json fields Gradescope documents (specs page, "Output format").
RESULT_FIELDS = ("score", "execution_time", "output", "output_format", "test_output_format",
                 "test_name_format", "visibility", "stdout_visibility", "extra_data", "tests",
                 "leaderboard")
REQUIREMENTS = sandbox.REPO / "requirements.txt"
STAMP = (1980, 1, 1, 0, 0, 0)  # fixed zip entry times: the same course gives the same zip
FAULT_TEST = "Grader fault (instructors only)"
NOT_GRADED = ("The autograder could not start on this submission; "
              "please tell your instructor (details are in the autograder's stdout).")

SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder's image. The
# course's JAX needs Python 3.12 or newer: a python3.12 or python3.13 the image has is
# used; else Ubuntu's python3.12 package (Ubuntu 24.04), else, on Ubuntu 22.04
# (Gradescope's default base image, whose python3 is 3.10), the deadsnakes PPA's.
# Then the course's exact pins from requirements.txt go into a venv.
set -euo pipefail
ROOT="${GRADESCOPE_ROOT:-/autograder}"
SOURCE="$ROOT/source"
PY=""
for candidate in python3.12 python3.13; do
  if command -v "$candidate" >/dev/null && "$candidate" -c 'import ensurepip' 2>/dev/null; then
    PY="$candidate"; break
  fi
done
if [ -z "$PY" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  if ! apt-cache show python3.12-venv >/dev/null 2>&1; then
    apt-get install -y --no-install-recommends software-properties-common gpg-agent
    add-apt-repository -y ppa:deadsnakes/ppa
    apt-get update
  fi
  apt-get install -y --no-install-recommends python3.12 python3.12-venv
  PY=python3.12
fi
"$PY" -m venv "$SOURCE/.venv"
"$SOURCE/.venv/bin/python" -m pip install --no-cache-dir -r "$SOURCE/requirements.txt"
# Learner code runs as an unprivileged uid: it must read the grader and the venv
# (the hidden tests are made root-only again before each grading).
chmod a+rx "$ROOT" "$SOURCE"
chmod -R a+rX "$SOURCE/autograder" "$SOURCE/.venv"
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this for every upload. It grades /autograder/submission with
# the course's sandboxed grader and always leaves /autograder/results/results.json.
ROOT="${{GRADESCOPE_ROOT:-/autograder}}"
mkdir -p "$ROOT/results"
rm -f "$ROOT/results/results.json"
(cd "$ROOT/source" && JAX_PLATFORMS=cpu .venv/bin/python -m autograder.gradescope run {args})
if [ ! -s "$ROOT/results/results.json" ]; then
  cat > "$ROOT/results/results.json" <<'RESULTS'
{fallback}
RESULTS
fi
exit 0
"""


def build(exercise, out_dir, visibility=defaults.VISIBILITIES[0], limits=None):
    """Write ``out_dir/<exercise>-gradescope.zip``; return its path.

    ``visibility`` is each hidden test's Gradescope visibility (one of
    :data:`~autograder.defaults.VISIBILITIES`); ``limits`` (a :class:`~autograder.sandbox.Limits`)
    are baked into ``run_autograder``. Raises ValueError for an unknown
    exercise or a needed package that requirements.txt does not pin, and
    subprocess.CalledProcessError when the exercise's probe, hidden tests or
    notebook imports cannot be imported here.
    """
    exercises.get(exercise)  # ValueError for an unknown exercise
    limits = limits or sandbox.Limits()
    modules, dists = _imports(exercise)
    args = (f"{exercise} --visibility {visibility} --timeout {limits.seconds:g} "
            f"--memory-mib {limits.memory_mib}")
    fallback = pipeline.fault(exercise, RuntimeError("run_autograder could not start"))
    fallback = for_gradescope(dataclasses.replace(fallback, output=NOT_GRADED, fault=""), visibility)
    files = {"setup.sh": SETUP_SH,
             "run_autograder": RUN_AUTOGRADER.format(args=args,
                                                     fallback=json.dumps(fallback)),
             "requirements.txt": pins(dists),
             f"exercises/source/{exercise}/{exercise}.ipynb": _read_only_notebook(exercise)}
    for path in modules:
        files[path] = (sandbox.REPO / path).read_text("utf-8")
    out = Path(out_dir) / f"{exercise}-gradescope.zip"
    # It holds the hidden tests: the zip is the builder's alone (mode 0600) from its
    # first byte, wherever --out points; a folder made for it is too (0700). An
    # existing folder keeps its mode (--out /tmp must not close /tmp).
    out.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")  # renamed into place: never half a zip
    tmp.unlink(missing_ok=True)  # a leftover keeps its mode through O_CREAT
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as raw, \
            zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, STAMP)
            mode = 0o755 if name in ("setup.sh", "run_autograder") else 0o644
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, files[name])
    os.replace(tmp, out)
    return out


def _read_only_notebook(exercise):
    """The instructor's read-only cells (what grading restores), as a notebook's JSON."""
    cells = [{**c, **({"outputs": [], "execution_count": None} if c["cell_type"] == "code" else {})}
             for c in load.instructor_cells(exercise).values()]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 4},
                      indent=1) + "\n"


_LIST_IMPORTS = """\
import importlib, json, sys
before = set(sys.modules)
for name in sys.argv[2:]:
    importlib.import_module(name)
from autograder.sandbox import learner
learner.preload([sys.argv[1]])  # what the zygote imports for this exercise
print(json.dumps({n: getattr(m, "__file__", None) for n, m in sys.modules.items() if n not in before}))
"""


def _imports(exercise):
    """``(repo-relative grader files, distributions)`` that grading ``exercise`` imports.

    Found by importing, in a fresh interpreter, the probe and hidden tests,
    what ``run_autograder`` and the sandbox's zygote, supervisor and learner's
    process import, and what the exercise's notebook imports (its answer's
    packages included).
    """
    entries = [f"autograder.exercises.{exercise}.probe", f"autograder.exercises.{exercise}.hidden.tests",
               "autograder.gradescope", "autograder.sandbox.zygote", "autograder.exercises.common",
               "IPython.core.inputtransformer2", "nbformat", *_notebook_imports(exercise)]
    proc = subprocess.run([sys.executable, "-c", _LIST_IMPORTS, exercise, *entries], cwd=sandbox.REPO,
                          env=dict(os.environ, JAX_PLATFORMS="cpu"),
                          capture_output=True, text=True, check=True)
    loaded = json.loads(proc.stdout.splitlines()[-1])
    files = sorted(str(Path(f).resolve().relative_to(sandbox.REPO)) for n, f in loaded.items()
                   if f and (n == "autograder" or n.startswith("autograder.")))
    by_module = importlib.metadata.packages_distributions()
    dists = {d for n in loaded if "." not in n for d in by_module.get(n, ())}
    return files, dists


def _notebook_imports(exercise):
    """Top-level packages the exercise's source notebook imports (never ``autograder``)."""
    path = exercises.get(exercise).source
    names = set()
    for cell in json.loads(path.read_text("utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        try:
            tree = ast.parse("".join(cell["source"]))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return sorted(names - {"autograder"})


def pins(dists):
    """requirements.txt's lines for ``dists`` and everything they require, in its order.

    Requirements are followed as pip would on this interpreter (markers
    evaluated, extras only when asked for). Raises ValueError when one is not pinned.
    """
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    lines = {}
    for line in REQUIREMENTS.read_text("utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            lines[canonicalize_name(Requirement(line).name)] = line
    needed, todo = set(), [(d, frozenset()) for d in dists]
    while todo:
        name, extras = todo.pop()
        key = canonicalize_name(name)
        if (key, extras) in needed:
            continue
        needed.add((key, extras))
        if key not in lines:
            raise ValueError(f"grading needs {name}, which requirements.txt does not pin")
        for text in importlib.metadata.requires(name) or ():
            req = Requirement(text)
            if not req.marker or any(req.marker.evaluate({"extra": e}) for e in extras or {""}):
                todo.append((req.name, frozenset(req.extras)))
    keys = {k for k, _ in needed}
    return "".join(line + "\n" for key, line in lines.items() if key in keys)


def for_gradescope(result, visibility):
    """Gradescope's results.json for a :class:`~autograder.results.GradingResult`,
    cut to Gradescope's documented fields.

    Each test gets ``visibility``; the overall output is shown as plain
    text (it can quote the learner's code and messages, never HTML). A grader
    fault's traceback (it may name hidden test files) is for instructors only:
    in ``extra_data`` and in one more test of ``visibility: hidden`` worth 0 points.
    """
    out = {k: v for k, v in result.for_instructor(visibility).items() if k in RESULT_FIELDS}
    out["output_format"] = "text"
    if result.fault:
        out["tests"].append(results.CheckResult(
            "grader_fault", FAULT_TEST, 0, 0, "failed", result.fault).to_gradescope("hidden"))
    return out


def grade_upload(root, exercise, visibility=defaults.VISIBILITIES[0], limits=None):
    """Grade the upload under ``root``/submission into ``root``/results/results.json.

    Returns the :class:`~autograder.results.GradingResult`. Never raises for a
    learner's upload: a grader fault still writes a result (status "error").
    """
    root = Path(root)
    sink = ResultsJson(root / "results" / "results.json", visibility)
    pipeline.grade_all(Upload(root, exercise), sink, limits or sandbox.Limits())
    return sink.result


class Upload:
    """The one notebook or ``.py`` file of ``root``/submission (:mod:`autograder.pipeline`'s
    source): several files, or none, give an ``unreadable`` submission that says so.
    Files under hidden folders (``.git``, ``__MACOSX``) do not count."""

    def __init__(self, root, exercise):
        self.upload, self.private = root / "submission", root / "results"
        self.private.mkdir(parents=True, exist_ok=True)
        self.hide = pipeline.hidden_dirs([self.upload, self.private])
        found = load.find([self.upload])[0] if self.upload.is_dir() else []
        found = [f for f in found if not any(p.startswith((".", "__MACOSX"))
                                             for p in f[1].relative_to(self.upload).parts)]
        if len(found) == 1:
            name, path, _ = found[0]
            self.sub = load.read(name, path, None, exercise)
        else:
            self.sub = load.Submission(name="submission", path=self.upload, exercise=exercise,
                                       unreadable=_upload_problem(self.upload, found, exercise))

    def exercises(self):
        runs = not self.sub.unreadable and self.sub.attempted  # else no need for JAX
        return [self.sub.exercise] if runs else []

    def submissions(self):
        return [self.sub]


class ResultsJson:
    """Gradescope's ``results.json`` at ``path`` (:func:`for_gradescope`); keeps no
    earlier result (Gradescope grades each upload afresh)."""

    def __init__(self, path, visibility):
        self.path, self.visibility, self.result = path, visibility, None

    def kept(self, sub, hex_digest):
        return None

    def put(self, sub, result):
        self.result = result
        results.atomic_write(self.path, json.dumps(for_gradescope(result, self.visibility),
                                                   indent=2) + "\n")

    def close(self):
        pass


def _upload_problem(upload, found, exercise):
    """Plain words for an upload holding no notebook or ``.py`` file, or several."""
    if found:
        names = ", ".join(str(p.relative_to(upload)) for _, p, _ in found)
        return (f"several files were uploaded ({names}); upload only your notebook "
                f"({exercise}.ipynb) or one .py file")
    others = sorted(str(p.relative_to(upload)) for p in upload.rglob("*") if p.is_file()) \
        if upload.is_dir() else []
    return ("no notebook (.ipynb) or .py file was uploaded"
            + (f" (found only {', '.join(others[:10])})" if others else "")
            + f"; upload your {exercise}.ipynb")


def build_main(argv):
    """``python -m autograder gradescope EXERCISE --out DIR``: build one zip."""
    p = argparse.ArgumentParser(prog="python -m autograder gradescope",
                                description="Write DIR/EXERCISE-gradescope.zip for Gradescope.")
    p.add_argument("exercise", choices=exercises.names())
    p.add_argument("--out", required=True, help="folder for the zip")
    options.add(p, *defaults.GRADESCOPE)
    args = p.parse_args(argv)
    path = build(args.exercise, args.out, args.visibility,
                 sandbox.Limits(seconds=args.timeout, memory_mib=args.memory_mib))
    print(path)
    return 0


def parse_run(argv):
    """The options of ``python -m autograder.gradescope run EXERCISE ...``."""
    p = argparse.ArgumentParser(prog="python -m autograder.gradescope")
    p.add_argument("command", choices=["run"])
    p.add_argument("exercise", choices=exercises.names())
    options.add(p, *defaults.GRADESCOPE)
    return p.parse_args(argv)


def main(argv=None):
    """``python -m autograder.gradescope run EXERCISE ...``: what ``run_autograder`` calls."""
    args = parse_run(argv)
    root = Path(os.environ.get(ROOT_ENV) or "/autograder")
    start = time.monotonic()
    result = grade_upload(root, args.exercise, args.visibility,
                          sandbox.Limits(seconds=args.timeout, memory_mib=args.memory_mib))
    # For the instructor only (Gradescope keeps stdout from learners by default).
    print(f"{defaults.points_text(result.score)}/{defaults.points_text(result.max_score)} {result.status} "
          f"in {time.monotonic() - start:.1f} s: {result.output[:200]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
