"""Probes for the ``silent_donation`` exercise.

The learner repairs four steps whose donation silently did nothing:
``train_step(state, batch)`` (a donating jit nested in an outer jit),
``reset(acc)`` (a donated argument the function never reads),
``run(step, state, n)`` (a NumPy view of the state kept across each step) and
``apply_delta(delta, state)`` (``donate_argnums`` pointing at the wrong
argument). :func:`observe` calls each on inputs drawn from the seed and records
the evidence of donation (which inputs were deleted, ``alias_size_in_bytes``
of the compiled step) and the values returned. The grader rebuilds the inputs
with :func:`make_inputs` and recomputes the values itself.

Evidence is ``is_deleted()`` after the call and ``memory_analysis()
.alias_size_in_bytes``, never ``lowered.args_info``: on JAX 0.10.2 and 0.12.0.1 an unused
argument reads ``donated=True`` there while nothing is aliased or deleted.
"""
import numpy as np

from autograder.exercises.common import encode_array, error_text, facts_of, quiet

FUNCTIONS = ("train_step", "reset", "run", "apply_delta")
LEARNING_RATE = 0.1
RUN_STEPS = 4


def loss(state, batch):
    """Mean squared error of a linear model ``x @ w + b`` (the train step's loss)."""
    import jax.numpy as jnp

    return jnp.mean((batch["x"] @ state["w"] + state["b"] - batch["y"]) ** 2)


def run_step(s):
    """The step the probe hands to ``run``: ``s * 0.5 + 1`` (float32 in, float32 out)."""
    return s * 0.5 + 1.0


def make_inputs(seed):
    """Every input the probes use, as float32 NumPy arrays (dicts for trees)."""
    rng = np.random.default_rng([seed, 41])
    n, m, k = (int(d) for d in rng.choice(np.arange(2, 9), size=3, replace=False))
    f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    acc = f32(int(rng.integers(5, 40)))
    acc[:3] = [np.nan, np.inf, -np.inf]  # a diverged run: reset must still give zeros
    length = int(rng.integers(5, 40))
    return {"state": {"b": f32(m), "w": f32(n, m)}, "batch": {"x": f32(k, n), "y": f32(k, m)},
            "acc": acc, "run_state": f32(int(rng.integers(5, 40))),
            "delta": f32(length), "apply_state": f32(length)}


def _device(tree):
    """Fresh JAX arrays, one buffer per leaf (device_put compiles nothing)."""
    import jax

    return jax.tree.map(jax.device_put, tree)


def _deleted(tree):
    import jax

    return [bool(leaf.is_deleted()) for leaf in jax.tree.leaves(tree)]


def _alias_bytes(fn, *args, **kwargs):
    """``alias_size_in_bytes`` of ``fn`` compiled for these arguments, or None if
    ``fn`` is not the function made by ``jax.jit`` (it has no ``.lower``)."""
    if not hasattr(fn, "lower"):
        return None
    return int(fn.lower(*args, **kwargs).compile().memory_analysis().alias_size_in_bytes)


def _nbytes(tree):
    import jax

    return int(sum(leaf.nbytes for leaf in jax.tree.leaves(tree)))


def _guard(record, body):
    try:
        with quiet():
            body(record)
    except BaseException as exc:  # learner code may raise anything, even SystemExit
        record["error"] = error_text(exc)
    return record


def _train_step(fn, inputs):
    def body(record):
        state, batch = _device(inputs["state"]), _device(inputs["batch"])
        record["state_bytes"] = _nbytes(state)
        record["alias_bytes"] = _alias_bytes(fn, state, batch)
        out = fn(state, batch)
        record["state_deleted"], record["batch_deleted"] = _deleted(state), _deleted(batch)
        ok = isinstance(out, dict) and sorted(map(str, out)) == ["b", "w"]
        record["result"] = {k: encode_array(out[k]) for k in ("b", "w")} if ok else None
        record["result_type"] = type(out).__name__

    return _guard({"error": None}, body)


def _reset(fn, inputs):
    def body(record):
        acc = _device(inputs["acc"])
        record["acc_bytes"] = _nbytes(acc)
        record["alias_bytes"] = _alias_bytes(fn, _device(inputs["acc"]))
        out = fn(acc)
        record["acc_deleted"] = bool(acc.is_deleted())
        record["result"] = encode_array(out)
        record.update(facts_of(out))

    return _guard({"error": None}, body)


def _run(fn, inputs):
    import jax

    jitted = jax.jit(run_step, donate_argnums=0)
    calls = []

    def step(s):
        """The donating step, recording whether each state it is given gets donated."""
        out = jitted(s)
        calls.append(bool(getattr(s, "is_deleted", lambda: False)()))
        return out

    def body(record):
        state = _device(inputs["run_state"])
        final, history = fn(step, state, RUN_STEPS)
        record["donated"] = calls
        record["final"] = encode_array(final)
        record["history"] = ([encode_array(h) for h in history[:RUN_STEPS + 2]]
                             if isinstance(history, (list, tuple)) else None)
        record["history_types"] = ([type(h).__name__ for h in history[:RUN_STEPS + 2]]
                                   if isinstance(history, (list, tuple)) else None)

    return _guard({"error": None, "donated": calls}, body)


def _apply_delta(fn, inputs):
    def call(record, keyword):
        delta, state = _device(inputs["delta"]), _device(inputs["apply_state"])
        out = fn(delta=delta, state=state) if keyword else fn(delta, state)
        return {"state_deleted": bool(state.is_deleted()), "delta_deleted": bool(delta.is_deleted()),
                "result": encode_array(out), **facts_of(out)}

    def body(record):
        record["state_bytes"] = int(inputs["apply_state"].nbytes)
        record["alias_bytes"] = _alias_bytes(fn, _device(inputs["delta"]),
                                             _device(inputs["apply_state"]))
        record["positional"] = call(record, keyword=False)
        record["keyword"] = call(record, keyword=True)

    return _guard({"error": None}, body)


PROBES = {"train_step": _train_step, "reset": _reset, "run": _run, "apply_delta": _apply_delta}


def observe(ns, seed):
    """Run each probe against the learner's function of that name."""
    for name in FUNCTIONS:
        if not callable(ns.get(name)):
            return {"missing": name}
    inputs = make_inputs(seed)
    return {name: probe(ns[name], inputs) for name, probe in PROBES.items()}
