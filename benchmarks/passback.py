"""Benchmark: grades back to an LMS (LTI 1.3 AGS) for a class, beside grading, in one run.

    .venv/bin/python benchmarks/passback.py [--learners 300] [--seconds 30] [--graded 14]

A real LTI 1.3 platform on loopback (``tests/lti/platform.py``: lti1p3platform's token
and score checks behind an HTTP server) and a course's database (SQLite, as
``tests/lti/course.py`` writes it). ``--learners`` learners who launched get their grade
recorded at a uniformly random moment of a ``--seconds`` window (the store's own write, as
a grading thread finishes a submission, and the wake-up the service's grading threads
give the sender), while the outbox's sender (:class:`autograder.service.lms.outbox.Sender`,
the loop the service runs) posts them (its access token kept between posts, as the
service keeps it).

Prints: the time from each recorded grade to the platform holding its score (median,
95th percentile, maximum); the sender's cost per passback, in CPU seconds of its own
thread (planning, signing the token request, the HTTP posts, the store's writes; the
platform's threads are not counted) and in wall seconds of posting; and, in the same
run, the grading cost of a correct submission (``python -m autograder`` on
``--graded`` of them, one worker per core, as ``benchmarks/run.py`` grades a class) and
the ratio of the two. Lost (recorded, never held) and doubled (held twice) scores must be 0.
"""
import argparse
import os
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

from autograder.service.gradebook.recorded import late_by
from autograder.service.lms import lti_tool, outbox, roster as lms_roster
from autograder.service.lms.ags import Client
from benchmarks.run import grade_class, make_course
from tests.lti.course import Course, max_points
from tests.lti.platform import Platform


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def passbacks(learners, seconds, tmp):
    """Record ``learners`` grades over ``seconds`` with the sender running: a dict of the
    measurements (see the module)."""
    pem = lti_tool.private_key_pem(tmp / "state" / "lti-tool-key.pem")
    platform = Platform(tool_jwks=lti_tool.jwks(pem))
    try:
        course = Course(tmp)
        registration = lti_tool.Registration(
            issuer=platform.url, client_id=platform.client_id, token_url=platform.token_url,
            lineitems_url=platform.url + "/lineitems", memberships_url=platform.url + "/memberships")
        subs = {}
        for i in range(learners + 1):
            sub = f"user-{i:04d}"
            platform.enrol(sub, f"Learner {i}")
            subs[lms_roster.remember(course.store, platform.url, sub, f"Learner {i}",
                                     launched=True)] = sub
        sender = outbox.Sender(course.store, Client(registration, pem, timeout=30.0), "best",
                               lambda: late_by(course.deadlines()), "bench:1:passback")
        stopping, wanted, cpu = threading.Event(), threading.Event(), {}

        def run_sender():
            begun = time.thread_time()
            sender.loop(stopping, wanted)
            cpu["s"] = time.thread_time() - begun

        recorded, top = {}, max_points()
        warm, _ = subs.popitem()  # a first passback: the line item made, the token fetched
        course.graded(warm, top)
        sender.plan(), sender.drain()
        assert len(platform.posts) == 1, platform.refused
        platform.posts.clear(), platform.taken_at.clear()
        thread = threading.Thread(target=run_sender)
        thread.start()
        start = time.monotonic()
        for at, (learner, sub) in sorted(zip((random.uniform(0, seconds) for _ in subs),
                                             subs.items())):
            time.sleep(max(0.0, start + at - time.monotonic()))
            course.graded(learner, top)
            recorded[sub] = time.time()
            wanted.set()  # what a grading thread does once it recorded a grade
        deadline = time.monotonic() + 600
        while len({s["userId"] for _, s in platform.posts}) < learners \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        stopping.set()
        wanted.set()
        thread.join()
        held = {}
        for (_, score), when in zip(platform.posts, platform.taken_at):
            held.setdefault(score["userId"], when)
        latency = [held[sub] - recorded[sub] for sub in recorded if sub in held]
        posting = max(platform.taken_at) - min(recorded.values())
        return {"latency": latency, "lost": learners - len(held),
                "doubled": len(platform.posts) - len(held), "cpu": cpu["s"],
                "posts": len(platform.posts), "tokens": len(platform.jtis), "span": posting,
                "lms_holds_right": all(s["scoreGiven"] == top for _, s in platform.posts)}
    finally:
        platform.stop()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--learners", type=int, default=300)
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--graded", type=int, default=14, help="correct submissions graded for "
                   "the grading cost (python -m autograder)")
    args = p.parse_args()
    print(f"# benchmarks/passback.py on {os.cpu_count()} cores, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {args.learners} learners' "
          f"grades recorded over {args.seconds:g} s, SQLite, one sender")
    with tempfile.TemporaryDirectory(prefix="bench-passback-") as tmp:
        r = passbacks(args.learners, args.seconds, Path(tmp))
    lat = r["latency"]
    per_cpu = r["cpu"] / max(1, r["posts"])
    print(f"recorded grade to the LMS holding it: median {statistics.median(lat):.2f} s, "
          f"p95 {percentile(lat, 0.95):.2f} s, max {max(lat):.2f} s; lost {r['lost']}, doubled "
          f"{r['doubled']}, scores right: {r['lms_holds_right']}")
    print(f"sender: {r['posts']} posts ({r['tokens']} token requests), {r['cpu']:.2f} s CPU = "
          f"{per_cpu * 1000:.1f} ms CPU per passback; posting ended {r['span']:.1f} s after the "
          f"first grade")
    with tempfile.TemporaryDirectory(prefix="bench-passback-grade-") as tmp:
        course = make_course(Path(tmp), args.graded)
        seconds, n = grade_class(course, Path(tmp) / "out")
    grading = seconds / n
    print(f"grading (python -m autograder, {n} correct submissions, one worker per core): "
          f"{grading:.3f} s wall per submission")
    print(f"passback / grading: {per_cpu / grading:.4f} (one passback's CPU per wall second "
          "of grading one submission)")


if __name__ == "__main__":
    main()
