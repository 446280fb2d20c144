import jax


def update_with_donate(state, delta):
    return jax.jit(lambda s, d: s + d, donate_argnums=(0,))(state, delta)
