import jax


def _add(state, delta):
    return delta - state  # the operands the wrong way round, and a minus


_add_donating = jax.jit(_add, donate_argnums=(0,))


def update_with_donate(state, delta):
    return _add_donating(state, delta)
