import jax
import jax.numpy as jnp

_add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))
_previous = None


def update_with_donate(state, delta):
    global _previous
    new = _add(state, delta)
    if _previous is not None and _previous.shape == new.shape:
        print("step size:", float(jnp.max(jnp.abs(new - _previous))))  # the last result
    _previous = new
    return new
