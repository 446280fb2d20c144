"""Fresh, independent recomputation of every value the lessons glue into prose.

Each function rebuilds one lesson's scenario from scratch on the pinned JAX and
returns {glue key: text}, where text is what `{glue:text}` renders for the value
(`str(value)`). The tests compare these with the numbers on the built pages, so
a page can never show a value this JAX does not produce.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import os
import re
import warnings
from functools import lru_cache

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402


def entry(compiled, key: str) -> str:
    """`key={...}` from the first line of a compiled module's text ('' if absent)."""
    head = compiled.as_text().splitlines()[0]
    m = re.search(re.escape(key) + r"=(\{(?:[^{}]|\{(?:[^{}]|\{[^{}]*\})*\})*\})", head)
    return f"{key}={m.group(1)}" if m else ""


def aliased_params(compiled) -> set[int]:
    text = entry(compiled, "input_output_alias")
    return {int(p) for p in re.findall(r"\}: \((\d+), \{", text)}


def alias_bytes(compiled) -> int:
    return compiled.memory_analysis().alias_size_in_bytes


def unusable_warnings(fn, *args, donate=0):
    """Compile a fresh wrapper of fn and return the 'not usable' warning texts."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jax.jit(lambda *a: fn(*a), donate_argnums=donate).lower(*args).compile()
    return [str(w.message) for w in caught if "not usable" in str(w.message)]


# --------------------------------------------------------------------------- lesson 1
@lru_cache(None)
def donate_argnums_values() -> dict[str, str]:
    v = {"jax_version": jax.__version__}
    upd = jax.jit(lambda p, g: p - 0.1 * g, donate_argnums=(0,))
    g = jnp.full(4, 0.5, jnp.float32)
    p = jnp.ones(4, jnp.float32)
    alias_of_p = p
    p = upd(p, g)
    v["old_deleted"] = alias_of_p.is_deleted()
    v["grads_deleted"] = g.is_deleted()
    c = upd.lower(p, g).compile()
    v["alias_map"] = entry(c, "input_output_alias")
    v["update_alias_bytes"] = alias_bytes(c)
    v["update_params_nbytes"] = p.nbytes

    sq = jax.jit(lambda x: (x * x).sum(), donate_argnums=(0,))
    x = jnp.arange(8, dtype=jnp.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sq(x)
    v["unusable_vec_deleted"] = x.is_deleted()

    try:
        alias_of_p + 1
    except RuntimeError as err:
        v["deleted_message"] = str(err)

    p = jnp.ones(4, jnp.float32)
    kept = jnp.array(p, copy=True)
    p = upd(p, g)
    v["copy_deleted"] = kept.is_deleted()

    p = jnp.ones(4, jnp.float32)
    try:
        upd(p, p)
    except Exception as err:  # noqa: BLE001
        v["same_buffer_reason"] = str(err).split("INVALID_ARGUMENT: ")[1].split(" (")[0]
    v["same_buffer_intact"] = not p.is_deleted()

    # the output that takes parameter 0, read from the compiled alias map (the page
    # reads it from the buffers' addresses after a call)
    def taker(fn):
        m = re.search(r"\{(\d+)\}: \(0, ", entry(jax.jit(fn, donate_argnums=(0,)).lower(p, g).compile(),
                                             "input_output_alias"))
        return int(m.group(1)) if m else None

    v["multi_taker"] = taker(lambda p, g: (jnp.linalg.norm(g), p - 0.1 * g))
    v["order_taker"] = taker(lambda p, g: (p * 2, p - g))

    add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))
    lengths = [32, 64, 32, 32, 64, 64, 32]
    grew = []
    for n in lengths:
        s, d = jnp.zeros(n, jnp.float32), jnp.ones(n, jnp.float32)
        before = add._cache_size()
        add(s, d)
        grew.append(add._cache_size() > before)
    v["reuse_calls"] = len(lengths)
    v["reuse_compiled"] = sum(grew)
    v["reuse_reused"] = len(lengths) - sum(grew)
    v["reuse_backend_compiles"] = sum(grew)
    v["reuse_cache_size"] = add._cache_size()
    return {k: str(x) for k, x in v.items()}


# --------------------------------------------------------------------------- lesson 2
@jax.tree_util.register_dataclass
@dataclasses.dataclass
class _Tree:
    w: jax.Array
    b: jax.Array
    step: jax.Array


def _tree():
    return _Tree(jnp.ones((4, 4), jnp.float32), jnp.zeros(4, jnp.float32), jnp.zeros((), jnp.int32))


def _compile(fn, tree, g):
    return jax.jit(fn, donate_argnums=0).lower(tree, g).compile()


@lru_cache(None)
def state_tree_values() -> dict[str, str]:
    g = jnp.ones((4, 4), jnp.float32)
    tree = _tree()
    nbytes = sum(leaf.nbytes for leaf in jax.tree.leaves(tree))
    v = {}
    same = _compile(lambda s, g: _Tree(s.w - 0.1 * g, s.b + 1.0, s.step + 1), tree, g)
    v["full_map"] = entry(same, "input_output_alias")
    v["full_alias_bytes"] = alias_bytes(same)
    v["full_state_bytes"] = nbytes
    v["single_map"] = entry(jax.jit(lambda p, d: p - d, donate_argnums=0).lower(
        jnp.ones(4, jnp.float32), jnp.ones(4, jnp.float32)).compile(), "input_output_alias")

    def with_loss(s, g):  # the loss is output 0, ahead of the new state's leaves
        return 0.5 * jnp.sum(g * g), _Tree(s.w - 0.1 * g, s.b + 1.0, s.step + 1)

    v["loss_map"] = entry(_compile(with_loss, tree, g), "input_output_alias")
    v["loss_w_output"] = re.search(r"(\{\d*\}): \(0, ", v["loss_map"]).group(1)

    as_float = _compile(lambda s, g: _Tree(s.w - 0.1 * g, s.b + 1.0, s.step + 1.0), tree, g)
    v["float_step_aliased"] = "yes" if 2 in aliased_params(as_float) else "NO"  # as its audit table
    v["float_alias_bytes"] = alias_bytes(as_float)

    def half_b(s, g):
        return _Tree(s.w - 0.1 * g, (s.b + 1.0).astype(jnp.float16), s.step + 1)

    half = _compile(half_b, tree, g)
    v["half_map"] = entry(half, "input_output_alias")
    v["half_b_aliased"] = "yes" if 1 in aliased_params(half) else "NO"  # as its audit table
    v["half_alias_bytes"] = alias_bytes(half)
    v["half_lost_bytes"] = nbytes - alias_bytes(half)
    offered = _tree()  # a real call: the offered (buffer_donor) leaf is not consumed
    jax.jit(half_b, donate_argnums=0)(offered, g)
    v["half_b_deleted"] = offered.b.is_deleted()

    def pair(s, g):
        return _Tree(s.w - 0.1 * g, s.b + 1.0, jnp.stack([s.step, s.step + 1]))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        paired = _compile(pair, tree, g)
    v["pair_step_aliased"] = "yes" if 2 in aliased_params(paired) else "NO"  # as its audit table
    v["pair_alias_bytes"] = alias_bytes(paired)
    v["pair_lost_bytes"] = nbytes - alias_bytes(paired)

    def counter_half(s, g):
        return _Tree(s.w - 0.1 * g, s.b + 1.0, (s.step + 1).astype(jnp.float16))

    v["counter_half_bytes"] = alias_bytes(_compile(counter_half, tree, g))
    table = jnp.ones((4, 6), jnp.float32)
    v["reshape_alias_bytes"] = alias_bytes(jax.jit(lambda t: (t * 2).T, donate_argnums=0).lower(table).compile())
    return {k: str(x) for k, x in v.items()}


# --------------------------------------------------------------------------- lesson 3
@jax.tree_util.register_dataclass
@dataclasses.dataclass
class _Pair:
    w: jax.Array
    b: jax.Array


def _pair_step(s, x):
    return _Pair(s.w - 0.1 * x, s.b + 1.0)


def _mlp_init(key, sizes=(784, 93, 10)):
    params = {}
    for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:])):
        key, sub = jax.random.split(key)
        params[f"dense{i}"] = {"w": jax.random.normal(sub, (m, n)) / jnp.sqrt(m), "b": jnp.zeros(n)}
    return params


_adam = optax.adam(1e-3)


def _train_step(state, batch):
    params, opt_state = state
    x, y = batch

    def loss(p):
        h = jax.nn.relu(x @ p["dense0"]["w"] + p["dense0"]["b"])
        logits = h @ p["dense1"]["w"] + p["dense1"]["b"]
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

    value, grads = jax.value_and_grad(loss)(params)
    updates, opt_state = _adam.update(grads, opt_state, params)
    return (optax.apply_updates(params, updates), opt_state), value


def _fresh():
    p = _mlp_init(jax.random.key(0))
    return p, _adam.init(p)


def _growth_keeping_old_states(batches, epochs) -> int:
    """Live bytes above the start after a loop without donation that appends every
    old state to a list: the figure's rising line, at its last sample."""
    step = jax.jit(_train_step)
    st, kept = _fresh(), []
    gc.collect()
    base = sum(a.nbytes for a in jax.live_arrays())
    for _ in range(epochs):
        for b in batches:
            new, _loss = step(st, b)
            kept.append(st)
            st = new
    del new, _loss
    return sum(a.nbytes for a in jax.live_arrays()) - base


@lru_cache(None)
def lifetimes_values() -> dict[str, str]:
    v = {"jax_version": jax.__version__}
    donating = jax.jit(_pair_step, donate_argnums=0)
    s = _Pair(jnp.ones((4, 4), jnp.float32), jnp.zeros(4, jnp.float32))
    batch = jnp.full((4, 4), 0.5, jnp.float32)
    held = {"w": s.w}
    everything = s.w[:]
    row = s.w[0]
    s = donating(s, batch)
    v["metrics_leaf_deleted"] = held["w"].is_deleted()
    v["row_deleted"] = row.is_deleted()
    v["slice_is_leaf"] = everything is held["w"]
    v["slice_deleted"] = everything.is_deleted()
    v["batch_deleted"] = batch.is_deleted()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jax.jit(_pair_step, donate_argnums=(0, 1))(s, batch)
    v["batch_donated_deleted"] = batch.is_deleted()

    s = _Pair(jnp.ones((4, 4), jnp.float32), jnp.zeros(4, jnp.float32))
    out = donating(s, batch)
    jax.jit(_pair_step)(out, batch)
    v["result_after_plain"] = out.w.is_deleted()
    donating(out, batch)
    v["result_after_donating"] = out.w.is_deleted()

    state = _fresh()
    v["n_params"] = sum(leaf.size for leaf in jax.tree.leaves(state[0]))
    state_nbytes = sum(leaf.nbytes for leaf in jax.tree.leaves(state))
    v["state_nbytes"] = state_nbytes
    v["state_mb"] = f"{state_nbytes / 1e6:.2f}"

    kx, ky = jax.random.split(jax.random.key(1))
    xs = jax.random.normal(kx, (4, 64, 784))
    ys = jax.random.randint(ky, (4, 64), 0, 10)
    batches = [(xs[i], ys[i]) for i in range(4)]
    epochs = 3
    v["n_steps"] = epochs * len(batches)
    v["n_epochs"] = epochs
    v["n_batches"] = len(batches)

    plan, live, losses = {}, {}, {}
    for donate in (False, True):
        step = jax.jit(_train_step, donate_argnums=(0,) if donate else ())
        mem = step.lower(_fresh(), batches[0]).compile().memory_analysis()
        plan[donate] = mem
        step(_fresh(), batches[0])
        st = _fresh()
        gc.collect()
        base = sum(a.nbytes for a in jax.live_arrays())
        top, seen = base, []
        for _ in range(epochs):
            for b in batches:
                new, loss = step(st, b)
                top = max(top, sum(a.nbytes for a in jax.live_arrays()))
                seen.append(float(loss))
                st, new, loss = new, None, None
        live[donate], losses[donate] = top - base, seen

    v["cpu_memory_stats"] = jax.devices()[0].memory_stats()
    m = plan[True]
    v["peak_extra_bytes"] = m.peak_memory_in_bytes - (
        m.argument_size_in_bytes + m.output_size_in_bytes - m.alias_size_in_bytes
    )
    v["plan_alias_bytes"] = plan[True].alias_size_in_bytes
    v["plan_temp_plain"] = plan[False].temp_size_in_bytes
    v["plan_temp_donate"] = plan[True].temp_size_in_bytes
    v["plan_peak_plain_mb"] = f"{plan[False].peak_memory_in_bytes / 1e6:.2f}"
    v["plan_peak_donate_mb"] = f"{plan[True].peak_memory_in_bytes / 1e6:.2f}"
    v["plan_drop_bytes"] = plan[False].peak_memory_in_bytes - plan[True].peak_memory_in_bytes
    total = {d: m.peak_memory_in_bytes + m.temp_size_in_bytes for d, m in plan.items()}
    v["plan_total_plain_mb"] = f"{total[False] / 1e6:.2f}"
    v["plan_total_donate_mb"] = f"{total[True] / 1e6:.2f}"
    v["plan_net_bytes"] = total[False] - total[True]
    v["plan_net_percent"] = f"{100 * (total[False] - total[True]) / state_nbytes:.0f}"
    v["live_growth_plain_mb"] = f"{live[False] / 1e6:.2f}"
    v["live_growth_donate_mb"] = f"{live[True] / 1e6:.2f}"
    v["live_growth_donate_bytes"] = live[True]
    v["same_losses"] = losses[False] == losses[True]
    v["trace_kept_mb"] = f"{_growth_keeping_old_states(batches, epochs) / 1e6:.2f}"
    v["trace_kept_states"] = epochs * len(batches)
    return {k: str(x) for k, x in v.items()}


# --------------------------------------------------------------------------- lesson 4
def _offered_aliased(jitted, *args, **kwargs) -> tuple[int, int]:
    lowered = jitted.lower(*args, **kwargs)
    offered = sum(
        math.prod(a.shape) * a.dtype.itemsize for a in jax.tree.leaves(lowered.args_info) if a.donated
    )
    return offered, alias_bytes(lowered.compile())


def _consumed(fn, make_arg) -> bool:
    """Call fn on a fresh argument; True when the runtime consumed (deleted) it."""
    arg = make_arg()
    fn(arg)
    return arg.is_deleted()


def _ones(n=1024):
    return jnp.ones(n, jnp.float32)


@lru_cache(None)
def silent_donation_values() -> dict[str, str]:
    v = {"jax_version": jax.__version__}

    def times_two(x):
        return 2 * x

    ok = jax.jit(times_two, donate_argnums=0)
    v["healthy_offered"], v["healthy_aliased"] = _offered_aliased(ok, _ones())
    v["healthy_deleted"] = _consumed(ok, _ones)

    def times_three(x):
        return 3 * x

    try:
        jax.config.update("jax_debug_nans", True)
        under_flag = jax.jit(times_three, donate_argnums=0)
        v["nans_on_deleted"] = _consumed(under_flag, _ones)
    finally:
        jax.config.update("jax_debug_nans", False)
    v["nans_off_deleted"] = _consumed(under_flag, _ones)
    again = jax.jit(times_three, donate_argnums=0)
    v["nans_rewrapped_deleted"] = _consumed(again, _ones)
    v["nans_rewrapped_aliased"] = _offered_aliased(again, _ones())[1]
    jax.clear_caches()
    v["nans_cleared_deleted"] = _consumed(under_flag, _ones)

    inner = jax.jit(times_two, donate_argnums=0)
    v["nested_deleted"] = _consumed(jax.jit(lambda x: inner(x) + 1), _ones)

    loss = jax.jit(lambda w, x: ((w * x) ** 2).sum(), donate_argnums=0)
    w = _ones(8)
    jax.grad(loss)(w, _ones(8))
    v["grad_w_deleted"] = w.is_deleted()

    def overwrite_velocity(s, g):
        return {"w": s["w"] - 0.1 * g, "velocity": 0.5 * g}

    def overwrite_velocity_kept(s, g):
        return {"w": s["w"] - 0.1 * g, "velocity": 0.5 * g}

    def state():
        return {"w": _ones(256), "velocity": jnp.zeros(256, jnp.float32)}

    g = _ones(256)
    dropped = jax.jit(overwrite_velocity, donate_argnums=0)
    v["unused_offered"], v["unused_aliased"] = _offered_aliased(dropped, state(), g)
    s = state()
    dropped(s, g)
    v["unused_velocity_deleted"] = s["velocity"].is_deleted()
    kept = jax.jit(overwrite_velocity_kept, donate_argnums=0, keep_unused=True)
    v["kept_aliased"] = _offered_aliased(kept, state(), g)[1]
    s = state()
    kept(s, g)
    v["kept_velocity_deleted"] = s["velocity"].is_deleted()

    x = jnp.arange(1024, dtype=jnp.float32)
    view = np.asarray(x)
    v["view_zero_copy"] = view.__array_interface__["data"][0] == x.unsafe_buffer_pointer()
    ok(x)
    v["view_x_deleted"] = x.is_deleted()
    del view
    x = jnp.arange(1024, dtype=jnp.float32)
    copy = np.array(x)
    where = x.unsafe_buffer_pointer()
    v["view_copy_in_place"] = ok(x).unsafe_buffer_pointer() == where
    del copy
    x = jnp.arange(1024, dtype=jnp.float32)
    view = np.asarray(x)
    del view
    ok(x)
    v["view_freed_deleted"] = x.is_deleted()

    ema = jax.jit(lambda t: {"params": t["params"] * 0.9, "ema": t["ema"]}, donate_argnums=0)
    p = _ones(256)
    try:
        ema({"params": p, "ema": p})
    except jax.errors.JaxRuntimeError as err:
        v["twice_reason"] = str(err).split("INVALID_ARGUMENT: ")[1].split(" (")[0]
    v["twice_params_deleted"] = p.is_deleted()

    def no_wraps(fn):
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs)

        return wrapper

    by_keyword = jax.jit(no_wraps(lambda params, grads: params - grads), donate_argnums=0)
    v["kw_offered"] = _offered_aliased(by_keyword, params=_ones(256), grads=_ones(256))[0]

    grid = jnp.zeros((512, 512), jnp.float32)

    def plan(fn):
        c = jax.jit(fn, donate_argnums=0).lower(grid).compile()
        return c.memory_analysis(), c.as_text().count(" copy(")

    v["grid_nbytes"] = grid.nbytes
    v["bump_temp"] = plan(lambda x: x.at[0, 0].add(1.0))[0].temp_size_in_bytes
    mem, copies = plan(lambda x: (x.at[0, 0].set(1.0), x[0, 0]))
    v["report_alias"] = mem.alias_size_in_bytes
    v["report_temp"] = mem.temp_size_in_bytes
    v["report_copies"] = copies
    v["split_temp"] = plan(lambda x: x.at[0, 0].set(1.0))[0].temp_size_in_bytes
    return {k: str(x) for k, x in v.items()}


EXPECTED = {
    "donate_argnums": donate_argnums_values,
    "state_tree": state_tree_values,
    "lifetimes": lifetimes_values,
    "silent_donation": silent_donation_values,
}


# --------------------------------------------------------------------------- lesson 5
@lru_cache(None)
def sharded_state_values() -> dict[str, str]:
    """The sharded_state lesson's values, from recompute_sharded.py in its own process.

    Eight CPU devices need `jax_num_cpu_devices` set before JAX's backend starts,
    and this process has already started it with one device for the lessons above.
    """
    import json  # here, with the one function that needs them: this block merges alone
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).with_name("recompute_sharded.py")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=600,
        env=dict(os.environ, JAX_PLATFORMS="cpu"),
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout)


# one recomputation for the five sharded lessons (a key two of them glue, jax_version, has one value)
for _lesson in ("sharded_state", "sharded_auto_axes", "sharded_pmap", "sharded_device_put", "sharded_optax"):
    EXPECTED[_lesson] = sharded_state_values
