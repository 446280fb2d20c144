import jax
import jax.numpy as jnp

_add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))


def update_with_donate(state, delta):
    # "to be safe" the helper gets a copy: the copy is donated, state never is
    return _add(jnp.copy(state), delta)
