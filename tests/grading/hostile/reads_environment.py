import os

# The grader's environment must not reach learner code.
if any(key.startswith("HOSTILE_SECRET") for key in os.environ):
    raise SystemExit("saw the grader's environment")
print(sorted(os.environ))
import jax

_add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))


def update_with_donate(state, delta):
    return _add(state, delta)
