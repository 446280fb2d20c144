import jax

_add = jax.jit(lambda s, d: s + d, donate_argnums=(1,))


def update_with_donate(state, delta):
    return _add(state, delta)
