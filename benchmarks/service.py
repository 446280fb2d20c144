"""Benchmark: the grading service scaled out, on loopback, on PostgreSQL.

    .venv/bin/python benchmarks/service.py [--learners 300] [--seconds 60] [--workers 1 2]

For each worker count: a throwaway PostgreSQL cluster (``tests/service/postgres.py``),
a released course whose gradebook lives in it, one API process (``--jobs 0``,
``--max-per-client 0``: every simulated learner has this machine's address) and
that many ``python -m autograder.service.worker --jobs 1`` processes. Each
learner sends one correct notebook (the full released notebook with one of the
seven full-mark rewrites in ``autograder/exercises/update_with_donate/hidden/samples/``) at a uniformly random
moment of the window and polls as the course's pages do (each poll held by the service up
to 15 s, ``?wait=15``) until it is graded.

Prints, per run: throughput (results per second, from the first submission to
the last result), submit-to-feedback latency (the store's ``finished_at -
submitted_at``: median, 95th percentile, maximum), and lost (accepted, never
graded) and duplicated (more than one result) submissions, which must be 0;
then, from the measured seconds per submission and slot, the latency a
learner would see with N workers. Wall-clock seconds on this machine.

Then the ratio the service is built to: a burst (every learner submits at once) graded by
the largest worker count, beside ``python -m autograder --jobs N`` grading the same class
(results per second each, measured one after the other; target 0.9 or more).
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from autograder.defaults import CHECKOUT as REPO, release_argv
from tests.grading.helpers import SAMPLES, released_notebook, with_answer
from tests.processes import free_port
from tests.service.postgres import Cluster
from tests.service.running import read_rows

BIN = Path(sys.executable).parent

EQUIVALENT = ["reference", "lambda_helper", "partial_decorator", "donate_argnames", "jnp_add",
              "jitted_entry_point", "prints_and_tries"]
EXERCISE = "update_with_donate"
ENV = dict(os.environ, JAX_PLATFORMS="cpu",
           PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")


def call(method, url, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as reply:
        return json.loads(reply.read())


def course_in(tmp, db):
    course = tmp / "course"
    course.mkdir()
    shutil.copy(REPO / "exercises" / "nbgrader_config.py", course)
    shutil.copytree(REPO / "exercises" / "source", course / "source")
    subprocess.run([*release_argv(EXERCISE, BIN), "--db", db], cwd=course, env=ENV, check=True)
    return course


def wait_up(url, proc, log, text=None):
    for _ in range(1200):
        if proc.poll() is not None:
            raise SystemExit(f"exited:\n{log.read_text()[-3000:]}")
        try:
            if text is None:
                call("GET", url)
                return
        except OSError:
            pass
        if text is not None and text in log.read_text():
            return
        time.sleep(0.1)
    raise SystemExit(f"did not start:\n{log.read_text()[-3000:]}")


def run(workers, learners, seconds, tmp):
    cluster = Cluster(free_port()).init()
    procs = []
    try:
        db = cluster.url.replace("postgresql://", "postgresql+psycopg://")
        course = course_in(tmp, db)
        port = free_port()
        common = ["--db", cluster.url, "--course", str(course)]
        api_log = tmp / "api.log"
        with open(api_log, "wb") as log:
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "autograder.service", *common, "--port", str(port),
                 "--jobs", "0", "--max-per-client", "0", "--max-queue", str(learners * 2)],
                cwd=REPO, env=ENV, stdout=log, stderr=subprocess.STDOUT))
        url = f"http://127.0.0.1:{port}"
        wait_up(url + "/api/health", procs[0], api_log)
        for i in range(workers):
            wlog = tmp / f"worker{i}.log"
            with open(wlog, "wb") as log:
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "autograder.service.worker", *common, "--jobs", "1",
                     "--slot-base", str(3000 + 16 * i)],
                    cwd=REPO, env=ENV, stdout=log, stderr=subprocess.STDOUT))
            wait_up(None, procs[-1], wlog, "grading worker")
        time.sleep(5)  # the zygotes finish importing JAX

        sent = list(notebooks(course, learners).items())
        plan = sorted((random.uniform(0, seconds), i) for i in range(learners))
        accepted, refused, lock = {}, [], threading.Lock()

        def learner(at, i):
            time.sleep(max(0.0, start + at - time.monotonic()))
            body = {"exercise": EXERCISE, "learner": sent[i][0], "notebook": sent[i][1]}
            try:
                sub_id = call("POST", url + "/api/submissions", body)["id"]
            except OSError as exc:
                with lock:
                    refused.append(str(exc))
                return
            with lock:
                accepted[sub_id] = i
            # as the course's pages poll (book/_static/grader.js: held up to 15 s)
            while call("GET", f"{url}/api/submissions/{sub_id}?wait=15")["status"] != "done":
                time.sleep(0.5)

        peak = {"rss": 0}
        sampling = threading.Event()

        def sample():  # the largest memory a worker's process tree held (zygote, sandbox)
            import psutil
            while not sampling.wait(0.5):
                for proc in procs[1:]:
                    try:
                        tree = [psutil.Process(proc.pid)]
                        tree += tree[0].children(recursive=True)
                        peak["rss"] = max(peak["rss"], sum(p.memory_info().rss for p in tree))
                    except psutil.Error:
                        pass

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        start = time.monotonic()
        threads = [threading.Thread(target=learner, args=p) for p in plan]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        sampling.set()
        rows = read_rows(cluster.url)
        done = [r for r in rows.values() if r["status"] == "done"]
        latency = sorted(r["finished_at"] - r["submitted_at"] for r in done)
        grading = [r["finished_at"] - r["started_at"] for r in done]
        span = max(r["finished_at"] for r in done) - min(r["submitted_at"] for r in rows.values())
        scores = [call("GET", f"{url}/api/submissions/{i}")["result"]["score"]
                  for i in list(accepted)[:20]]
        return {
            "workers": workers, "learners": learners, "accepted": len(accepted),
            "refused": len(refused), "graded": len(done),
            "lost": sum(1 for i in accepted if rows.get(i, {}).get("status") != "done"),
            "duplicated": sum(1 for r in rows.values() if r["graded"] > 1),
            "regraded": sum(1 for r in rows.values() if r["attempts"] > 1),
            "full_marks_sampled": f"{scores.count(10)}/{len(scores)}",
            "throughput": len(done) / span, "span": span,
            "median": statistics.median(latency),
            "p95": latency[min(len(latency) - 1, int(0.95 * len(latency)))],
            "max": latency[-1], "grading_mean": statistics.mean(grading),
            "worker_rss_mib": peak["rss"] / 2**20}
    finally:
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        cluster.remove()


def notebooks(course, learners):
    """``{learner: notebook}``: learner ``i`` answers with one of :data:`EQUIVALENT`, in
    turn, under a comment that makes every file's bytes (and so its digest) its own."""
    release = released_notebook(course)
    return {f"learner{i:04d}": with_answer(
        release, f"# learner {i:04d}\n{(SAMPLES / f'{EQUIVALENT[i % len(EQUIVALENT)]}.py').read_text()}")
        for i in range(learners)}


def cli(jobs, learners, tmp):
    """The command line's throughput (results per second, process start to exit) on the
    same class, ``--jobs`` ``jobs``: the baseline of the service's burst."""
    course = course_in(tmp, f"sqlite:///{tmp / 'gradebook.db'}")
    folder = tmp / "class"
    folder.mkdir()
    for learner, nb in notebooks(course, learners).items():
        (folder / f"{learner}.ipynb").write_text(json.dumps(nb))
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "autograder", str(folder), "--exercise", EXERCISE,
                    "--out", str(tmp / "out"), "--jobs", str(jobs)], cwd=REPO, env=ENV,
                   check=True, stdout=subprocess.DEVNULL)
    span = time.monotonic() - start
    graded = len(list((tmp / "out").rglob("results.json")))
    return {"graded": graded, "throughput": graded / span, "span": span}


def predict(per_slot, learners, seconds, n):
    """Median and maximum latency with ``n`` one-slot workers, from seconds per submission.

    Arrivals at ``learners/seconds`` per second against ``n/per_slot`` results
    per second: if the workers keep up, latency is about one grading; if not, the
    backlog grows through the window and the last learner waits for it to clear.
    """
    rate, capacity = learners / seconds, n / per_slot
    if capacity >= rate:
        return per_slot, per_slot
    worst = learners / capacity - seconds + per_slot
    return worst / 2 + per_slot / 2, worst


def ratio(n, learners):
    """One line: the service's throughput on a burst (every learner submits at once,
    ``n`` one-slot workers) over the command line's with ``--jobs n`` on the same class,
    measured one after the other in this run. Target: at least 0.9."""
    with tempfile.TemporaryDirectory(prefix="bench-service-") as tmp:
        burst = run(n, learners, 0.0, Path(tmp))
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        base = cli(n, learners, Path(tmp))
    return (f"burst of {learners}, {n} grading process(es): service {burst['throughput']:.2f}/s "
            f"({burst['graded']} graded, lost {burst['lost']}, duplicated {burst['duplicated']}) "
            f"vs python -m autograder --jobs {n} {base['throughput']:.2f}/s ({base['graded']} graded) "
            f"= {burst['throughput'] / base['throughput']:.2f} x  [target >= 0.9]")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--learners", type=int, default=300)
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--no-ratio", dest="ratio", action="store_false",
                   help="skip the burst beside the command line (their throughput ratio)")
    args = p.parse_args()
    print(f"# benchmarks/service.py on {os.cpu_count()} cores, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {args.learners} learners "
          f"over {args.seconds:g} s, PostgreSQL, one API process")
    results = []
    for n in args.workers:
        with tempfile.TemporaryDirectory(prefix="bench-service-") as tmp:
            r = run(n, args.learners, args.seconds, Path(tmp))
        results.append(r)
        print(f"{n} worker(s): {r['graded']}/{r['accepted']} graded ({r['refused']} refused), "
              f"lost {r['lost']}, duplicated {r['duplicated']} (regraded {r['regraded']}); "
              f"throughput {r['throughput']:.2f}/s over {r['span']:.0f} s; latency median "
              f"{r['median']:.1f} s, p95 {r['p95']:.1f} s, max {r['max']:.1f} s; grading "
              f"{r['grading_mean']:.2f} s each; full marks {r['full_marks_sampled']} sampled; "
              f"largest worker process tree {r['worker_rss_mib']:.0f} MiB",
              flush=True)
    if args.ratio:
        print(ratio(max(args.workers), args.learners), flush=True)
    best = max(results, key=lambda r: r["throughput"] / r["workers"])
    per_slot = best["workers"] / best["throughput"]
    print(f"seconds per submission and worker (from {best['workers']} worker(s)): {per_slot:.2f}")
    for n in (1, 2, 4, 8, 16, 32):
        median, worst = predict(per_slot, args.learners, args.seconds, n)
        print(f"  predicted with {n:2d} worker(s): median {median:.1f} s, max {worst:.1f} s")


if __name__ == "__main__":
    main()
