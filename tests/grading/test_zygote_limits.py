"""The zygote's limits do not depend on who started the grader: its stack limit is
raised to the hard limit before the interpreter that becomes the zygote starts
(:func:`autograder.sandbox.stack_at_hard_limit`), since glibc sizes every thread's
stack from it, and so decides whether a learner's threads first run out of memory or
of processes."""
import resource
import subprocess
import sys

from autograder.sandbox import stack_at_hard_limit

SHOW = "import resource; print(*resource.getrlimit(resource.RLIMIT_STACK))"


def test_the_zygote_starts_at_the_hard_stack_limit_whatever_the_callers_soft_one():
    hard = resource.getrlimit(resource.RLIMIT_STACK)[1]
    lowered = 8 * 2**20 if hard == resource.RLIM_INFINITY else min(hard, 8 * 2**20) // 2

    def caller_limit():  # what a shell's `ulimit -s 8192` gives the grader
        resource.setrlimit(resource.RLIMIT_STACK, (lowered, hard))

    plain = subprocess.run([sys.executable, "-I", "-c", SHOW], preexec_fn=caller_limit,
                           capture_output=True, text=True, check=True).stdout.split()
    shimmed = subprocess.run([sys.executable, "-I", "-c", stack_at_hard_limit(SHOW)],
                             preexec_fn=caller_limit, capture_output=True, text=True,
                             check=True).stdout.split()
    assert plain == [str(lowered), str(hard)]
    assert shimmed == [str(hard), str(hard)]
