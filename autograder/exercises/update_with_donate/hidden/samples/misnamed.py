import jax

_add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))


def update_with_donation(state, delta):
    return _add(state, delta)
