import jax

_add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))


def update_with_donate(state, delta):
    if state.shape[0] == 0:
        raise ValueError("nothing to update")
    return _add(state, delta)
