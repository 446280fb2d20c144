import jax


def _add(state, delta):
    return state + delta


_helper = jax.jit(_add, donate_argnums=(0,))


def update_with_donate(state, delta):
    # Keywords reach the compiled module in sorted order (delta, state).
    return _helper(state=state, delta=delta)
