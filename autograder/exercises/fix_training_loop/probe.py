"""Probes for the ``fix_training_loop`` exercise.

The learner writes ``make_train_step(loss_fn, optimizer)`` (a jitted step
``(train_state, batch) -> (train_state, loss)`` with ``train_state = (params,
opt_state)``) and ``train(params, batches, loss_fn, optimizer)`` returning
``(params, metrics)``. :func:`observe` runs both on a tiny MLP built here from
the seed, so the grader can rebuild the same run with :func:`make_inputs`,
:func:`loss_fn` and :func:`make_optimizer` and compare.

While ``train`` runs, the step it gets from ``make_train_step`` is watched: right
after each call returns (the moment the old and the new state could both be
alive), the probe counts the arrays ``jax.live_arrays()`` lists and their bytes,
less those live before ``train`` was called, as the lesson on lifetimes measures a
loop. JAX's warning that donated buffers were not usable is recorded too (it goes
to stderr in a notebook, where nbgrader's Validate fails on it).
"""
import functools
import sys
import types

import numpy as np

from autograder.exercises.common import (deleted, donated_leaves, encode_array, error_text, live,
                                         quiet)


FUNCTIONS = ("make_train_step", "train")
STEPS = 5
LEARNING_RATE = 0.05
METRIC_KEYS = ("final_loss", "losses", "max_change", "start_params")
# The notebook's example is a flat dict {w1, b1, w2, b2} of sizes (3, 8, 1). The hidden
# runs draw, from the seed, other names, another nesting and other sizes, so an answer
# fitted to the example (keys written out, shapes assumed) is seen to be.
LAYER_NAMES = ("encoder", "hidden", "dense_0", "trunk", "layer_a")
HEAD_NAMES = ("head", "readout", "out", "dense_1", "layer_b")
WEIGHT_NAMES = ("kernel", "weight", "W", "matrix")
BIAS_NAMES = ("bias", "offset", "beta", "shift")


def layout(seed):
    """``(sizes, names)`` of the seed's model: ``sizes = (inputs, hidden units, outputs)``,
    never the notebook's ``(3, 8, 1)``; ``names`` is either four flat keys
    ``(w_in, b_in, w_out, b_out)`` or ``((layer, head), (weight, bias))`` for a dict of two
    layer dicts."""
    rng = np.random.default_rng([seed, 37])
    sizes = (int(rng.choice([2, 4, 5])), int(rng.choice([6, 7, 9, 10])), int(rng.choice([1, 2])))
    layer, head = str(rng.choice(LAYER_NAMES)), str(rng.choice(HEAD_NAMES))
    weight, bias = str(rng.choice(WEIGHT_NAMES)), str(rng.choice(BIAS_NAMES))
    if rng.integers(2):
        return sizes, ((layer, head), (weight, bias))
    return sizes, (f"{layer}_{weight}", f"{layer}_{bias}", f"{head}_{weight}", f"{head}_{bias}")


def _layers(params):
    """``((w_in, b_in), (w_out, b_out))`` of a params tree, told apart by shape (the sizes
    of :func:`layout` are distinct), whatever the tree's names and nesting."""
    import jax

    leaves = jax.tree.leaves(params)
    weights = sorted((a for a in leaves if a.ndim == 2), key=lambda a: -a.shape[1])
    biases = {a.shape[0]: a for a in leaves if a.ndim == 1}
    w_in, w_out = weights
    return (w_in, biases[w_in.shape[1]]), (w_out, biases[w_out.shape[1]])


def loss_fn(params, batch):
    """Mean squared error of a one-hidden-layer tanh MLP (params as :func:`layout` names them)."""
    import jax.numpy as jnp

    (w_in, b_in), (w_out, b_out) = _layers(params)
    hidden = jnp.tanh(batch["x"] @ w_in + b_in)
    return jnp.mean((hidden @ w_out + b_out - batch["y"]) ** 2)


def make_optimizer():
    import optax

    return optax.adam(LEARNING_RATE)


def make_inputs(seed):
    """``(params, batches)`` as NumPy float32 arrays (dicts), fixed by ``seed``: params
    named and nested as :func:`layout` says."""
    rng = np.random.default_rng([seed, 31])
    (n_in, n_hidden, n_out), names = layout(seed)
    f32 = lambda a: np.asarray(a, np.float32)  # noqa: E731
    w_in = f32(rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in))
    b_in = f32(rng.standard_normal(n_hidden) * 0.1)
    w_out = f32(rng.standard_normal((n_hidden, n_out)) / np.sqrt(n_hidden))
    b_out = f32(rng.standard_normal(n_out) * 0.1)
    if len(names) == 2:
        (layer, head), (weight, bias) = names
        params = {layer: {weight: w_in, bias: b_in}, head: {weight: w_out, bias: b_out}}
    else:
        params = dict(zip(names, (w_in, b_in, w_out, b_out)))
    batches = []
    # A batch of as many rows as hidden units: its targets have the shape of the output
    # layer's weights, so a step that donates the batch has its buffers taken (and
    # deleted), as in the notebook's example, not only a warning.
    for _ in range(STEPS):
        x = rng.standard_normal((n_hidden, n_in))
        y = np.sin(x.sum(axis=1, keepdims=True) + np.arange(n_out))
        batches.append({"x": f32(x), "y": f32(y)})
    return params, batches


def param_paths(params):
    """The ``keystr`` path of each leaf of a params tree, in ``jax.tree`` order."""
    import jax

    return [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_flatten_with_path(params)[0]]


def device_inputs(seed):
    """The same inputs as fresh JAX arrays, each leaf in a buffer of its own."""
    import jax
    import jax.numpy as jnp

    params, batches = make_inputs(seed)
    to_jax = lambda tree: jax.tree.map(jnp.array, tree)  # noqa: E731
    return to_jax(params), [to_jax(b) for b in batches]


def _leaves(tree):
    import jax

    return jax.tree.leaves(tree)


def _any_deleted(tree):
    return any(deleted(tree))


def encode_params(tree, like):
    """``{keystr path: encoded array}`` for a params tree of ``like``'s structure (the
    params the probe handed in), or None if it has another one."""
    import jax

    try:
        if jax.tree.structure(tree) != jax.tree.structure(like):
            return None
        return dict(zip(param_paths(tree), map(encode_array, jax.tree.leaves(tree))))
    except Exception:
        return None


def _losses(value):
    """The losses as float32, from a list or tuple of scalars or from one one-dimensional
    array (``jnp.stack`` of them: the same values in another container); None otherwise."""
    if getattr(value, "ndim", None) == 1 and hasattr(value, "__array__"):
        try:
            value = list(np.asarray(value))
        except Exception:  # a deleted jax.Array: test_runs_without_deleted_reads says so
            return None
    if not isinstance(value, (list, tuple)) or len(value) > 100:
        return None
    return encode_array(np.asarray([np.asarray(v, dtype=np.float32) for v in value]))


def _scalar(value):
    return encode_array(np.asarray(value, dtype=np.float32))


DONATION_WARNING = "Some donated buffers were not usable"


class _Watch:
    """Appends to ``log``, right after each call of a step the learner's ``make`` returned
    returns, what is live beyond ``outside`` (``[arrays, bytes]``), however ``train``
    reaches ``make`` and the step: by name, a default argument, a closure, a
    ``functools.partial``, a method. Nothing is replaced or wrapped; Python's own
    monitoring (:mod:`sys.monitoring`) reports each value ``make``'s code returns and
    each return from a call of one of those values (``C_RETURN``: jax.jit's function,
    a partial, an object; ``PY_RETURN`` of its code: a Python function)."""

    def __init__(self, make, log, outside):
        self._log, self._outside = log, outside
        self._make = _code_of(make)
        self._steps, self._codes = [], set()
        mon = sys.monitoring
        self._tool = next((t for t in (5, 4, 3) if mon.get_tool(t) is None), None)
        if self._tool is None or self._make is None:
            return
        mon.use_tool_id(self._tool, "course-probe")
        ev = mon.events
        try:
            mon.register_callback(self._tool, ev.PY_RETURN, self._returned)
            mon.register_callback(self._tool, ev.C_RETURN, self._called)  # reported while CALL is on
            mon.set_events(self._tool, ev.CALL)
            mon.set_local_events(self._tool, self._make, ev.PY_RETURN)
        except Exception:  # nothing watched: the memory check says it saw no step
            self.stop()

    def _returned(self, code, _offset, value):
        if code is self._make and callable(value) and not any(value is s for s in self._steps):
            self._steps.append(value)
            # a Python function's calls report no C_RETURN: its own code's returns are watched
            python = isinstance(value, (types.FunctionType, types.MethodType))
            step_code = _code_of(value) if python else None
            if step_code is not None and step_code not in self._codes:
                self._codes.add(step_code)
                sys.monitoring.set_local_events(self._tool, step_code, sys.monitoring.events.PY_RETURN)
        elif code in self._codes:
            self._held()

    def _called(self, _code, _offset, fn, _arg0):
        if any(fn is s for s in self._steps):
            self._held()

    def _held(self):
        arrays, nbytes = live()
        self._log.append([arrays - self._outside[0], nbytes - self._outside[1]])

    def stop(self):
        """Turn the events off and give the tool id back (once)."""
        tool, self._tool = self._tool, None
        if tool is None or self._make is None:
            return
        mon = sys.monitoring
        mon.set_events(tool, 0)
        for code in (self._make, *self._codes):
            mon.set_local_events(tool, code, 0)
        for event in (mon.events.PY_RETURN, mon.events.C_RETURN):
            mon.register_callback(tool, event, None)
        mon.free_tool_id(tool)


class _WatchByName:
    """:class:`_Watch` where Python has no :mod:`sys.monitoring` (before 3.12: the course's
    own venv is 3.12 or newer; the drift check grades the samples on an older JAX under an
    older Python): ``make_train_step`` is replaced where ``train`` looks it up by name, for
    the call, by one whose steps log as :class:`_Watch` does, and put back by :meth:`stop`.
    A ``train`` that reaches ``make`` otherwise (a default argument, a closure) is not seen."""

    def __init__(self, train, log, outside):
        self._names = getattr(train, "__globals__", None)
        self._make = self._names.get("make_train_step") if isinstance(self._names, dict) else None
        if not callable(self._make):
            return
        make = self._make

        def watched(*args, **kwargs):
            step = make(*args, **kwargs)

            def call(*a, **k):
                out = step(*a, **k)
                arrays, nbytes = live()
                log.append([arrays - outside[0], nbytes - outside[1]])
                return out
            return call
        self._names["make_train_step"] = watched

    def stop(self):
        """Put the learner's ``make_train_step`` back (once)."""
        make, self._make = self._make, None
        if callable(make):
            self._names["make_train_step"] = make


def _code_of(fn):
    """The code object a call of ``fn`` runs first: a Python function's, a bound method's,
    a ``functools.partial``'s function's, an object's ``__call__``'s; else None."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if not isinstance(fn, (types.FunctionType, types.MethodType)):
        fn = getattr(type(fn), "__call__", None)
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    return code if isinstance(code, types.CodeType) else None


def _donation_warnings(messages):
    return [m for m in messages if m.startswith(DONATION_WARNING)][:5]


def _train(fn, make, seed):
    """Run the learner's ``train`` once, watching the steps ``make`` (their
    ``make_train_step``) returns, and read everything it returned."""
    import jax

    params, batches = device_inputs(seed)
    record = {"error": None, "read_error": None, "held": [], "warnings": []}
    outside = live()
    watch = (_Watch(make, record["held"], outside) if hasattr(sys, "monitoring")
             else _WatchByName(fn, record["held"], outside))
    try:
        with quiet() as warned:
            out = fn(params, batches, loss_fn, make_optimizer())
    except BaseException as exc:  # learner code may raise anything, even SystemExit
        record["error"] = error_text(exc)
        return record
    finally:
        watch.stop()
        record["warnings"] = _donation_warnings(warned)
    record["caller_params_deleted"] = _any_deleted(params)
    record["batches_deleted"] = _any_deleted(batches)
    try:  # reading what train returned is part of the check: nothing may be deleted
        final, metrics = out
        # what train hands back must be readable: a deleted array encodes as nothing
        record["returned_deleted"] = _any_deleted(final) or (
            isinstance(metrics, dict) and _any_deleted(list(metrics.values())))
        record["metric_keys"] = sorted(map(str, metrics)) if isinstance(metrics, dict) else None
        record["final_params"] = encode_params(final, params)
        record["losses"] = _losses(metrics.get("losses"))
        record["final_loss"] = _scalar(metrics.get("final_loss"))
        record["max_change"] = _scalar(metrics.get("max_change"))
        start = metrics.get("start_params")
        record["start_params"] = encode_params(start, params)
    except BaseException as exc:
        record["read_error"] = error_text(exc)
        return record
    # The caller now donates its own params: a copy kept in metrics must survive.
    record["start_survives_caller_donation"] = None
    if not _any_deleted(params) and record["start_params"] is not None:
        with quiet():
            jax.jit(lambda p: jax.tree.map(lambda a: a * 2, p), donate_argnums=0)(params)
        record["start_survives_caller_donation"] = not _any_deleted(start)
    return record


def _step(make, seed):
    """Build the learner's step, read its compiled alias facts, run it once."""
    params, batches = device_inputs(seed)
    optimizer = make_optimizer()
    record = {"error": None, "jitted": False, "warnings": []}
    try:
        with quiet() as warned:
            step = make(loss_fn, optimizer)
            state = (params, optimizer.init(params))
            batch = batches[0]
            record["state_bytes"] = int(sum(leaf.nbytes for leaf in _leaves(state)))
            record["jitted"] = hasattr(step, "lower")
            if record["jitted"]:
                lowered = step.lower(state, batch)
                flags = donated_leaves(lowered)
                count = len(_leaves(state))
                record["state_donated"], record["batch_donated"] = flags[:count], flags[count:]
                record["alias_bytes"] = int(lowered.compile().memory_analysis().alias_size_in_bytes)
            new_state, loss = step(state, batch)
            record["state_deleted"] = [bool(leaf.is_deleted()) for leaf in _leaves(state)]
            record["batch_deleted"] = _any_deleted(batch)
            record["loss"] = _scalar(loss)
            record["new_params"] = encode_params(new_state[0], params)
    except BaseException as exc:
        record["error"] = error_text(exc)
    record["warnings"] = _donation_warnings(warned)
    return record


def observe(ns, seed):
    """Run the probes against the learner's two functions; see the module docstring."""
    for name in FUNCTIONS:
        if not callable(ns.get(name)):
            return {"missing": name}
    return {"train": _train(ns["train"], ns["make_train_step"], seed), "step": _step(ns["make_train_step"], seed)}
