import jax
import jax.numpy as jnp

_add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))
norms = []


def update_with_donate(state, delta):
    new = _add(state, delta)
    norms.append(float(jnp.linalg.norm(state)))  # the old state's norm, read after donation
    return new
