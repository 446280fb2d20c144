import jax

_add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))


def update_with_donate(state, delta):
    return jax.device_get(_add(state, delta))  # fetched to the host: a NumPy array
