import jax


def add(state, delta):
    return state + delta


# both named: the caller's delta is offered too (JAX cannot use it, and warns)
add_in_place = jax.jit(add, donate_argnames=("state", "delta"))


def update_with_donate(state, delta):
    return add_in_place(state, delta)
