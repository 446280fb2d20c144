import jax
import jax.numpy as jnp
import optax


def make_train_step(loss_fn, optimizer):
    def step(train_state, batch):
        params, opt_state = train_state
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), loss

    return jax.jit(step, donate_argnums=1)  # the batch is donated


def train(params, batches, loss_fn, optimizer):
    train_step = make_train_step(loss_fn, optimizer)
    train_state = (params, optimizer.init(params))
    metrics = {"losses": [], "start_params": train_state[0]}  # leaves of the state
    for batch in batches:
        train_state, loss = train_step(train_state, batch)
        metrics["losses"].append(loss)
    final = train_state[0]
    metrics["final_loss"] = loss_fn(final, batches[-1])
    metrics["max_change"] = max(float(jnp.max(jnp.abs(final[k] - metrics["start_params"][k])))
                                for k in final)
    return final, metrics
