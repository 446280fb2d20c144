"""Probes for the ``update_with_donate(state, delta)`` exercise.

:func:`observe` runs in the learner's process after their code, and returns a
JSON-safe dict. The grader regenerates the same inputs with :func:`make_inputs`
to compute expected values on its side.
"""
import numpy as np

from .common import EventCounter, describe, encode_array, error_text, quiet

FUNCTION = "update_with_donate"
VALUE_LENGTHS = (1, 32, 64, 3000)
COMPILE_LENGTHS = (32, 32, 32, 64, 32)  # repeats, a new shape, then back
REBIND_STEPS = 50


def make_inputs(seed, n):
    """Return ``(state, delta)`` as float32 NumPy arrays of shape ``(n,)``."""
    rng = np.random.default_rng([seed, n])
    state = rng.standard_normal(n).astype(np.float32)
    delta = rng.standard_normal(n).astype(np.float32)
    return state, delta


def _device_pair(seed, n):
    import jax.numpy as jnp

    state, delta = make_inputs(seed, n)
    # jnp.array copies, so the two arguments live in distinct device buffers.
    return jnp.array(state), jnp.array(delta)


def _call(fn, state, delta):
    """Call ``fn`` once; record the result, errors and both arguments' fate."""
    record = {"error": None}
    try:
        with quiet():
            out = fn(state, delta)
            record["result"] = encode_array(out)
            record.update(describe(out))
    except BaseException as exc:  # learner code may raise anything, even SystemExit
        record["error"] = error_text(exc)
    record["state_deleted"] = bool(state.is_deleted())
    record["delta_deleted"] = bool(delta.is_deleted())
    return record


def _compiles(fn, seed, counter):
    import jax

    jax.clear_caches()  # the notebook may already have called fn with these lengths
    rows = []
    for n in COMPILE_LENGTHS:
        state, delta = _device_pair(seed, n)
        with counter:
            rec = _call(fn, state, delta)
        rows.append({"n": n, "traces": counter.traces, "compiles": counter.compiles,
                     "error": rec["error"]})
    return rows


def _rebind(fn, seed):
    state, delta = _device_pair(seed, 16)
    try:
        with quiet():
            for _ in range(REBIND_STEPS):
                state = fn(state, delta)
        return {"error": None, "result": encode_array(state)}
    except BaseException as exc:
        return {"error": error_text(exc), "result": None}


def _jitted_helpers(ns):
    """Donation flags of every jitted callable in the learner's namespace.

    Read from ``lower(...).args_info`` (JAX's record of which arguments are
    donated), lowered for two float32[8] arguments.
    """
    import jax

    spec = jax.ShapeDtypeStruct((8,), np.float32)
    found = []
    for name, obj in list(ns.items()):
        if name.startswith("__") or not callable(obj) or not hasattr(obj, "lower"):
            continue
        try:
            with quiet():
                info = obj.lower(spec, spec).args_info[0]
            found.append({"name": name, "donated": [bool(a.donated) for a in info]})
        except BaseException:
            continue  # not a two-argument jitted helper
    return found


def observe(ns, seed):
    """Run every probe against ``ns[FUNCTION]``; see the module docstring."""
    fn = ns.get(FUNCTION)
    if not callable(fn):
        return {"missing": FUNCTION}
    counter = EventCounter()
    obs = {"compiles": _compiles(fn, seed, counter)}  # first: needs fresh caches
    obs["values"] = {str(n): _call(fn, *_device_pair(seed, n)) for n in VALUE_LENGTHS}
    obs["empty"] = _call(fn, *_device_pair(seed, 0))
    obs["rebind"] = _rebind(fn, seed)
    obs["helpers"] = _jitted_helpers(ns)
    return obs
