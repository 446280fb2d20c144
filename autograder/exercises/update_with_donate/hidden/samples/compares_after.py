import jax
import jax.numpy as jnp

_add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))


def update_with_donate(state, delta):
    new = _add(state, delta)
    assert not jnp.allclose(new, state) or not jnp.any(delta)  # reads the donated state
    return new
