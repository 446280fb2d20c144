# Fills the process limit with sleeping children, then uses JAX: XLA cannot start
# its threads and aborts. The result must name the limit, not only the signal.
import os
import time

children = 0
while True:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(120)
        os._exit(0)
    children += 1
import jax

_add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))


def update_with_donate(state, delta):
    return _add(state, delta)
