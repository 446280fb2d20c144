import jax


def add(state, delta):
    return state + delta


add_in_place = jax.jit(add, donate_argnames="state")


def update_with_donate(state, delta):
    return add_in_place(state, delta)
