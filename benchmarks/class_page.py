"""Benchmark: the instructors' class page for a class of 200 and of 2,000.

    .venv/bin/python benchmarks/class_page.py [--sizes 200 2000] [--exercises 4] [--repeat 3]

For each size: a SQLite store in a temporary folder holding, per learner and
exercise, one graded submission (two for a quarter of them) whose failed checks carry ``Got:`` lines in a
few shapes with varying numbers (as a class's are), and one lesson run; then the
page the service answers at ``<prefix>class`` is made from it as the handler
makes it (:func:`class_stats.class_data`, then :func:`class_page.render`), best
of ``--repeat``, drawn fresh (the plots' cache emptied) and drawn again. Prints the
seconds of each part, the page's size, and the
2,000-learner page's time as a ratio to the 200-learner one (10 x the learners).
Rows are written straight into the store's table as graded submissions (the
tests fill theirs through the service): this measures the page, not grading.
"""
import argparse
import json
import random
import secrets
import tempfile
import time
from pathlib import Path

from autograder.exercises import names
from autograder.judge import hidden_tests
from autograder.results import CheckResult, GradingResult
from autograder.service.class_views import class_page, class_plots, class_stats
from autograder.service.store import Store
from autograder.service.store.schema import submissions

SHAPES = ("jit__lambda donates {a} of its {b} arguments; state still alive",
          "max abs error {a}.5 at index ({b}, {a})", "float{b}[{a}] instead of float32[{a}]")


def fill(store, learners, exercises, rng):
    """Graded rows as :meth:`Store.finish` leaves them, in one transaction (the
    store's own calls take a synchronous commit each: minutes for 2,000 learners)."""
    start, rows = time.time() - 86400, []
    for exercise in exercises:
        checks = hidden_tests(exercise)
        for i in range(learners):
            for _ in range(1 + (i % 4 == 0)):  # a quarter of the class resubmitted
                at = start + rng.uniform(0, 86400)
                rows.append({"id": secrets.token_urlsafe(24), "learner": f"learner{i:05d}",
                             "exercise": exercise, "notebook": b"{}", "client": "bench",
                             "status": "done", "submitted_at": at, "started_at": at,
                             "finished_at": at + 1, "graded": 1,
                             "result": json.dumps(_result(checks, rng).to_record())})
    with store.engine.begin() as conn:
        conn.execute(submissions.insert(), rows)
    for i in range(learners):
        store.record_run(f"learner{i:05d}", "lifetimes")


def _result(checks, rng):
    out = []
    for name, title, points in checks:
        ok = rng.random() < 0.7
        got = rng.choice(SHAPES).format(a=rng.randrange(4), b=rng.randrange(2, 65))
        out.append(CheckResult(name, title, points if ok else 0, points, "passed" if ok else "failed",
                               "" if ok else f"Checked: f(state)\nExpected: x\nGot: {got}\nHint: h"))
    return GradingResult(out, "", "graded", "bench", 1.0)


def measure(size, exercises, repeat):
    """``{"fresh": (data s, render s), "cached": (...)}`` and the page's bytes."""
    with tempfile.TemporaryDirectory(prefix="class-page-") as tmp:
        store = Store(Path(tmp) / "grading.db")
        fill(store, size, exercises, random.Random(size))
        best = {}
        for kind in ("fresh", "cached"):
            for _ in range(repeat):
                if kind == "fresh":
                    for plot in (class_plots._pass_rates, class_plots._distribution,
                                 class_plots._timeline):
                        plot.cache_clear()
                start = time.perf_counter()
                data = class_stats.class_data(store, "best")
                middle = time.perf_counter()
                html = class_page.render(data)
                times = (middle - start, time.perf_counter() - middle)
                if kind not in best or sum(times) < sum(best[kind]):
                    best[kind] = times
        store.engine.dispose()
        return best, len(html)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[200, 2000])
    p.add_argument("--exercises", type=int, default=len(names()))
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    exercises = names()[:args.exercises]
    totals = {}
    for size in args.sizes:
        best, size_bytes = measure(size, exercises, args.repeat)
        for kind, (data_s, render_s) in best.items():
            totals[(size, kind)] = data_s + render_s
            print(f"{size} learners x {len(exercises)} exercises, plots {kind}: "
                  f"{data_s + render_s:.3f} s (store to numbers {data_s:.3f} s, HTML and plots "
                  f"{render_s:.3f} s)")
        print(f"  page: {size_bytes / 2**20:.1f} MiB of HTML")
    if len(args.sizes) > 1:
        small, large = args.sizes[0], args.sizes[-1]
        for kind in ("fresh", "cached"):
            print(f"{large} / {small} learners, plots {kind}: "
                  f"{totals[(large, kind)] / totals[(small, kind)]:.2f} x the time for "
                  f"{large / small:g} x the learners")


if __name__ == "__main__":
    main()
