"""Command line: ``python -m autograder PATH... --out DIR``.

Grades files (``DIR/<stem>/results.json``) and nbgrader ``submitted/`` trees,
every exercise of every learner (``DIR/<student>/<exercise>/results.json``);
``DIR/summary.csv`` has a row for each, with its exercise.

``python -m autograder gradescope EXERCISE --out DIR`` builds a Gradescope
autograder zip instead (:mod:`autograder.gradescope`).

Prints one line per submission and exits 0 when every submission got a
results.json, whatever the scores (2 on bad usage, 1 if a result could not be
written). Rerunning the same command grades only submissions that are new or
changed since their results.json was written.
"""
import argparse
import os
import queue
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed

from tqdm import tqdm

from autograder import defaults, pipeline, sandbox
from autograder.exercises import names as exercise_names


def parse(argv):
    p = argparse.ArgumentParser(prog="python -m autograder", description=__doc__.splitlines()[0],
                                epilog="python -m autograder gradescope EXERCISE --out DIR "
                                       "builds a Gradescope autograder zip (see its --help).")
    p.add_argument("paths", nargs="+", help=".ipynb or .py files, or folders such as nbgrader's submitted/")
    p.add_argument("--out", required=True, help="folder for <name>/results.json and summary.csv")
    p.add_argument("--exercise", choices=exercise_names(),
                   help="the exercise files answer (default: from the path); in an nbgrader "
                        "tree, grade only this exercise's notebooks")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel submissions (default: cores)")
    p.add_argument("--timeout", type=float, default=defaults.CLI_TIMEOUT_S,
                   help=f"seconds per submission (default {defaults.CLI_TIMEOUT_S:g})")
    p.add_argument("--memory-mib", type=int, default=defaults.MEMORY_MIB,
                   help=f"address-space limit per submission, in MiB (default {defaults.MEMORY_MIB})")
    p.add_argument("--force", action="store_true", help="regrade even unchanged submissions")
    return p.parse_args(argv)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["gradescope"]:
        from autograder import gradescope

        return gradescope.build_main(argv[1:])
    args = parse(argv)
    missing = [p for p in args.paths if not os.path.lexists(p)]
    if missing:  # a typo must not become a learner's zero
        print(f"no such file or folder: {', '.join(missing)}; nothing graded", file=sys.stderr)
        return 2
    found, skipped = pipeline.find(args.paths)
    for path, reason in skipped:
        print(f"skipped {path}: {reason}", file=sys.stderr)
    found = _only(found, args.exercise)
    limits = sandbox.Limits(seconds=args.timeout, memory_mib=args.memory_mib)
    os.makedirs(args.out, exist_ok=True)
    # The zygote imports JAX while the submissions are read.
    pipeline.prepare({args.exercise or pipeline.exercise_for(p, a) for _, p, a in found}, args.out)
    subs = [pipeline.load(name, path, assignment, args.exercise)
            for name, path, assignment in found]
    if not subs:
        print("no submissions found (looked for .ipynb and .py files)", file=sys.stderr)
        return 2
    todo = []
    for sub in subs:
        digest = pipeline.digest(sub, limits)
        done = None if args.force else pipeline.reported(args.out, sub.name, digest)
        if done:
            print(f"{sub.name}: {done['score']:g}/{done['max_score']:g} unchanged, kept")
            continue
        todo.append((sub, digest))
    hide = pipeline.hidden_dirs([*args.paths, args.out])
    failures = _grade_all(todo, limits, args, hide)
    pipeline.summarize(args.out)
    return 1 if failures else 0


def _only(found, exercise):
    """``found`` without an nbgrader tree's notebooks of exercises other than ``exercise``
    (None: all): a tree says which exercise each notebook answers, so ``--exercise``
    picks among them instead of grading the others as answers to it."""
    if exercise is None:
        return found
    kept = [f for f in found if f[2] in (None, exercise)]
    if len(kept) < len(found):
        print(f"--exercise {exercise}: left out {len(found) - len(kept)} notebooks of "
              "other exercises in the nbgrader tree", file=sys.stderr)
    return kept


def _grade_all(todo, limits, args, hide):
    slots = queue.Queue()
    for slot in range(max(1, args.jobs)):
        slots.put(slot)

    def grade(sub, digest):
        slot = slots.get()
        try:
            return pipeline.grade(sub, limits, slot, digest, hide)
        finally:
            slots.put(slot)

    failures = 0
    # tqdm shows count, rate and time left on a terminal, and stays silent otherwise.
    bar = tqdm(total=len(todo), unit="submission", disable=None, file=sys.stderr,
               bar_format="{l_bar}{bar}| {n}/{total} [{elapsed}<{remaining}, {rate_fmt}]")
    with bar, ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(grade, sub, digest): (sub, digest) for sub, digest in todo}
        for future in as_completed(futures):
            sub, digest = futures[future]
            failures += _finish(sub, digest, future, args.out, bar)
            bar.update()
    return failures


def _finish(sub, digest, future, out_dir, bar):
    try:
        result = future.result()
    except Exception as exc:  # a grader fault must still give this learner a result
        result = pipeline.grader_fault(sub.exercise, exc, digest)
    try:
        pipeline.report(out_dir, sub.name, result)
    except OSError as exc:
        print(f"{sub.name}: could not write results ({exc})", file=sys.stderr)
        return 1
    bar.write(f"{sub.name}: {result.score:g}/{result.max_score:g} {result.status} "
              f"({result.seconds:.1f} s)"
              + ("" if result.status == "graded" else f" - {result.output.splitlines()[0]}"),
              file=sys.stdout)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
