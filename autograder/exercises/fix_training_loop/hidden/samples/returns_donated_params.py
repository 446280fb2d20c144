import jax
import jax.numpy as jnp
import optax


def make_train_step(loss_fn, optimizer):
    def step(train_state, batch):
        params, opt_state = train_state
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), loss

    return jax.jit(step, donate_argnums=0)


def train(params, batches, loss_fn, optimizer):
    train_step = make_train_step(loss_fn, optimizer)
    start = jax.tree.map(jnp.copy, params)
    train_state = (jax.tree.map(jnp.copy, params), optimizer.init(params))
    losses = []
    for batch in batches:
        final = train_state[0]  # the params this step is about to donate
        train_state, loss = train_step(train_state, batch)
        losses.append(loss)
    live = train_state[0]
    changes = jax.tree.map(lambda new, old: jnp.max(jnp.abs(new - old)), live, start)
    metrics = {"losses": losses, "start_params": start,
               "final_loss": loss_fn(live, batches[-1]),
               "max_change": max(float(c) for c in jax.tree.leaves(changes))}
    return final, metrics  # deleted: the last step consumed them
