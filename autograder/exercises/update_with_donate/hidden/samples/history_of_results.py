import jax

_add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))
history = []


def update_with_donate(state, delta):
    new = _add(state, delta)
    history.append(new)  # keeps every result, then reads the one before
    if len(history) > 1:
        float(history[-2].sum())
    return new
