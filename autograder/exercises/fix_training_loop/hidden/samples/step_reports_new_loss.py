import jax
import jax.numpy as jnp
import optax


def make_train_step(loss_fn, optimizer):
    def step(train_state, batch):
        params, opt_state = train_state
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        new_params = optax.apply_updates(params, updates)
        return (new_params, opt_state), loss_fn(new_params, batch)  # the loss after this step

    # Argument 0, the train state, is replaced by the step's output: donate it.
    # The batch is still read after the step, so it is not donated.
    return jax.jit(step, donate_argnums=0)


def train(params, batches, loss_fn, optimizer):
    train_step = make_train_step(loss_fn, optimizer)
    start = jax.tree.map(jnp.copy, params)  # our own copy: never donated
    train_state = (jax.tree.map(jnp.copy, params), optimizer.init(params))
    losses = []
    for batch in batches:
        train_state, loss = train_step(train_state, batch)
        losses.append(loss)
    final = train_state[0]
    changes = jax.tree.map(lambda new, old: jnp.max(jnp.abs(new - old)), final, start)
    metrics = {"losses": losses, "start_params": start,
               "final_loss": loss_fn(final, batches[-1]),
               "max_change": max(float(c) for c in jax.tree.leaves(changes))}
    return final, metrics
