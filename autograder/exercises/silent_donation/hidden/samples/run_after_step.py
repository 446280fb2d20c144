import jax
import jax.numpy as jnp
import numpy as np

LEARNING_RATE = 0.1


def loss(state, batch):
    return jnp.mean((batch["x"] @ state["w"] + state["b"] - batch["y"]) ** 2)


def _sgd(state, batch):
    grads = jax.grad(loss)(state, batch)
    return jax.tree.map(lambda p, g: p - LEARNING_RATE * g, state, grads)


# 1. Donate at the outermost jit: the inner one's donate_argnums was ignored.
train_step = jax.jit(_sgd, donate_argnums=0)

# 2. acc is only read for its shape and dtype, so jit dropped it, and its
#    donation with it; keep_unused=True keeps it as a parameter.
reset = jax.jit(jnp.zeros_like, donate_argnums=0, keep_unused=True)


# 3. Keep a copy, not a view: a live NumPy view of the state's buffer stops
#    JAX from donating it.
def run(step, state, n):
    history = []
    for _ in range(n):
        state = step(state)
        history.append(np.array(state))  # the state after the step
    return state, history


# 4. Donate the argument that is replaced, by name: right for keyword calls too.
def _apply_delta(delta, state):
    return state + delta


apply_delta = jax.jit(_apply_delta, donate_argnames="state")
