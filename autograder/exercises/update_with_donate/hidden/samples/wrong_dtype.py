import jax
import numpy as np

_add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))


def update_with_donate(state, delta):
    return np.asarray(_add(state, delta), dtype=np.float64)
