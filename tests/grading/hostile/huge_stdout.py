line = "x" * 2**20
for _ in range(200):
    print(line)
import jax

_add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))


def update_with_donate(state, delta):
    return _add(state, delta)
