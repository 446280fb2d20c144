"""Benchmarks: grading and site builds, each against its baseline, in one run.

    .venv/bin/python benchmarks/run.py [--class-size 200] [--nbgrader-size 10]

Prints each figure with its ratio to the baseline measured in this same run:
- cold floor: a fresh Python that imports JAX and compiles one add;
- a class of generated correct submissions graded by ``python -m autograder``,
  against ``class size x cold floor`` and against ``nbgrader autograde`` on the
  first ``--nbgrader-size`` of the same submissions (throughput, per second), once
  without the grader's compile cache and once with it (warmed first, in a folder of
  this run's own; as root only), with the cache's hit rate and both runs' grades compared;
- one submission from command start to results.json, against the cold floor (with
  the cache where it runs);
- the site: a clean build, a rebuild with nothing changed, and a rebuild after
  one lesson changed (notebooks executed, from myst-nb's log).
Timings are wall-clock seconds on this machine; run it on a quiet machine.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder import load
from autograder.defaults import CHECKOUT as REPO, release_argv, site_build_argv
from tests.grading.helpers import SAMPLES, with_answer

BIN = Path(sys.executable).parent

EQUIVALENT = ["reference", "lambda_helper", "partial_decorator", "donate_argnames", "jnp_add",
              "jitted_entry_point", "prints_and_tries"]
ENV = dict(os.environ, JAX_PLATFORMS="cpu",
           PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")


def timed(argv, cwd=REPO, cache=""):
    """``(seconds, CompletedProcess)`` of ``argv``; ``cache`` is the compile cache's
    folder the grader uses ("": none)."""
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=dict(ENV, GRADER_COMPILE_CACHE=str(cache)),
                          capture_output=True, text=True)
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


def grade_class(course, out, cache=""):
    seconds, _ = timed([sys.executable, "-m", "autograder", course / "submitted", "--out", out],
                       cache=cache)
    scores = [json.loads(p.read_text())["score"]
              for p in out.glob("*/update_with_donate/results.json")]  # <student>/<exercise>/
    assert scores and all(s == 10 for s in scores), "a correct submission lost points"
    return seconds, len(scores)


def graded(out):
    """``{learner: results.json}`` of a graded class, without its wall time and with the
    addresses a learner's code printed of its objects (which differ from run to run)."""
    found = {}
    for path in out.glob("*/update_with_donate/results.json"):
        data = json.loads(path.read_text())
        data.pop("execution_time", None)
        found[path.parts[-3]] = re.sub(r"0x[0-9a-f]+", "0x", json.dumps(data, sort_keys=True))
    return found


def hit_rate(course, cache, count=20):
    """``(hits, compiles)`` of the compile cache in the learner processes of the first
    ``count`` submissions, graded here in the sandbox (the grader's own zygote)."""
    from autograder import sandbox

    os.environ["GRADER_COMPILE_CACHE"] = str(cache)
    sandbox.shared().launch(["update_with_donate"])
    hits = compiles = 0
    paths = sorted((course / "submitted").glob("*/update_with_donate/*.ipynb"))[:count]
    limits = sandbox.Limits()
    for path in paths:
        sub = load.read(path.parts[-3], path, exercise="update_with_donate")
        request = {"exercise": sub.exercise, "seed": 1, "memory_mib": limits.memory_mib,
                   "hide": [], "cells": [{"label": c.label, "source": c.source} for c in sub.cells]}
        counts = (sandbox.run(request, limits).reply or {}).get("compile_cache") or {}
        hits += counts.get("hits", 0)
        compiles += counts.get("hits", 0) + counts.get("misses", 0)
    sandbox.shared().stop()
    return hits, compiles


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


def one_submission(course, tmp, runs=3, cache=""):
    nb = next((course / "submitted").glob("*/update_with_donate/update_with_donate.ipynb"))
    times = []
    for i in range(runs):
        out = Path(tempfile.mkdtemp(prefix=f"one{i}-", dir=tmp))  # nothing kept from a run before
        t, _ = timed([sys.executable, "-m", "autograder", nb, "--out", out], cache=cache)
        assert (out / nb.parents[1].name / "update_with_donate" / "results.json").exists()
        times.append(t)
    return statistics.median(times)


def compile_cache_folder(tmp):
    """A compile cache of this run's own, warmed, or None where it cannot be used (not
    root); says how long warming took."""
    from autograder.sandbox import compile_cache, warm

    folder = tmp / "compile-cache"
    why = compile_cache.problem(folder)
    if why:
        print(f"compile cache: not used ({why})")
        return None
    start = time.perf_counter()
    warm.warm_all(["update_with_donate"], folder=folder)
    print(f"compile cache: warmed in {time.perf_counter() - start:.1f} s "
          "(every sample answer's and the probe's programs, once per grading version)")
    return folder


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
    print(f"# benchmarks/run.py on {os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M %Z')}, "
          f"load average {os.getloadavg()[0]:.1f}")
    floor = cold_floor()
    print(f"cold floor (fresh Python, import JAX, compile one add): {floor:.2f} s")
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        course = make_course(tmp, args.class_size)
        ours, n = grade_class(course, tmp / "grades")
        budget = n * floor
        print(f"python -m autograder, {n} correct submissions, no compile cache: {ours:.1f} s = "
              f"{ours / budget:.3f} x ({n} x cold floor = {budget:.0f} s)  [target <= 0.25]")
        cache = compile_cache_folder(tmp)
        if cache:
            cached, _ = grade_class(course, tmp / "grades-cached", cache)
            without, with_ = graded(tmp / "grades"), graded(tmp / "grades-cached")
            same = without == with_
            hits, compiles = hit_rate(course, cache)
            print(f"python -m autograder, the same {n} with the compile cache: {cached:.1f} s = "
                  f"{cached / budget:.3f} x; hit rate {hits}/{compiles} = "
                  f"{hits / max(compiles, 1):.0%} of compiles; grades "
                  f"{'identical' if same else 'DIFFERENT'} with and without it")
            for learner in sorted(k for k in without if without[k] != with_.get(k))[:3]:
                print(f"  {learner}: without {without[learner][:600]}\n  with {with_.get(learner, '')[:600]}")
        theirs, m = nbgrader_class(course, args.nbgrader_size)
        rate_theirs = m / theirs
        print(f"nbgrader autograde, first {m} of the same submissions: {theirs:.1f} s "
              f"({theirs / m:.2f} s each)")
        for label, seconds in (("no compile cache", ours), ("compile cache", cached if cache else None)):
            if seconds:
                print(f"throughput ({label}): autograder {n / seconds:.2f}/s vs nbgrader "
                      f"{rate_theirs:.3f}/s = {n / seconds / rate_theirs:.1f} x  [target >= 30]")
        for label, folder in (("no compile cache", ""), ("compile cache", cache)):
            if folder is not None:
                one = one_submission(course, tmp, cache=folder)
                print(f"one submission ({label}), command start to results.json: {one:.2f} s = "
                      f"{one / floor:.2f} x cold floor  [target <= 1.0]")
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")
        if not args.skip_site:
            builds = site_builds(tmp)
            clean = builds["clean"][0]
            for label, (seconds, executed) in builds.items():
                print(f"site build, {label}: {seconds:.1f} s = {seconds / clean:.2f} x clean, "
                      f"{executed} notebook(s) executed")
            print("  [targets: unchanged <= 0.33 x clean with 0 executed; one lesson changed: 1 executed]")


if __name__ == "__main__":
    main()
