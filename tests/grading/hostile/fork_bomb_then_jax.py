# Fills the process limit (threads count too) with sleeping threads, then uses JAX:
# XLA cannot start its threads and aborts. The result must name the limit, not only
# the signal. (Threads, not processes: a thread starts in microseconds, so this hits
# the limit within the time limit however loaded the machine is.)
import threading
import time

started = 0
while True:
    try:
        threading.Thread(target=time.sleep, args=(120,), daemon=True).start()
    except RuntimeError:  # can't start new thread: the limit is reached
        break
    started += 1
import jax

_add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))


def update_with_donate(state, delta):
    return _add(state, delta)
