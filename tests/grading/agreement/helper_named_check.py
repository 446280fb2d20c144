import jax


def check(x):
    """The learner's own helper: a shape check before the update."""
    assert x.ndim == 1, "expected a 1-D array"
    return x


_add_donating = jax.jit(lambda state, delta: state + delta, donate_argnums=(0,))


def update_with_donate(state, delta):
    return _add_donating(check(state), check(delta))
