import jax
import jax.numpy as jnp

display(jnp.arange(3))
_helper = jax.jit(lambda s, d: s + d, donate_argnums=(0,))


def update_with_donate(state, delta):
    return _helper(state, delta)
