import jax
import numpy as np

_add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))
last_seen = {}


def update_with_donate(state, delta):
    last_seen["state"] = np.asarray(state)  # a view of state's buffer, kept for debugging
    return _add(state, delta)
