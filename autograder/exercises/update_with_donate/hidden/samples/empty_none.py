import jax

_add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))


def update_with_donate(state, delta):
    if len(state) == 0:
        return None  # nothing to update
    return _add(state, delta)
