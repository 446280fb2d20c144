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
import numpy as np

from autograder.exercises.common import encode_array, error_text, quiet


FUNCTIONS = ("make_train_step", "train")
SIZES = (3, 8, 1)  # inputs, hidden units, outputs
BATCH = 8
STEPS = 5
LEARNING_RATE = 0.05
PARAM_NAMES = ("b1", "b2", "w1", "w2")  # jax.tree order of the params dict
METRIC_KEYS = ("final_loss", "losses", "max_change", "start_params")


def loss_fn(params, batch):
    """Mean squared error of a one-hidden-layer tanh MLP."""
    import jax.numpy as jnp

    hidden = jnp.tanh(batch["x"] @ params["w1"] + params["b1"])
    return jnp.mean((hidden @ params["w2"] + params["b2"] - batch["y"]) ** 2)


def make_optimizer():
    import optax

    return optax.adam(LEARNING_RATE)


def make_inputs(seed):
    """``(params, batches)`` as NumPy float32 arrays (dicts), fixed by ``seed``."""
    rng = np.random.default_rng([seed, 31])
    n_in, n_hidden, n_out = SIZES
    params = {"w1": rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in),
              "b1": np.zeros(n_hidden),
              "w2": rng.standard_normal((n_hidden, n_out)) / np.sqrt(n_hidden),
              "b2": np.zeros(n_out)}
    batches = []
    for _ in range(STEPS):
        x = rng.standard_normal((BATCH, n_in))
        batches.append({"x": x, "y": np.sin(x.sum(axis=1, keepdims=True))})
    cast = lambda tree: {k: np.asarray(v, np.float32) for k, v in tree.items()}  # noqa: E731
    return cast(params), [cast(b) for b in batches]


def device_inputs(seed):
    """The same inputs as fresh JAX arrays, each leaf in a buffer of its own."""
    import jax.numpy as jnp

    params, batches = make_inputs(seed)
    to_jax = lambda tree: {k: jnp.array(v) for k, v in tree.items()}  # noqa: E731
    return to_jax(params), [to_jax(b) for b in batches]


def _leaves(tree):
    import jax

    return jax.tree.leaves(tree)


def _any_deleted(tree):
    return any(bool(getattr(leaf, "is_deleted", lambda: False)()) for leaf in _leaves(tree))


def encode_params(tree):
    """``{name: encoded array}`` for a params dict, or None if it is not one."""
    if not isinstance(tree, dict) or sorted(map(str, tree)) != list(PARAM_NAMES):
        return None
    return {name: encode_array(tree[name]) for name in PARAM_NAMES}


def _losses(value):
    if not isinstance(value, (list, tuple)) or len(value) > 100:
        return None
    return encode_array(np.asarray([np.asarray(v, dtype=np.float32) for v in value]))


def _scalar(value):
    return encode_array(np.asarray(value, dtype=np.float32))


DONATION_WARNING = "Some donated buffers were not usable"


def _live():
    """``(arrays, bytes)`` that ``jax.live_arrays()`` lists now, after a collection (so an
    array nothing refers to is not counted)."""
    import gc

    import jax

    gc.collect()
    arrays = jax.live_arrays()
    return len(arrays), int(sum(a.nbytes for a in arrays))


class _Watched:
    """The learner's step, called as it is; after each call returns, what is live beyond
    ``outside`` is appended to ``log`` as ``[arrays, bytes]``. Other attributes
    (``lower``, ...) are the step's own."""

    def __init__(self, step, log, outside):
        self._step, self._log, self._outside = step, log, outside

    def __call__(self, *args, **kwargs):
        out = self._step(*args, **kwargs)
        arrays, nbytes = _live()
        self._log.append([arrays - self._outside[0], nbytes - self._outside[1]])
        return out

    def __getattr__(self, name):
        return getattr(self._step, name)


def _watching(fn, log, outside):
    """Put a watcher around ``make_train_step`` where ``fn`` (the learner's ``train``) looks
    it up; returns the function that puts it back."""
    names = getattr(fn, "__globals__", None)
    make = names.get("make_train_step") if isinstance(names, dict) else None
    if not callable(make):
        return lambda: None
    names["make_train_step"] = lambda *a, **k: _Watched(make(*a, **k), log, outside)
    return lambda: names.__setitem__("make_train_step", make)


def _donation_warnings(messages):
    return [m for m in messages if m.startswith(DONATION_WARNING)][:5]


def _train(fn, seed):
    """Run the learner's ``train`` once and read everything it returned."""
    import jax

    params, batches = device_inputs(seed)
    record = {"error": None, "read_error": None, "held": [], "warnings": []}
    outside = _live()
    put_back = _watching(fn, record["held"], outside)
    try:
        with quiet() as warned:
            out = fn(params, batches, loss_fn, make_optimizer())
    except BaseException as exc:  # learner code may raise anything, even SystemExit
        record["error"] = error_text(exc)
        return record
    finally:
        put_back()
        record["warnings"] = _donation_warnings(warned)
    record["caller_params_deleted"] = _any_deleted(params)
    record["batches_deleted"] = _any_deleted(batches)
    try:  # reading what train returned is part of the check: nothing may be deleted
        final, metrics = out
        # what train hands back must be readable: a deleted array encodes as nothing
        record["returned_deleted"] = _any_deleted(final) or (
            isinstance(metrics, dict) and _any_deleted(list(metrics.values())))
        record["metric_keys"] = sorted(map(str, metrics)) if isinstance(metrics, dict) else None
        record["final_params"] = encode_params(final)
        record["losses"] = _losses(metrics.get("losses"))
        record["final_loss"] = _scalar(metrics.get("final_loss"))
        record["max_change"] = _scalar(metrics.get("max_change"))
        start = metrics.get("start_params")
        record["start_params"] = encode_params(start)
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


def _donation_flags(info):
    return [bool(a.donated) for a in _leaves_with(info, lambda x: hasattr(x, "donated"))]


def _leaves_with(tree, is_leaf):
    import jax

    return jax.tree.leaves(tree, is_leaf=is_leaf)


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
                info = lowered.args_info[0]
                record["state_donated"] = _donation_flags(info[0])
                record["batch_donated"] = _donation_flags(info[1])
                record["alias_bytes"] = int(lowered.compile().memory_analysis().alias_size_in_bytes)
            new_state, loss = step(state, batch)
            record["state_deleted"] = [bool(leaf.is_deleted()) for leaf in _leaves(state)]
            record["batch_deleted"] = _any_deleted(batch)
            record["loss"] = _scalar(loss)
            record["new_params"] = encode_params(new_state[0])
    except BaseException as exc:
        record["error"] = error_text(exc)
    record["warnings"] = _donation_warnings(warned)
    return record


def observe(ns, seed):
    """Run the probes against the learner's two functions; see the module docstring."""
    for name in FUNCTIONS:
        if not callable(ns.get(name)):
            return {"missing": name}
    return {"train": _train(ns["train"], seed), "step": _step(ns["make_train_step"], seed)}
