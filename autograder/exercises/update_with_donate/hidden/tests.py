"""Hidden tests for ``update_with_donate(state, delta)`` (10 points).

Each test reads the probe observations (``obs``, see
:mod:`autograder.exercises.update_with_donate.probe`) and recomputes what the answer
should have been from the same seed. Facts checked come from the task
statement: the sum ``state + delta``, float32 in and out, one jitted helper
built once with ``donate_argnums=(0,)``.

Weights (stated on the exercise page): 4 of the 10 points need ``state``
really donated (``test_state_donated`` 2, ``test_delta_kept`` 1,
``test_no_read_after_donation`` 1); the last two say "could not be checked"
and score 0 when nothing was donated, since a call that donates nothing
cannot show that ``delta`` was spared or that ``state`` was left unread.
"""
import numpy as np

from autograder.feedback import fail, graded
from autograder.exercises.common import decode_array
from autograder.exercises.update_with_donate.probe import (
    COMPILE_LENGTHS, REBIND_LENGTH, REBIND_STEPS, VALUE_LENGTHS, make_inputs)

CALL = "update_with_donate(state, delta)"
DELETED_HINT = ("a donated array is deleted once the call returns; read the "
                "helper's result instead of `state` after the call")


def _deleted_hint(record):
    """Which donated array was read, when the error says one was and the flags show which."""
    if "deleted" not in (record["error"] or "").lower():
        return None
    if record.get("delta_was_deleted") or (record.get("delta_deleted") and not record.get("state_deleted")):
        return ("delta was donated (it was deleted after a call), so the next use of delta "
                "failed: donate only argument 0, state; the caller keeps delta")
    return DELETED_HINT


def _raised(record, what):
    if record["error"] is not None:
        fail(what, "a result", f"it raised {record['error']}", _deleted_hint(record))


def _result(record):
    result = decode_array(record.get("result"))
    if result is None:
        shape = record.get("shape")
        got = (f"a {record.get('type')} of shape {tuple(shape)}" if shape is not None
               else f"a {record.get('type')} that could not be read as an array")
        fail("the value returned by " + CALL, "an array of the inputs' shape", got,
             "state + delta has the shape of state; check for broadcasting"
             if shape is not None else "return the helper's result, an array")
    return result


VALUE_TOL = {"rtol": 1e-6, "atol": 1e-6}  # float32 rounding of one addition
REBIND_TOL = {"rtol": 1e-5, "atol": 1e-5}  # 50 additions round 50 times


def _difference(got, want, tol):
    """None when ``got`` is close to ``want`` under ``tol``, else what is off and by how much.

    Every number it states comes from the one ``np.isclose`` that decides.
    """
    close = np.isclose(got, want, **tol)
    if close.all():
        return None
    with np.errstate(all="ignore"):
        off = np.abs(got.astype(np.float64) - want)
        worst = int(np.nanargmax(np.where(close, -1.0, np.nan_to_num(off, nan=np.inf))))
        relative = off[worst] / abs(want[worst]) if want[worst] else np.inf
    return (f"{int((~close).sum())} of {close.size} elements differ by more than "
            f"{tol['atol']:g} + {tol['rtol']:g} x |expected|; the largest difference is "
            f"{off[worst]:.3g} (relative {relative:.1g}) at index {worst}: "
            f"got {float(got[worst]):.8g}, expected {float(want[worst]):.8g}")


def _values_hint(got, state, delta):
    """Name a mistake only when the returned values show it; else list the usual ones."""
    shown = {"state - delta": state - delta, "delta - state": delta - state,
             "state (unchanged)": state, "delta": delta}
    for name, value in shown.items():
        if np.allclose(got, value, **VALUE_TOL):
            return f"the values returned are {name}: return state + delta"
    want = state + delta
    nonzero = np.abs(want) > 1e-3
    if nonzero.any():
        ratio = got[nonzero] / want[nonzero]
        scale = float(np.median(ratio))
        if scale != 1 and np.allclose(ratio, scale, rtol=1e-6, atol=0):
            return (f"every returned value is state + delta times {scale:.7g}: "
                    "remove the extra factor from the helper")
    return ("no usual mistake matches these values (the difference, one input unchanged, "
            "a constant factor); compare your result with state + delta on a small example")


@graded(2, "values: the result equals state + delta")
def test_values(obs, seed):
    """The result equals `state + delta` for lengths 1, 32, 64 and 3000."""
    for n in VALUE_LENGTHS:
        record = obs["values"][str(n)]
        what = f"{CALL} on random float32 arrays of length {n}"
        _raised(record, what)
        state, delta = make_inputs(seed, n)
        expected = state + delta
        got = _result(record)
        if got.shape != expected.shape:
            fail(what, f"state + delta, of shape {expected.shape}", f"an array of shape {got.shape}",
                 "state + delta has the shape of state; check for broadcasting")
        off = _difference(got, expected, VALUE_TOL)
        if off:
            fail(what, "state + delta, element by element", off, _values_hint(got, state, delta))


@graded(1, "result type: a float32 JAX array of the input's shape")
def test_result_type(obs):
    """The result for length 32 is a `float32` `jax.Array` of shape `(32,)`."""
    record = obs["values"]["32"]
    _raised(record, f"{CALL} on length-32 arrays")
    got = (record["is_jax_array"], record["shape"], record["dtype"])
    if got != (True, [32], "float32"):
        hints = [hint for wrong, hint in (
            (not record["is_jax_array"], "it is not a jax.Array: return the helper's output "
                                         "itself, not a NumPy or Python conversion of it"),
            (record["shape"] != [32], "its shape is not the inputs': check for broadcasting"),
            (record["dtype"] != "float32", "its dtype changed: keep float32 end to end"))
            if wrong]
        fail("the type, shape and dtype of the result for length-32 inputs",
             "a jax.Array of shape (32,) and dtype float32",
             f"{record['type']} of shape {tuple(record['shape'] or ())} and dtype {record['dtype']}",
             "; ".join(hints))


@graded(1, "empty input returns an empty float32 array")
def test_empty(obs):
    """Two empty `float32` arrays give an empty `float32` array."""
    record = obs["empty"]
    _raised(record, f"{CALL} on two empty float32 arrays")
    if (record["shape"], record["dtype"]) != ([0], "float32"):
        fail(f"{CALL} on two empty float32 arrays", "an empty float32 array of shape (0,)",
             f"shape {tuple(record['shape'] or ())} and dtype {record['dtype']}")


@graded(1, "repeated updates with rebinding accumulate")
def test_rebinding(obs, seed):
    """`state = update_with_donate(state, delta)` fifty times accumulates fifty `delta`s."""
    record = obs["rebind"]
    what = f"`state = {CALL}` repeated {REBIND_STEPS} times"
    _raised(record, what)
    start, delta = make_inputs(seed, REBIND_LENGTH)
    state = start
    for _ in range(REBIND_STEPS):
        state = state + delta
    got = _result(record)
    if got.shape != state.shape:
        fail(what, f"the starting state plus {REBIND_STEPS} times delta, of shape {state.shape}",
             f"an array of shape {got.shape}")
    off = _difference(got, state, REBIND_TOL)
    if off:
        fail(what, f"the starting state plus {REBIND_STEPS} times delta", off,
             _rebind_hint(got, start, delta))


def _rebind_hint(got, start, delta):
    for steps in (0, 1):
        if np.allclose(got, start + steps * delta, **REBIND_TOL):
            return (f"the final state is the starting state plus {steps} times delta: each "
                    "call must start from the state it is given (the previous result)")
    return ("known causes: a call that does not start from the state it is given, or an "
            "error in single calls (see the values check) that grows with every call")


@graded(1, "compiled once: repeated calls reuse the compiled helper")
def test_compiled_once(obs):
    """The first call compiles once and a call with a length already seen neither traces nor
    compiles (JAX's own trace and compile events are counted); an answer that never compiles
    fails it."""
    rows = obs["compiles"]
    for row in rows:
        _raised(row, f"{CALL} on length-{row['n']} arrays")
    seen, extra = set(), []
    for i, row in enumerate(rows):
        if row["n"] in seen and (row["traces"] or row["compiles"]):
            extra.append(f"call {i + 1} (length {row['n']}) traced {row['traces']} "
                         f"and compiled {row['compiles']} time(s)")
        seen.add(row["n"])
    if extra:
        fail(f"calls with lengths {', '.join(map(str, COMPILE_LENGTHS))} in that order",
             "a compile only the first time each length is seen (twice in all)",
             "; ".join(extra),
             "known causes: a jax.jit of a lambda, closure or functools.partial made inside "
             "update_with_donate (it wraps a new function on every call, so JAX traces and "
             "compiles it again; build the helper once at module scope); a cache cleared "
             "between calls (jax.clear_caches())")
    if not rows[0]["compiles"]:
        fail("the first call with a fresh compilation cache", "one compilation",
             "no compilation at all", "call a function made with jax.jit")


PAIR = "tensor<32xf32>"


def _helpers(obs):
    """Modules lowered for the length-32 calls that take two float32[32] arguments."""
    return [m for m in obs["lowered"] if m["args"] == [PAIR, PAIR]]


def _describe(helpers):
    if not helpers:
        return "no jitted function taking (state, delta) was compiled"
    # One line per distinct helper: the same one is lowered once per input length.
    lines = dict.fromkeys(f"{m['module']} donates {sum(m['donated'])} of its 2 arguments"
                          for m in helpers)
    return "; ".join(lines)


# Which module argument is `state` is not read from its position: keyword
# calls reach the module in sorted-name order. The compiled helper must
# donate exactly one of its two arguments, and that one must be `state`,
# which the is_deleted() flags after the call tell apart from `delta`.


def _donated(obs, n):
    """Evidence that the length-``n`` call donated ``state``: one argument of a
    compiled helper donated, and ``state`` deleted after the call."""
    record = obs["values"][str(n)]
    return record["state_deleted"] and any(sum(m["donated"]) == 1 for m in _helpers(obs))


def _not_checked(what, why):
    fail(what, "a call that donates state, so that this can be checked",
         f"not checked: {why}",
         "donate state first; the check 'state is donated' says what was observed")


ENTRY_MODULE = "jit_update_with_donate"  # JAX names a module after the jitted function
DONATION_CAUSES = ("the helper is built without donate_argnums=(0,); update_with_donate (or "
                   "a function calling the helper) is itself under jax.jit, and only the "
                   "outermost jit's donation counts; something still holds state's buffer, "
                   "such as a NumPy view from np.asarray(state)")


def _donation_hint(helpers, lowered, record):
    """A cause only when the observations show it; else the known causes, listed."""
    if not helpers:
        return "build the helper with jax.jit(..., donate_argnums=(0,)) and call it"
    if record["delta_deleted"] and not record["state_deleted"]:
        return ("delta was donated instead (it reads is_deleted() == True): state is "
                "argument 0, so donate_argnums=(0,)")
    if any(sum(m["donated"]) == 1 for m in helpers) and not record["state_deleted"]:
        return ("the compiled helper marks state as donated, yet state was still alive: "
                "JAX could not take its buffer because something else still held it, "
                "such as a NumPy view from np.asarray(state); drop such views first")
    if any(m["module"] == ENTRY_MODULE and not any(m["donated"]) for m in lowered):
        return ("update_with_donate itself is compiled by jax.jit without donation, and "
                "inside a jit the helper's donate_argnums is ignored: only the outermost "
                "jit donates. Remove the outer jax.jit (or give it donate_argnums=(0,))")
    return "known causes: " + DONATION_CAUSES


@graded(2, "state is donated")
def test_state_donated(obs):
    """The compiled helper donates one of its two arguments, and `state` reads `is_deleted()
    == True` after the call."""
    record = obs["values"]["64"]
    _raised(record, f"{CALL} on length-64 arrays")
    helpers = _helpers(obs)
    if not _donated(obs, 64):
        fail("whether `state` is donated: the compiled helper marks one argument as "
             "donated, and state reads is_deleted() == True after the call",
             "state donated to a jitted helper",
             _describe(helpers) + ("" if record["state_deleted"] else "; state still alive"),
             _donation_hint(helpers, obs["lowered"], record))


@graded(1, "delta is kept, not donated")
def test_delta_kept(obs):
    """`delta` is not donated while `state` is; scores 0, "not checked", when nothing is
    donated."""
    record = obs["values"]["64"]
    _raised(record, f"{CALL} on length-64 arrays")
    # A second donated float32[n] argument has no output left to alias, so JAX
    # drops it from the module and warns ("donated buffers were not usable").
    # When the module aliases one argument and warns, the other was donated too.
    helpers = _helpers(obs)
    unusable = [w for row in obs["compiles"] for w in row["warnings"]
                if "donated buffers were not usable" in w]
    unusable = unusable if any(sum(m["donated"]) == 1 for m in helpers) else []
    both = [m for m in helpers if all(m["donated"])]
    if record["delta_deleted"] or both or unusable:
        fail("whether `delta` is offered for donation", "delta kept, not donated",
             "delta was donated" + (f" (JAX warned: {unusable[0]})" if unusable else
                                    " (it reads is_deleted() == True after the call)"),
             "donate only argument 0 (state); the caller still owns delta")
    if not _donated(obs, 64):
        _not_checked("whether `delta` is kept while `state` is donated",
                     "nothing was donated, so a live delta says nothing about which "
                     "argument the helper donates")


@graded(1, "the donated state is not read after the call")
def test_no_read_after_donation(obs):
    """Each call (lengths 1, 32, 64, 3000) donates `state` and returns without error; scores
    0, "not checked", when `state` is not donated."""
    for n in VALUE_LENGTHS:
        error = obs["values"][str(n)]["error"]
        if error:  # any error: a call that never returns cannot show a clean lifetime
            fail(f"{CALL} on length-{n} arrays", "no use of `state` once it was donated",
                 f"it raised {error}", _deleted_hint(obs["values"][str(n)]))
    undonated = [n for n in VALUE_LENGTHS if n and not _donated(obs, n)]
    if undonated:
        _not_checked(f"{CALL} on length-{undonated[0]} arrays: no use of `state` once it was donated",
                     "state was not donated, so reading it after the call would not fail "
                     "and cannot be told apart from not reading it")
