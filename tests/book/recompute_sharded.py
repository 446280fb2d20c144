"""Fresh recomputation of the values the sharded lessons glue into their prose.

Run as a script (`python tests/book/recompute_sharded.py`); it prints one JSON
object, {glue key: text}. It needs its own process: `jax_num_cpu_devices` only
takes effect before the CPU backend starts, and the other lessons' recomputations
(tests/book/recompute.py) start it with one device in the test process.
Written independently of the lesson's code, so a page can never show a value
this JAX does not produce on eight CPU devices.
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 8)

import dataclasses  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import warnings  # noqa: E402

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

N = 8
MESH = jax.make_mesh((N,), ("data",))
SPLIT = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())


def put(value, sharding):
    return jax.device_put(np.asarray(value), sharding)


def per_device_bytes(leaf) -> int:
    """Bytes one device holds of `leaf`, read from its first buffer (the leaf must be live)."""
    return leaf.addressable_shards[0].data.nbytes


def aliased_bytes(fn, *args, **jit_kwargs):
    """(alias_size_in_bytes, output_size_in_bytes, 'not usable' warnings) with argument 0 donated."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = jax.jit(fn, donate_argnums=0, **jit_kwargs).lower(*args).compile()
    mem = compiled.memory_analysis()
    texts = [str(w.message) for w in caught if "not usable" in str(w.message)]
    return mem.alias_size_in_bytes, mem.output_size_in_bytes, texts


def warned_shape(texts: list[str]) -> str:
    assert len(texts) == 1, texts
    return re.match(r"Some donated buffers were not usable: (\S+)\.", texts[0]).group(1)


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class _State:
    w: jax.Array
    b: jax.Array
    step: jax.Array


def _sgd(s, g):
    return _State(s.w - 0.1 * g, s.b + 1.0, s.step + 1)


def single_and_tree(v: dict) -> None:
    w, g = put(np.ones(64, np.float32), SPLIT), put(np.ones(64, np.float32), SPLIT)
    alias, _, _ = aliased_bytes(lambda a, b: a - b, w, g)
    v["one_global_bytes"] = w.nbytes
    v["one_alias_bytes"] = alias
    v["one_shard_bytes"] = per_device_bytes(w)
    v["one_shard_shape"] = str(w.addressable_shards[0].data.shape)
    v["one_total_alias"] = alias * N
    v["one_n_devices"] = N

    state = _State(put(np.ones(64, np.float32), SPLIT), put(np.zeros(4, np.float32), REPL),
                   put(np.zeros((), np.int32), REPL))
    leaves = jax.tree.leaves(state)
    alias, _, _ = aliased_bytes(_sgd, state, g)
    globals_ = sum(x.nbytes for x in leaves)
    replicated = sum(x.nbytes for x in leaves if x.sharding.is_fully_replicated)
    v["tree_alias_bytes"] = alias
    v["tree_per_device"] = sum(per_device_bytes(x) for x in leaves)
    v["tree_w_shard_bytes"] = per_device_bytes(state.w)
    v["tree_b_bytes"] = per_device_bytes(state.b)
    v["tree_step_bytes"] = per_device_bytes(state.step)
    v["tree_global_bytes"] = globals_
    v["tree_total_alias"] = alias * N
    v["tree_split_bytes"] = globals_ - replicated
    v["tree_replicated_bytes"] = replicated
    v["tree_replicated_copies"] = replicated * N
    v["tree_extra_copies"] = alias * N - globals_
    jax.jit(_sgd, donate_argnums=0)(state, g)
    v["tree_old_deleted"] = all(x.is_deleted() for x in leaves)
    v["tree_g_deleted"] = g.is_deleted()

    w = put(np.ones(64, np.float32), SPLIT)
    alias, out, texts = aliased_bytes(lambda a, b: a - b, w, g, out_shardings=REPL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the same warning again, from this call's compile
        jax.jit(lambda a, b: a - b, donate_argnums=0, out_shardings=REPL)(w, g)
    v["gather_warned_shape"] = warned_shape(texts)
    v["gather_alias_bytes"] = alias
    v["gather_output_bytes"] = out
    v["gather_w_deleted"] = w.is_deleted()
    _, _, texts = aliased_bytes(lambda a, b: a - b, put(np.ones(64, np.float32), REPL), g,
                                out_shardings=SPLIT)
    v["scatter_warned_shape"] = warned_shape(texts)

    fresh = _State(put(np.ones(64, np.float32), SPLIT), put(np.zeros(4, np.float32), REPL),
                   put(np.zeros((), np.int32), REPL))
    default = jax.jit(_sgd, donate_argnums=0).lower(fresh, g).compile()
    b_in = default.input_shardings[0][0].b
    b_out = default.output_shardings.b
    v["b_in_spec"] = str(b_in.spec)
    v["b_out_spec"] = str(b_out.spec)
    v["b_specs_equal"] = b_in == b_out
    v["b_specs_equivalent"] = b_in.is_equivalent_to(b_out, 1)

    wide = _State(put(np.ones(64, np.float32), SPLIT), put(np.zeros(8, np.float32), SPLIT),
                  put(np.zeros((), np.int32), REPL))
    alias, _, _ = aliased_bytes(_sgd, wide, g)
    v["wide_alias_bytes"] = alias
    v["wide_alias_total"] = alias * N


def device0_bytes() -> int:
    """Live bytes on device 0, each buffer once."""
    seen = {}
    for a in jax.live_arrays():
        if not a.is_deleted():
            for s in a.addressable_shards:
                if s.device == jax.devices()[0]:
                    seen[s.data.unsafe_buffer_pointer()] = s.data.nbytes
    return sum(seen.values())


def device_put_cases(v: dict) -> None:
    reordered = NamedSharding(Mesh(np.array(jax.devices()[::-1]), ("data",)), P("data"))

    def run(target, donate):
        x = put(np.arange(64, dtype=np.float32), SPLIT)
        gc.collect()
        start = device0_bytes()
        y = jax.device_put(x, target, donate=donate)
        both = device0_bytes() - start
        deleted = x.is_deleted()
        shares = (not deleted and x.addressable_shards[0].data.unsafe_buffer_pointer()
                  == y.addressable_shards[0].data.unsafe_buffer_pointer())
        del x
        gc.collect()
        return deleted, shares, both, device0_bytes() - start

    gather = run(REPL, True)
    v["dp_gather_deleted"], _, v["dp_gather_both"], v["dp_gather_after"] = gather
    v["dp_shard_bytes"] = per_device_bytes(put(np.zeros(64, np.float32), SPLIT))
    v["dp_copy_bytes"] = per_device_bytes(put(np.zeros(64, np.float32), REPL))
    v["dp_order_deleted"], _, v["dp_order_both"], _ = run(reordered, True)
    v["dp_order_copy_both"] = run(reordered, False)[2]
    v["dp_same_deleted"], v["dp_same_shares"], _, _ = run(SPLIT, True)


SIZES = (784, 96, 10)
_adam = optax.adam(1e-3)


def _placement(leaf):
    return SPLIT if leaf.ndim and leaf.shape[0] % N == 0 else REPL


def _fresh_train_state():
    key = jax.random.key(0)
    params = {}
    for i, (m, n) in enumerate(zip(SIZES[:-1], SIZES[1:])):
        key, sub = jax.random.split(key)
        params[f"dense{i}"] = {"w": jax.random.normal(sub, (m, n)) / jnp.sqrt(m), "b": jnp.zeros(n)}
    params = jax.device_put(params, jax.tree.map(_placement, params))
    state = (params, _adam.init(params))
    return jax.device_put(state, jax.tree.map(_placement, state))


def _train_step(state, batch):
    params, opt_state = state
    x, y = batch

    def loss(p):
        full = jax.tree.map(lambda a: jax.sharding.reshard(a, REPL), p)
        h = jax.nn.relu(x @ full["dense0"]["w"] + full["dense0"]["b"])
        logits = h @ full["dense1"]["w"] + full["dense1"]["b"]
        # one-hot: the integer-label gather's gradient over sharded labels needs an
        # explicit out_sharding on JAX 0.11 and later
        return optax.softmax_cross_entropy(logits, jax.nn.one_hot(y, logits.shape[-1])).mean()

    value, grads = jax.value_and_grad(loss)(params)
    updates, opt_state = _adam.update(grads, opt_state, params)
    return (optax.apply_updates(params, updates), opt_state), value


def train_step_values(v: dict) -> None:
    kx, ky = jax.random.split(jax.random.key(1))
    xs = jax.random.normal(kx, (4, 64, SIZES[0]))
    ys = jax.random.randint(ky, (4, 64), 0, SIZES[-1])
    batches = [jax.device_put((xs[i], ys[i]), SPLIT) for i in range(4)]
    del xs, ys, kx, ky
    epochs = 3
    state = _fresh_train_state()
    leaves = jax.tree.leaves(state)
    v["opt_global_bytes"] = sum(x.nbytes for x in leaves)
    v["opt_per_device_bytes"] = sum(per_device_bytes(x) for x in leaves)
    v["opt_replicated_bytes"] = sum(x.nbytes for x in leaves if x.sharding.is_fully_replicated)
    v["opt_count_devices"] = len(_adam.init({"w": jnp.zeros(8)})[0].count.devices())
    v["opt_leaf_devices"] = min(len(x.devices()) for x in leaves)
    v["opt_hidden"] = state[0]["dense0"]["w"].shape[1]
    del state, leaves

    result = {}
    for donate in (False, True):
        step = jax.jit(_train_step, donate_argnums=(0,) if donate else ())
        mem = step.lower(_fresh_train_state(), batches[0]).compile().memory_analysis()
        step(_fresh_train_state(), batches[0])
        state = _fresh_train_state()
        gc.collect()
        before = device0_bytes()
        top, losses = before, []
        for _ in range(epochs):
            for batch in batches:
                new, loss = step(state, batch)
                top = max(top, device0_bytes())
                losses.append(float(loss))
                state, new, loss = new, None, None
        result[donate] = (mem, before, top, losses)
    (plain, before_p, top_p, losses_p), (donating, before_d, top_d, losses_d) = result[False], result[True]
    v["opt_n_steps"] = epochs * len(batches)
    v["opt_loss_bytes"] = jnp.dtype(jnp.float32).itemsize
    v["opt_alias_bytes"] = donating.alias_size_in_bytes
    v["opt_alias_plain"] = plain.alias_size_in_bytes
    v["opt_alias_total"] = donating.alias_size_in_bytes * N
    v["opt_growth_plain"] = top_p - before_p
    v["opt_growth_donate"] = top_d - before_d
    v["opt_temp_plain"] = plain.temp_size_in_bytes
    v["opt_temp_donate"] = donating.temp_size_in_bytes
    v["opt_same_losses"] = losses_p == losses_d
    need = {k: m.argument_size_in_bytes + m.temp_size_in_bytes + m.output_size_in_bytes
            - m.alias_size_in_bytes for k, m in (("plain", plain), ("donate", donating))}
    v["opt_footprint_plain"] = need["plain"]
    v["opt_footprint_donate"] = need["donate"]
    v["opt_saving_percent"] = round(100 * (need["plain"] - need["donate"]) / need["plain"])


def shard_map_and_pmap(v: dict) -> None:
    """Bytes aliased per device by a donating jit of an elementwise shard_map, and by a
    donating pmap whose input is its own earlier (split) result."""
    body = jax.shard_map(lambda s: s * 2.0, mesh=MESH, in_specs=P("data"), out_specs=P("data"))
    v["shard_map_alias_bytes"], _, _ = aliased_bytes(body, put(np.ones(64, np.float32), SPLIT))
    step = jax.pmap(lambda p, g: p - g, donate_argnums=0)
    g = jnp.zeros((N, 4))
    split_result = step(jnp.zeros((N, 4)), g)
    v["pmap_alias_bytes"] = step.lower(split_result, g).compile().memory_analysis().alias_size_in_bytes


def values() -> dict[str, str]:
    v: dict = {"jax_version": jax.__version__, "n_devices": len(jax.devices())}
    single_and_tree(v)
    device_put_cases(v)
    train_step_values(v)
    shard_map_and_pmap(v)
    v["cpu_memory_stats"] = jax.devices()[0].memory_stats()
    return {k: str(x) for k, x in v.items()}


if __name__ == "__main__":
    print(json.dumps(values()))
