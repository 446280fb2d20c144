import jax

# A plausible slip: broadcasting makes an outer sum, shape (n, n), not state + delta.
_add = jax.jit(lambda s, d: s[:, None] + d, donate_argnums=(0,))


def update_with_donate(state, delta):
    return _add(state, delta)
