"""Benchmarks: grading and site builds, each against its baseline, in one run.

    .venv/bin/python benchmarks/run.py [--class-size 200] [--nbgrader-size 10]

Prints each figure with its ratio to the baseline measured in this same run:
- cold floor: a fresh Python that imports JAX and compiles one add;
- a class of generated correct submissions graded by ``python -m autograder``,
  against ``class size x cold floor`` and against ``nbgrader autograde`` on the
  first ``--nbgrader-size`` of the same submissions (throughput, per second);
- one submission from command start to results.json, against the cold floor;
- the site: a clean build, a rebuild with nothing changed, and a rebuild after
  one lesson changed (notebooks executed, from myst-nb's log).
Timings are wall-clock seconds on this machine; run it on a quiet machine.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder.defaults import CHECKOUT as REPO, release_argv, site_build_argv
from tests.grading.helpers import SAMPLES, with_answer

BIN = Path(sys.executable).parent

EQUIVALENT = ["reference", "lambda_helper", "partial_decorator", "donate_argnames", "jnp_add",
              "jitted_entry_point", "prints_and_tries"]
ENV = dict(os.environ, JAX_PLATFORMS="cpu",
           PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")


def timed(argv, cwd=REPO):
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=ENV, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"failed: {' '.join(map(str, argv))}\n{proc.stderr[-3000:]}")
    return time.perf_counter() - start, proc


def cold_floor(runs=5):
    code = "import jax, jax.numpy as jnp; jax.jit(jnp.add)(1.0, 2.0).block_until_ready()"
    return statistics.median(timed([sys.executable, "-c", code])[0] for _ in range(runs))


def make_course(tmp, size):
    """A released copy of the nbgrader course and ``size`` submitted notebooks."""
    course = tmp / "course"
    course.mkdir()
    shutil.copy(REPO / "exercises" / "nbgrader_config.py", course)
    shutil.copytree(REPO / "exercises" / "source", course / "source")
    timed(release_argv("update_with_donate", BIN), cwd=course)
    release = json.loads((course / "release" / "update_with_donate" / "update_with_donate.ipynb")
                         .read_text())
    for i in range(size):
        source = (SAMPLES / f"{EQUIVALENT[i % len(EQUIVALENT)]}.py").read_text()
        nb = with_answer(release, f"# learner {i:04d}\n{source}")
        target = course / "submitted" / f"learner{i:04d}" / "update_with_donate"
        target.mkdir(parents=True)
        (target / "update_with_donate.ipynb").write_text(json.dumps(nb))
    return course


def grade_class(course, out):
    seconds, _ = timed([sys.executable, "-m", "autograder", course / "submitted", "--out", out])
    scores = [json.loads(p.read_text())["score"]
              for p in out.glob("*/update_with_donate/results.json")]  # <student>/<exercise>/
    assert scores and all(s == 10 for s in scores), "a correct submission lost points"
    return seconds, len(scores)


def nbgrader_class(course, size):
    """``nbgrader autograde`` (one process, its usual way) on the first ``size``."""
    theirs = course.parent / "nbgrader-course"
    shutil.copytree(course, theirs, ignore=shutil.ignore_patterns("submitted"))
    names = sorted(p.name for p in (course / "submitted").iterdir())[:size]
    for name in names:
        shutil.copytree(course / "submitted" / name, theirs / "submitted" / name)
    seconds, _ = timed([BIN / "nbgrader", "autograde", "update_with_donate", "--create",
                        "--log-level=ERROR"], cwd=theirs)
    return seconds, len(names)


def one_submission(course, tmp, runs=3):
    nb = next((course / "submitted").glob("*/update_with_donate/update_with_donate.ipynb"))
    times = []
    for i in range(runs):
        out = tmp / f"one{i}"
        t, _ = timed([sys.executable, "-m", "autograder", nb, "--out", out])
        assert (out / nb.parents[1].name / "update_with_donate" / "results.json").exists()
        times.append(t)
    return statistics.median(times)


def site_builds(tmp):
    """Clean build, no-change rebuild, one-lesson rebuild of a copy of the repo."""
    copy = tmp / "site"
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                           cwd=REPO, capture_output=True, text=True).stdout
    for rel in files.split():
        if (REPO / rel).is_file():
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, copy / rel)
    if (REPO / "node_modules").is_dir():
        shutil.copytree(REPO / "node_modules", copy / "node_modules", symlinks=True)
    shutil.copytree(REPO / "exercises" / "release", copy / "exercises" / "release")
    build = site_build_argv(BIN)  # make book's strict build
    results = {}
    for label in ("clean", "unchanged", "one lesson changed"):
        if label == "one lesson changed":
            lesson = copy / "book" / "lessons" / "donate_argnums.md"
            lesson.write_text(lesson.read_text() + "\n```{code-cell} ipython3\n1 + 1\n```\n")
        seconds, proc = timed(build, cwd=copy)
        log = proc.stdout + proc.stderr
        results[label] = (seconds, log.count("Executing notebook"))
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--class-size", type=int, default=200)
    parser.add_argument("--nbgrader-size", type=int, default=10)
    parser.add_argument("--skip-site", action="store_true")
    args = parser.parse_args()
    print(f"# benchmarks/run.py on {os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M %Z')}")
    floor = cold_floor()
    print(f"cold floor (fresh Python, import JAX, compile one add): {floor:.2f} s")
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        course = make_course(tmp, args.class_size)
        ours, n = grade_class(course, tmp / "grades")
        budget = n * floor
        print(f"python -m autograder, {n} correct submissions: {ours:.1f} s = "
              f"{ours / budget:.3f} x ({n} x cold floor = {budget:.0f} s)  [target <= 0.25]")
        theirs, m = nbgrader_class(course, args.nbgrader_size)
        rate_ours, rate_theirs = n / ours, m / theirs
        print(f"nbgrader autograde, first {m} of the same submissions: {theirs:.1f} s "
              f"({theirs / m:.2f} s each)")
        print(f"throughput: autograder {rate_ours:.2f}/s vs nbgrader {rate_theirs:.3f}/s = "
              f"{rate_ours / rate_theirs:.1f} x  [target >= 20]")
        one = one_submission(course, tmp)
        print(f"one submission, command start to results.json: {one:.2f} s = "
              f"{one / floor:.2f} x cold floor  [target <= 1.5]")
        if not args.skip_site:
            builds = site_builds(tmp)
            clean = builds["clean"][0]
            for label, (seconds, executed) in builds.items():
                print(f"site build, {label}: {seconds:.1f} s = {seconds / clean:.2f} x clean, "
                      f"{executed} notebook(s) executed")
            print("  [targets: unchanged <= 0.33 x clean with 0 executed; one lesson changed: 1 executed]")


if __name__ == "__main__":
    main()
