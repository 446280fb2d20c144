"""Where a submission's time goes in a learner's process: fork, JAX's backend, the
learner's cells, the probe and the compiles within both, with and without the grader's
compile cache.

    sudo .venv/bin/python -m benchmarks.breakdown [--runs 10] [--cache DIR]

Does what the zygote, a supervisor and a learner's process do (preload, then per
submission a fork that runs the cells and the probe, its compile cache requests answered
by the parent as a supervisor does), in a process of its own started with the zygote's
environment, timing each step; without the sandbox's confinement (no uid, mounts or
limits), which the supervisor adds around it. The answers
are the seven full-mark rewrites ``benchmarks/run.py`` grades, in turn. Prints the median
of each step in milliseconds.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXERCISE = "update_with_donate"
STEPS = ("fork", "backend", "cells", "probe", "compiles", "exit")


def child(cells_runs, folders, runs):
    """In the zygote-like process: preload, hold the cache, fork ``runs`` learners; print
    one JSON line of ``{step: [ms]}``."""
    import socket

    import jax.monitoring

    from autograder.exercises import get
    from autograder.sandbox import compile_cache, learner, supervisor

    learner.preload([EXERCISE])
    compile_cache.FOLDERS[:] = folders
    compiled = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda name, secs, **_: compiled.append(secs)
        if name == "/jax/core/compile/backend_compile_duration" else None)
    times = {s: [] for s in STEPS}
    for i in range(runs):
        cells = cells_runs[i % len(cells_runs)]
        read, write = os.pipe()
        cache, theirs = socket.socketpair() if folders else (None, None)
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            t = {"fork": time.perf_counter() - start}
            if theirs is not None:
                compile_cache.connect(theirs.detach(), folders[0])
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1), os.dup2(null, 2)
            mark = time.perf_counter()
            import jax
            jax.devices()
            t["backend"] = time.perf_counter() - mark
            shell = learner.shell()
            mark = time.perf_counter()
            learner.run_cells(cells, shell)
            t["cells"] = time.perf_counter() - mark
            mark = time.perf_counter()
            get(EXERCISE).probe().observe(shell.user_ns, 1234 + i)
            t["probe"] = time.perf_counter() - mark
            t["compiles"] = sum(compiled)
            t["end"] = time.perf_counter()
            os.write(write, json.dumps(t).encode())
            os._exit(0)
        os.close(write)
        if theirs is not None:
            theirs.close()
        raw, _, _ = supervisor._collect(pid, read, time.monotonic() + 120, cache)
        os.waitpid(pid, 0)
        got = json.loads(raw)
        got["exit"] = time.perf_counter() - got.pop("end")  # one clock (CLOCK_MONOTONIC)
        for step in STEPS:
            times[step].append(got[step] * 1000)
    print(json.dumps(times))


def measure(folders, runs):
    """``{step: median ms}`` from a fresh zygote-like process (the cache's ``folders``)."""
    from autograder.sandbox import zygote_environment
    from benchmarks.run import EQUIVALENT, SAMPLES

    runs_cells = [[{"label": "the answer cell", "source": (SAMPLES / f"{n}.py").read_text()}]
                  for n in EQUIVALENT]
    code = f"from benchmarks.breakdown import child; child({runs_cells!r}, {list(folders)!r}, {runs})"
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run([sys.executable, "-I", "-c", code], cwd=scratch, text=True,
                              capture_output=True, check=True,
                              env=dict(zygote_environment(), HOME=scratch, TMPDIR=scratch))
    times = json.loads(done.stdout.strip().splitlines()[-1])
    return {step: statistics.median(v) for step, v in times.items()}


def line(label, medians):
    return f"{label}: " + ", ".join(f"{s} {medians[s]:.0f}" for s in STEPS) + " (median ms)"


def main():
    from autograder.sandbox import compile_cache, warm

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=14)
    parser.add_argument("--cache", help="a cache root to warm and use (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        root = Path(args.cache or Path(name) / "cache")
        warm.warm_all([EXERCISE], folder=root)
        folders = compile_cache.ready({EXERCISE: _version()}, _environment(), folder=root)
        print(line("without the cache", measure([], args.runs)))
        print(line("with the cache   ", measure(folders, args.runs)))


def _version():
    from autograder.exercises import current
    return current.version(EXERCISE)


def _environment():
    from autograder.sandbox import zygote_environment
    return zygote_environment()


if __name__ == "__main__":
    main()
