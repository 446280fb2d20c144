"""Benchmark: what a submission's cgroup costs the supervisor (as root, cgroup v2).

    sudo .venv/bin/python benchmarks/cgroup.py [--rounds 200]

Times, per round, what :func:`autograder.sandbox.supervisor.supervise` adds for one
submission: make its group (:func:`autograder.sandbox.cgroups.make_submission_group`)
and move the forked learner's process into it (the kernel's cgroup migration waits for
an RCU grace period: milliseconds, most of the cost), then, once the learner's process
is killed and reaped, ``cgroup.kill``, wait until empty and remove the group
(:func:`autograder.sandbox.cgroups.kill`); once with nothing else left in the group
(the usual case), once with one process that escaped the supervisor's kill. Prints
milliseconds per submission, and the share of a 0.3 s submission that is. Uses the group of uid 61999, the last
sandbox uid: run it while no grader holds that uid's lease.
"""
import argparse
import os
import signal
import statistics
import sys
import time

from autograder.sandbox import cgroups

SUBMISSION_S = 0.3  # one submission's grading, learner process start to outcome


def one_round(uid, leave_one):
    """Seconds to make the group and move a forked child into it, then (once the child
    is killed and reaped, as the supervisor does) seconds to ``cgroup.kill`` the group,
    wait until it is empty and remove it; with ``leave_one`` a second process the supervisor did
    not kill (an escaped one) is still in the group then."""
    start = time.perf_counter()
    group = cgroups.make_submission_group(uid, 64, 256)
    children = []
    for _ in range(2 if leave_one else 1):
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        children.append(pid)
        group.join(pid)
    joined = time.perf_counter()
    os.kill(children[0], signal.SIGKILL)  # the supervisor's own kill, not timed
    os.waitpid(children[0], 0)
    killing = time.perf_counter()
    group.kill()
    ended = time.perf_counter()
    for pid in children[1:]:
        os.waitpid(pid, 0)
    return joined - start, ended - killing


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    if (why := cgroups.problem()) is not None:
        sys.exit(f"no cgroup per submission here: {why}")
    for leave_one, case in ((False, "nothing left in it"), (True, "one process left in it")):
        rounds = [one_round(61999, leave_one) for _ in range(args.rounds)]
        make, end = (statistics.median(part) for part in zip(*rounds))
        print(f"cgroup per submission, {case}: make and join {make * 1e3:.2f} ms, kill and "
              f"remove {end * 1e3:.2f} ms (medians of {args.rounds}) = "
              f"{(make + end) / SUBMISSION_S:.2%} of a {SUBMISSION_S:g} s submission")

if __name__ == "__main__":
    main()
