import jax
import jax.numpy as jnp
import optax


def make_train_step(loss_fn, optimizer):
    @jax.jit
    def _step(params, opt_state, batch):
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    def step(train_state, batch):
        params, opt_state, loss = _step(*train_state, batch)  # a jitted helper inside
        return (params, opt_state), loss

    return jax.jit(step, donate_argnums=(0,))


def train(params, batches, loss_fn, optimizer):
    step = make_train_step(loss_fn, optimizer)
    kept = jax.tree.map(lambda v: jnp.array(v, copy=True), params)
    state = (jax.tree.map(lambda v: jnp.array(v, copy=True), params), optimizer.init(params))
    losses = []
    for batch in batches:
        state, loss = step(state, batch)
        losses.append(loss)
    final = state[0]
    return final, {"losses": losses, "start_params": kept,
                   "final_loss": loss_fn(final, batches[-1]),
                   "max_change": max(jax.tree.leaves(jax.tree.map(lambda a, b: jnp.abs(a - b).max(), final, kept)))}
