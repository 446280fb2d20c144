"""Probes for the ``update_with_donate(state, delta)`` exercise.

:func:`observe` runs in the learner's process after their code, and returns a
JSON-safe dict. The grader regenerates the same inputs with :func:`make_inputs`
to compute expected values on its side.

Calls are kept apart so that one slip costs only its own checks. The calls that
observe values, types, the empty input and compiles hand in inputs whose buffers a
NumPy view holds: on the CPU backend the grader runs on, JAX does not donate a
buffer a view still holds (lesson 4, "A NumPy view of the input"), so a learner's
stray read of ``state`` after the call cannot stop them. The calls that observe
donation (``donation``) and the rebinding loop hand in plain buffers.
"""
import tempfile

import numpy as np

from autograder.exercises.common import (EventCounter, deleted, encode_array, error_text,
                                         facts_of, held_elsewhere, learner_line, lowered_modules, quiet,
                                         stopped_by)

FUNCTION = "update_with_donate"
VALUE_LENGTHS = (1, 32, 64, 3000)
COMPILE_LENGTHS = (32, 32, 32, 64, 32)  # repeats, a new shape, then back
REBIND_STEPS = 50
REBIND_LENGTH = 32  # a length already compiled, so the loop adds no compile


def make_inputs(seed, n):
    """Return ``(state, delta)`` as float32 NumPy arrays of shape ``(n,)``."""
    rng = np.random.default_rng([seed, n])
    state = rng.standard_normal(n).astype(np.float32)
    delta = rng.standard_normal(n).astype(np.float32)
    return state, delta


def _device_pair(seed, n):
    import jax

    state, delta = make_inputs(seed, n)
    # Two NumPy arrays give two distinct device buffers. device_put compiles
    # nothing, where jnp.array would compile a copy per length (~5 ms each).
    return jax.device_put(state), jax.device_put(delta)


def _held_pair(seed, n):
    """``(state, delta, views)``: a device pair, each buffer held by a NumPy view (on CPU)
    for as long as ``views`` lives, so no call can donate it."""
    state, delta = _device_pair(seed, n)
    return state, delta, (np.asarray(state), np.asarray(delta))


def _held_call(fn, seed, n):
    state, delta, views = _held_pair(seed, n)
    record = _call(fn, state, delta)
    del views
    return record


def _call(fn, state, delta, held=False):
    """Call ``fn`` once; record the result, errors and both arguments' fate; with ``held``,
    whether a ``state`` left alive is held by something outside the call (``state_held``:
    a view kept; False means ``fn`` could have donated it and handed its helper another
    array)."""
    record = {"error": None, "where": None, "warnings": []}
    try:
        with quiet() as caught:
            out = fn(state, delta)
            record["result"] = encode_array(out)
            record.update(facts_of(out))
    except BaseException as exc:  # learner code may raise anything, even SystemExit
        record["error"], record["where"] = error_text(exc), learner_line(exc)
    record["warnings"] = caught
    record["state_deleted"], record["delta_deleted"] = _deleted(state), _deleted(delta)
    if held:
        record["state_held"] = held_elsewhere(state)
    return record


def _compiles(fn, seed, counter):
    """Trace/compile counts per call, the names of the modules each call lowered, and
    every module JAX lowered meanwhile (one dump folder per call)."""
    import jax

    jax.clear_caches()  # the notebook may already have called fn with these lengths
    sentinel = _warm_sentinel()
    rows, lowered = [], []
    try:
        for n in COMPILE_LENGTHS:
            dump = tempfile.mkdtemp(prefix="jax-ir-")
            jax.config.update("jax_dump_ir_to", dump)
            state, delta, views = _held_pair(seed, n)
            with counter:
                rec = _call(fn, state, delta)
            del views
            jax.config.update("jax_dump_ir_to", "")
            modules = lowered_modules(dump)
            lowered += modules
            rows.append({"n": n, "traces": counter.traces, "compiles": counter.compiles,
                         "modules": [f"{m['module']}({', '.join(m['args'])})" for m in modules],
                         "error": rec["error"], "where": rec["where"], "warnings": rec["warnings"],
                         "caches_cleared": _cleared(sentinel)})
            if rows[-1]["caches_cleared"]:
                sentinel = _warm_sentinel()
    finally:
        jax.config.update("jax_dump_ir_to", "")
    return rows, lowered


def _warm_sentinel():
    """A jitted identity of the grader's, compiled once: JAX's caches were emptied (by
    ``jax.clear_caches()``, however the learner reached it) when its cache is empty again."""
    import warnings

    import jax

    try:
        sentinel = jax.jit(lambda x: x)
        # the grader's own compile: what JAX warns of here (a compile cache entry it could
        # not read, the learner having closed its descriptors) is not the learner's output
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sentinel(np.float32(0))
        return sentinel
    except Exception:  # jax.jit replaced by the learner's code: nothing to tell
        return None


def _cleared(sentinel):
    """Whether JAX's caches were emptied since ``sentinel`` was compiled (None where this
    JAX has no ``_cache_size``, or no sentinel could be made)."""
    try:
        return None if sentinel is None else sentinel._cache_size() == 0
    except Exception:  # no _cache_size on this JAX's jitted functions
        return None


def _deleted(value):
    """Whether ``value`` is a deleted JAX array (False for anything else: a NumPy result)."""
    return any(deleted(value))


def _rebind(fn, seed):
    """The loop ``state = fn(state, delta)``; on an error, which argument of the failing
    call was already deleted when it was passed (``state`` is the previous result)."""
    state, delta = _device_pair(seed, REBIND_LENGTH)
    step = 0
    try:
        with quiet():
            for step in range(REBIND_STEPS):
                passed = (_deleted(state), _deleted(delta))
                state = fn(state, delta)
        return {"error": None, "where": None, "result": encode_array(state)}
    except BaseException as exc:
        return {"error": error_text(exc), "where": learner_line(exc), "result": None, "call": step + 1,
                "state_was_deleted": passed[0], "delta_was_deleted": passed[1]}


def observe(ns, seed):
    """Run every probe against ``ns[FUNCTION]``; see the module docstring."""
    fn = ns.get(FUNCTION)
    if not callable(fn):
        return {"missing": FUNCTION}
    counter = EventCounter()
    obs = {}
    obs["compiles"], obs["lowered"] = _compiles(fn, seed, counter)  # first: fresh caches
    obs["values"] = {str(n): _held_call(fn, seed, n) for n in VALUE_LENGTHS}
    obs["empty"] = _held_call(fn, seed, 0)
    obs["donation"] = {str(n): _call(fn, *_device_pair(seed, n), held=True) for n in VALUE_LENGTHS}
    obs["rebind"] = _rebind(fn, seed)
    obs["stopped"] = stopped_by([*obs["compiles"], *obs["values"].values(), obs["empty"],
                                 *obs["donation"].values(), obs["rebind"]])
    return obs
