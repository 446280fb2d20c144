import jax
import numpy as np

_add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))


def update_with_donate(state, delta):
    if state.size == 0:
        return np.zeros(0, np.float32)  # nothing to add: a NumPy empty array
    return _add(state, delta)
