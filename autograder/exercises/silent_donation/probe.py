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
argument reads ``donated=True`` there while nothing is aliased or deleted. JAX's
warnings raised while lowering or calling a step ("Some donated buffers were not
usable": a buffer declared donated that no output can take) are recorded too.

Each step, and each part of a step's probe (lowering, a positional call, a keyword
call), runs apart: one error, or one step missing, costs only the checks that need it.
"""
import re

import numpy as np

from autograder.exercises.common import (alias_bytes, buffer_of, deleted, encode_array,
                                         error_text, facts_of, learner_line, quiet)

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


def _nbytes(tree):
    import jax

    return int(sum(leaf.nbytes for leaf in jax.tree.leaves(tree)))


def _guard(record, body, key="error"):
    """Run ``body(record)``; an exception goes to ``record[key]`` (with its line in the
    learner's cell under ``key + "_where"``) and JAX's warnings to ``record["warnings"]``."""
    record.setdefault(key, None)
    record.setdefault("warnings", [])
    try:
        with quiet() as caught:
            body(record)
    except BaseException as exc:  # learner code may raise anything, even SystemExit
        record[key], record[key + "_where"] = error_text(exc), learner_line(exc)
    record["warnings"] += caught
    return record


def _lowering(record, fn, *args):
    """``record["alias_bytes"]``, the compiled module's parameter count (``params``: fewer
    than the arguments when jit dropped an unused one) and the jitted function's
    parameter names (``signature``), or ``record["lower_error"]`` when lowering raised."""
    import inspect

    def body(rec):
        rec["alias_bytes"] = alias_bytes(fn, *args)
        if hasattr(fn, "lower"):
            main = MAIN.search(fn.lower(*args).as_text())
            rec["params"] = len(PARAM.findall(main.group(1))) if main else None

    record.update(alias_bytes=None, params=None)
    try:
        record["signature"] = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        record["signature"] = None
    _guard(record, body, "lower_error")


MAIN = re.compile(r"func\.func public @main\((.*)\) ->")
PARAM = re.compile(r"%arg\d+:")


def _train_step(fn, inputs):
    record = {"state_bytes": _nbytes(inputs["state"]), "result": None, "result_type": None}
    _lowering(record, fn, _device(inputs["state"]), _device(inputs["batch"]))
    state, batch = _device(inputs["state"]), _device(inputs["batch"])

    def body(record):
        out = fn(state, batch)
        ok = isinstance(out, dict) and sorted(map(str, out)) == ["b", "w"]
        record["result"] = {k: encode_array(out[k]) for k in ("b", "w")} if ok else None
        record["result_type"] = type(out).__name__

    _guard(record, body)
    record["state_deleted"], record["batch_deleted"] = deleted(state), deleted(batch)
    return record


def _reset(fn, inputs):
    record = {"acc_bytes": _nbytes(inputs["acc"]), "result": None, "type": None, "dtype": None}
    _lowering(record, fn, _device(inputs["acc"]))
    acc = _device(inputs["acc"])

    def body(record):
        out = fn(acc)
        record["result"] = encode_array(out)
        record.update(facts_of(out))

    _guard(record, body)
    record["acc_deleted"] = any(deleted(acc))
    return record


def _run(fn, inputs):
    """``run(step, state, n)`` with a donating step that records, per call, whether the
    buffer it received was donated (deleted after the call, ``donated``) and whether it
    was the one the loop must hand it (``received``: the caller's state on call 1, the
    previous call's result after), so a copy donated in its place is seen as a copy; and
    whether the caller's state was deleted (``caller_deleted``)."""
    import jax

    jitted = jax.jit(run_step, donate_argnums=0)
    calls, received, expect = [], [], []

    def step(s):
        """The donating step, recording whether each state it is given gets donated."""
        received.append(buffer_of(s) is not None and buffer_of(s) == expect[-1])
        out = jitted(s)
        calls.append(bool(getattr(s, "is_deleted", lambda: False)()))
        expect.append(buffer_of(out))
        return out

    def body(record):
        state = _device(inputs["run_state"])
        expect.append(buffer_of(state))
        try:
            final, history = fn(step, state, RUN_STEPS)
        finally:
            record["caller_deleted"] = bool(state.is_deleted())
        record["donated"] = calls
        record["final"] = encode_array(final)
        entries, views = _entries(history)
        record["history"] = None if entries is None else [encode_array(h) for h in entries]
        record["history_types"] = None if entries is None else [type(h).__name__ for h in entries]
        record["history_views"] = views

    return _guard({"error": None, "donated": calls, "received": received}, body)


def _entries(history):
    """``(entries, views)`` of a history ``run`` returned: a list's or tuple's items, or the
    rows of one NumPy array (``np.stack`` of the copies), at most ``RUN_STEPS + 2``; and
    whether each is a NumPy view, an array that does not own its data (``np.asarray`` of
    a ``jax.Array`` on CPU; a row is one when its array is). ``(None, None)`` for anything
    else."""
    if isinstance(history, (list, tuple)):
        items = list(history[:RUN_STEPS + 2])
        return items, [isinstance(h, np.ndarray) and not h.flags.owndata for h in items]
    if isinstance(history, np.ndarray) and history.ndim >= 1:
        items = list(history[:RUN_STEPS + 2])
        return items, [not history.flags.owndata] * len(items)
    return None, None


def _apply_delta(fn, inputs):
    def call(keyword):
        def body(rec):
            delta, state = _device(inputs["delta"]), _device(inputs["apply_state"])
            rec["delta"], rec["state"] = delta, state
            out = fn(delta=delta, state=state) if keyword else fn(delta, state)
            rec.update(result=encode_array(out), **facts_of(out))

        rec = _guard({"result": None, "type": None}, body)
        delta, state = rec.pop("delta", None), rec.pop("state", None)
        rec["state_deleted"], rec["delta_deleted"] = any(deleted(state)), any(deleted(delta))
        return rec

    record = {"error": None, "state_bytes": int(inputs["apply_state"].nbytes)}
    _lowering(record, fn, _device(inputs["delta"]), _device(inputs["apply_state"]))
    record["positional"], record["keyword"] = call(keyword=False), call(keyword=True)
    record["warnings"] += record["positional"]["warnings"] + record["keyword"]["warnings"]
    return record


PROBES = {"train_step": _train_step, "reset": _reset, "run": _run, "apply_delta": _apply_delta}


def observe(ns, seed):
    """Run each probe against the learner's function of that name; a step the answer does
    not define reads ``{"missing": True}`` (``{"missing": name}`` for the whole
    observation when none is defined)."""
    if not any(callable(ns.get(name)) for name in FUNCTIONS):
        return {"missing": FUNCTIONS[0]}
    inputs = make_inputs(seed)
    return {name: probe(ns[name], inputs) if callable(ns.get(name)) else {"missing": True}
            for name, probe in PROBES.items()}
