import jax

# Meant to apply the update twice per call: wrong arithmetic, donation right.
_step = jax.jit(lambda s, d: s + 2 * d, donate_argnums=(0,))


def update_with_donate(state, delta):
    return _step(state, delta)
