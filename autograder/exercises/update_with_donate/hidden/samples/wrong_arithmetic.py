import jax

_sub = jax.jit(lambda s, d: s - d, donate_argnums=(0,))


def update_with_donate(state, delta):
    return _sub(state, delta)
