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


# Sets the soft stack limit, then becomes the command: what a shell's `ulimit -s` does to
# the grader it starts (a preexec_fn would fork this process, which holds JAX's threads).
AS_CALLER = ("import os, resource, sys; resource.setrlimit(resource.RLIMIT_STACK, "
             "(int(sys.argv[1]), int(sys.argv[2]))); os.execv(sys.argv[3], sys.argv[3:])")


def test_the_zygote_starts_at_the_hard_stack_limit_whatever_the_callers_soft_one():
    hard = resource.getrlimit(resource.RLIMIT_STACK)[1]
    lowered = 8 * 2**20 if hard == resource.RLIM_INFINITY else min(hard, 8 * 2**20) // 2

    def as_caller(code):
        return subprocess.run([sys.executable, "-I", "-c", AS_CALLER, str(lowered), str(hard),
                               sys.executable, "-I", "-c", code],
                              capture_output=True, text=True, check=True).stdout.split()

    assert as_caller(SHOW) == [str(lowered), str(hard)]
    assert as_caller(stack_at_hard_limit(SHOW)) == [str(hard), str(hard)]
