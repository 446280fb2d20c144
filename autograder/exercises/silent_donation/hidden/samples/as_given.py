import jax
import jax.numpy as jnp
import numpy as np

LEARNING_RATE = 0.1


def loss(state, batch):
    return jnp.mean((batch["x"] @ state["w"] + state["b"] - batch["y"]) ** 2)


# The four steps as the notebook gives them, unrepaired.
_apply = jax.jit(lambda p, g: jax.tree.map(lambda a, b: a - LEARNING_RATE * b, p, g),
                 donate_argnums=0)


def _sgd(state, batch):
    return _apply(state, jax.grad(loss)(state, batch))


train_step = jax.jit(_sgd)
reset = jax.jit(lambda acc: jnp.zeros_like(acc), donate_argnums=0)


def run(step, state, n):
    history = []
    for _ in range(n):
        history.append(np.asarray(state))
        state = step(state)
    return state, history


apply_delta = jax.jit(lambda delta, state: state + delta, donate_argnums=0)
