import jax


def update_with_donate(state, delta):
    def add(s, d):  # a closure made on every call
        return s + d

    return jax.jit(add, donate_argnums=(0,))(state, delta)
