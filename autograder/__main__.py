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
import sys

from tqdm import tqdm

from autograder import defaults, options, pipeline, sandbox
from autograder.exercises import current, names as exercise_names
from autograder.files import Files, ResultsFolder


def parse(argv):
    p = argparse.ArgumentParser(prog="python -m autograder", description=__doc__.splitlines()[0],
                                epilog="python -m autograder gradescope EXERCISE --out DIR "
                                       "builds a Gradescope autograder zip (see its --help).")
    p.add_argument("paths", nargs="+", help=".ipynb or .py files, or folders such as nbgrader's submitted/")
    p.add_argument("--out", required=True, help="folder for <name>/results.json and summary.csv")
    p.add_argument("--exercise", choices=exercise_names(),
                   help="the exercise files answer (default: from the path); in an nbgrader "
                        "tree, grade only this exercise's notebooks")
    options.add(p, *defaults.CLI)
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
    os.makedirs(args.out, exist_ok=True)  # before Files: it hides this very folder
    source = Files(args.paths, args.exercise, args.out)
    for warning in source.warnings:
        print(warning, file=sys.stderr)
    if not source.found:
        print("no submissions found (looked for .ipynb and .py files)", file=sys.stderr)
        return 2
    broken = current.loadable(sorted(source.exercises()))[1]
    if broken:  # graded by nothing rather than by tests that are not the instructor's
        print("; ".join(broken.values()) + "; nothing graded", file=sys.stderr)
        return 2
    limits = sandbox.Limits(seconds=args.timeout, memory_mib=args.memory_mib)
    with Lines() as lines:
        refused = pipeline.grade_all(source, ResultsFolder(args.out), limits,
                                     slots=range(max(1, args.jobs)), force=args.force,
                                     progress=lines)
    return 1 if refused else 0


class Lines(pipeline.Progress):
    """One line per submission on stdout (a grader fault's reason in brackets: whoever
    runs the command is the instructor); tqdm's bar (count, rate, time left) on a
    terminal's stderr, silent otherwise."""

    bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.close()

    def unchanged(self, sub, done):
        shown = defaults.points_text  # points as every view prints them
        print(f"{sub.name}: {shown(done['score'])}/{shown(done['max_score'])} unchanged, kept")

    def started(self, count):
        self.bar = tqdm(total=count, unit="submission", disable=None, file=sys.stderr,
                        bar_format="{l_bar}{bar}| {n}/{total} [{elapsed}<{remaining}, {rate_fmt}]")

    def graded(self, sub, result):
        shown = defaults.points_text
        self.bar.write(f"{sub.name}: {shown(result.score)}/{shown(result.max_score)} {result.status} "
                       f"({result.seconds:.1f} s)"
                       + ("" if result.status == "graded" else f" - {result.output.splitlines()[0]}")
                       + (f" [{result.fault.strip().splitlines()[-1]}]" if result.fault else ""),
                       file=sys.stdout)
        sys.stdout.flush()
        self.bar.update()

    def unwritten(self, sub, exc):
        print(f"{sub.name}: could not write results ({exc})", file=sys.stderr)
        self.bar.update()


if __name__ == "__main__":
    sys.exit(main())
