"""Probes for the ``donation_report(fn, state, *args)`` exercise.

:func:`observe` runs in the learner's process after their code. For each case
in :data:`CASES` it builds a state tree from the seed, calls the learner's
function, and records a JSON-safe copy of the answer plus whether any leaf of
the caller's state was deleted by the call, how many times the step itself ran
(a report compiles it and never runs it) and JAX's warnings that donated buffers
were not usable (compiling with the state donated gives the case's own; another
means something else was donated). The grader rebuilds the same case with :func:`make_case` and compiles it
itself to know the right answer.

Some cases are there because guessing the pairing gives another answer than the
compiled module's alias map on the JAX this course pins: ``halves`` (XLA puts a
donated ``float32[n]`` into the ``float16[2n]`` output of the same bytes, not the
``float16[n]`` output JAX offered it to by element count), ``bytes_order`` (two
outputs of equal bytes, each taking the leaf of its exact shape, which is not
the leaf in its position) and ``bytes_only`` (a ``float16[2n]`` output with the
bytes of the donated ``float32[n]`` but not its element count: not aliased).

Every step function here reads every leaf of its state: jit drops inputs that
are never read, and that would renumber the compiled module's parameters.
"""
import operator
from dataclasses import dataclass

import numpy as np

from autograder.exercises.common import deleted, error_text, learner_line, quiet, stopped_by

FUNCTION = "donation_report"
# name -> what the case exercises (shown in feedback)
CASES = {
    "nested": "a nested dict of float32 and int32 leaves, every leaf updated in kind",
    "dataclass": "a registered dataclass whose int32[] counter comes back as float32[]",
    "width": "a tuple whose second leaf comes back as float16 (its width changes)",
    "shape": "a dict whose leaf `h` comes back one element longer (its shape changes)",
    "unchanged": "a dict whose leaf `frozen` is returned unchanged",
    "not_returned": "a tuple whose middle leaf is read but not returned",
    "scalars": "a tree of scalar leaves (float32[], int32[], float16[])",
    "reordered": "a tuple of two float32 vectors returned in the other order",
    "reshape": "a dict whose matrix comes back transposed and whose float32[] comes back as int32[]",
    "halves": "a float32 vector returned as float16 at its length and at twice its length",
    "bytes_order": "a tuple (matrix, vector of as many float32 elements) returned as (vector, matrix)",
    "bytes_only": "a float32 vector returned only as float16 at twice its length (same bytes)",
    "single": "a one-leaf dict whose step returns a bare array (output index {}, path '')",
    "empty": "an empty tree (no leaves)",
}
DONATION_WARNING = "Some donated buffers were not usable"
MAX_LEAVES = 64  # a longer answer is cut (no case has this many leaves)


@dataclass
class Carry:
    """A small training carry, registered below as a pytree dataclass."""

    w: object
    b: object
    step: object


def _register():
    import jax

    try:
        jax.tree_util.register_dataclass(Carry, data_fields=["w", "b", "step"], meta_fields=[])
    except ValueError:
        pass  # already registered in this process


def _dims(seed, name):
    """Distinct small sizes for one case (no two equal, so no accidental matches)."""
    rng = np.random.default_rng([seed, sum(map(ord, name))])
    return [int(d) for d in rng.choice(np.arange(2, 12), size=4, replace=False)]


def _array(rng, shape, dtype):
    import jax.numpy as jnp

    return jnp.asarray(rng.standard_normal(shape) * 3).astype(dtype)


RUNS = [0]  # executions of the current case's step, counted by a host callback in it


def _ran():
    RUNS[0] += 1


def _counted(step):
    """``step`` with a host callback that counts its executions (not traces or compiles:
    lowering, compiling and ``jax.eval_shape`` never run it). The callback has no
    operands or results, so the compiled module's parameters, outputs and alias map
    are those of ``step``."""
    import jax

    def run_counted(state, *args):
        jax.debug.callback(_ran)
        return step(state, *args)

    return run_counted


def make_case(name, seed):
    """Return ``(fn, state, args)`` for case ``name``, built from ``seed``; ``fn``
    counts its own executions in :data:`RUNS`."""
    fn, state, args = _case(name, seed)
    return _counted(fn), state, args


def _case(name, seed):
    import jax.numpy as jnp

    _register()
    a, b, c, d = _dims(seed, name)
    rng = np.random.default_rng([seed, 7, sum(map(ord, name))])
    if name == "nested":
        state = {"params": {"w": _array(rng, (a, b), jnp.float32),
                            "b": _array(rng, (b,), jnp.float32)},
                 "step": jnp.asarray(0, jnp.int32)}
        g = _array(rng, (a, b), jnp.float32)
        return _nested_step, state, (g,)
    if name == "dataclass":
        state = Carry(w=_array(rng, (a, b), jnp.float32), b=_array(rng, (c,), jnp.float16),
                      step=jnp.asarray(3, jnp.int32))
        return _carry_step, state, (_array(rng, (a, b), jnp.float32),)
    if name == "width":
        return _width_step, (_array(rng, (a,), jnp.float32), _array(rng, (b, c), jnp.float32)), ()
    if name == "shape":
        state = {"h": _array(rng, (a,), jnp.float32), "z": _array(rng, (c, d), jnp.float32)}
        return _shape_step, state, ()
    if name == "unchanged":
        state = {"frozen": _array(rng, (a, b), jnp.float32), "live": _array(rng, (c,), jnp.int32)}
        return _unchanged_step, state, ()
    if name == "not_returned":
        state = (_array(rng, (a,), jnp.float32), _array(rng, (b, c), jnp.float32),
                 _array(rng, (d,), jnp.float32))
        return _not_returned_step, state, (_array(rng, (), jnp.float32),)
    if name == "scalars":
        state = (jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.int32),
                 {"scale": jnp.asarray(c, jnp.float16)})
        return _scalar_step, state, ()
    if name == "reordered":
        return _reordered_step, (_array(rng, (a,), jnp.float32), _array(rng, (b,), jnp.float32)), ()
    if name == "reshape":
        state = {"m": _array(rng, (a, b), jnp.float32), "n": _array(rng, (), jnp.float32)}
        return _reshape_step, state, ()
    if name == "halves":
        return _halves_step, (_array(rng, (a,), jnp.float32),), ()
    if name == "bytes_order":
        return _bytes_order_step, (_array(rng, (a, b), jnp.float32),
                                   _array(rng, (a * b,), jnp.float32)), ()
    if name == "bytes_only":
        return _bytes_only_step, {"v": _array(rng, (a,), jnp.float32)}, ()
    if name == "single":
        return _single_step, {"x": _array(rng, (a, b), jnp.float32)}, ()
    if name == "empty":
        return _empty_step, {"opt": (), "params": {}}, (_array(rng, (a,), jnp.float32),)
    raise KeyError(name)


def _nested_step(state, g):
    p = state["params"]
    return {"params": {"w": p["w"] - 0.1 * g, "b": p["b"] + 1.0}, "step": state["step"] + 1}


def _carry_step(state, g):
    return Carry(w=state.w - 0.1 * g, b=state.b * 2, step=state.step + 1.0)


def _width_step(state):
    x, y = state
    return x * 2.0, (y + 1.0).astype(np.float16)


def _shape_step(state):
    import jax.numpy as jnp

    return {"h": jnp.concatenate([state["h"], state["h"][:1]]), "z": state["z"] - 1.0}


def _unchanged_step(state):
    return {"frozen": state["frozen"], "live": state["live"] + state["frozen"].sum().astype(np.int32)}


def _not_returned_step(state, s):
    x, y, z = state
    return x + s, z + y.sum()


def _scalar_step(state):
    x, n, extra = state
    return x * 2.0, n + 1, {"scale": extra["scale"] * 2}


def _reordered_step(state):
    p, q = state
    return q * 2.0, p + 1.0


def _reshape_step(state):
    return {"m": state["m"].T * 2.0, "n": (state["n"] + 1.0).astype(np.int32)}


def _halves_step(state):
    import jax.numpy as jnp

    (v,) = state
    return (v * 2.0).astype(np.float16), jnp.concatenate([v, v + 1.0]).astype(np.float16)


def _bytes_order_step(state):
    m, v = state
    return v * 2.0, m + 1.0


def _bytes_only_step(state):
    import jax.numpy as jnp

    return {"v": jnp.concatenate([state["v"], state["v"] * 2.0]).astype(np.float16)}


def _single_step(state):
    return state["x"] * 2.0


def _empty_step(state, x):
    return x * 2.0


def _int(value):
    try:
        return operator.index(value)
    except Exception:
        return None


def _number(value):
    """An int as itself; anything else described (``"0.0 (float)"``), None as None."""
    number = _int(value)
    if number is not None or value is None:
        return number
    try:
        return f"{value!r}"[:40] + f" ({type(value).__name__})"
    except Exception:
        return f"a {type(value).__name__}"


def _shape(value):
    if not isinstance(value, (tuple, list)) or len(value) > 16:
        return None
    dims = [_int(v) for v in value]
    return None if None in dims else dims


def _dtype(value):
    if isinstance(value, str):
        return value[:40]
    try:
        return np.dtype(value).name
    except Exception:
        return None


def _leaf(entry):
    if not isinstance(entry, dict):
        return {"type": type(entry).__name__}
    aliased, output = entry.get("aliased"), entry.get("output")
    return {"keys": sorted(str(k)[:40] for k in list(entry)[:20]),
            "path": entry["path"][:200] if isinstance(entry.get("path"), str) else None,
            "shape": _shape(entry.get("shape")),
            "dtype": _dtype(entry.get("dtype")),
            "nbytes": _int(entry.get("nbytes")),
            "aliased": bool(aliased) if isinstance(aliased, (bool, np.bool_)) else None,
            # A path string, None, or a description of what came instead.
            "output": None if output is None else output[:200] if isinstance(output, str)
            else {"type": type(output).__name__}}


def encode_answer(answer):
    """A JSON-safe summary of what ``donation_report`` returned (never raises)."""
    if not isinstance(answer, dict):
        return {"type": type(answer).__name__}
    leaves = answer.get("leaves")
    return {"type": "dict",
            "keys": sorted(str(k)[:40] for k in list(answer)[:20]),
            "leaves": [_leaf(e) for e in leaves[:MAX_LEAVES]]
            if isinstance(leaves, (list, tuple)) else None,
            "leaves_type": type(leaves).__name__,
            "aliased_bytes": _number(answer.get("aliased_bytes")),
            "total_bytes": _number(answer.get("total_bytes"))}


def _call(fn, name, seed):
    import jax

    step, state, args = make_case(name, seed)
    record = {"error": None, "where": None, "answer": None}
    RUNS[0] = 0
    try:
        with quiet() as warned:  # a case may make JAX warn that a donated buffer was not usable
            record["answer"] = encode_answer(fn(step, state, *args))
    except BaseException as exc:  # learner code may raise anything, even SystemExit
        record["error"], record["where"] = error_text(exc), learner_line(exc)
    try:
        jax.effects_barrier()  # every callback of a run the report started has counted
    except Exception:
        pass
    record["runs"] = RUNS[0]
    record["warnings"] = [m for m in warned if m.startswith(DONATION_WARNING)][:5]
    record["state_deleted"] = any(deleted(state))
    return record


def observe(ns, seed):
    """Run every case against ``ns[FUNCTION]``; see the module docstring."""
    fn = ns.get(FUNCTION)
    if not callable(fn):
        return {"missing": FUNCTION}
    cases = {name: _call(fn, name, seed) for name in CASES}
    return {"cases": cases, "stopped": stopped_by(list(cases.values()))}
