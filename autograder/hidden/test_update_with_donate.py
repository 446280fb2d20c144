"""Hidden tests for ``update_with_donate(state, delta)`` (10 points).

Each test reads the probe observations (``obs``, see
:mod:`autograder.probes.update_with_donate`) and recomputes what the answer
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
from autograder.probes.common import decode_array
from autograder.probes.update_with_donate import (
    COMPILE_LENGTHS, REBIND_LENGTH, REBIND_STEPS, VALUE_LENGTHS, make_inputs)

CALL = "update_with_donate(state, delta)"
DELETED_HINT = ("a donated array is deleted once the call returns; read the "
                "helper's result instead of `state` after the call")


def _raised(record, what):
    if record["error"] is not None:
        hint = DELETED_HINT if "deleted" in record["error"].lower() else None
        fail(what, "a result", f"it raised {record['error']}", hint)


def _result(record):
    result = decode_array(record.get("result"))
    if result is None:
        shape = record.get("shape")
        got = (f"a {record.get('type')} of shape {tuple(shape)}" if shape is not None
               else f"a {record.get('type')} that could not be read as an array")
        fail("the value returned by " + CALL, "an array of the inputs' shape", got,
             "state + delta has the shape of state; check for broadcasting")
    return result


@graded(2, "values: the result equals state + delta")
def test_values(obs, seed):
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
        if not np.allclose(got, expected, rtol=1e-6, atol=1e-6):
            wrong = int(np.sum(~np.isclose(got, expected)))
            fail(what, "state + delta, element by element",
                 f"{wrong} of {n} elements different "
                 f"(first returned values {np.round(got.ravel()[:3], 4).tolist()})",
                 "return the sum, not the difference or one of the inputs")


@graded(1, "result type: a float32 JAX array of the input's shape")
def test_result_type(obs):
    record = obs["values"]["32"]
    _raised(record, f"{CALL} on length-32 arrays")
    got = (record["is_jax_array"], record["shape"], record["dtype"])
    if got != (True, [32], "float32"):
        fail("the type, shape and dtype of the result for length-32 inputs",
             "a jax.Array of shape (32,) and dtype float32",
             f"{record['type']} of shape {tuple(record['shape'] or ())} and dtype {record['dtype']}",
             "return the helper's output directly; do not convert it with NumPy or change its dtype")


@graded(1, "empty input returns an empty float32 array")
def test_empty(obs):
    record = obs["empty"]
    _raised(record, f"{CALL} on two empty float32 arrays")
    if (record["shape"], record["dtype"]) != ([0], "float32"):
        fail(f"{CALL} on two empty float32 arrays", "an empty float32 array of shape (0,)",
             f"shape {tuple(record['shape'] or ())} and dtype {record['dtype']}")


@graded(1, "repeated updates with rebinding accumulate")
def test_rebinding(obs, seed):
    record = obs["rebind"]
    what = f"`state = {CALL}` repeated {REBIND_STEPS} times"
    _raised(record, what)
    state, delta = make_inputs(seed, REBIND_LENGTH)
    for _ in range(REBIND_STEPS):
        state = state + delta
    got = _result(record)
    if got.shape != state.shape or not np.allclose(got, state, rtol=1e-5, atol=1e-5):
        fail(what, f"the starting state plus {REBIND_STEPS} times delta",
             "a different final state",
             "each call must use the state it is given, which is the previous result")


@graded(1, "compiled once: repeated calls reuse the compiled helper")
def test_compiled_once(obs):
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
             "build the jitted helper once at module scope, outside update_with_donate; "
             "a jax.jit of a lambda, closure or functools.partial made inside the function "
             "wraps a new function on every call, so JAX traces and compiles it again")
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
         "donate state first (pass donate_argnums=(0,) to jax.jit); see the check 'state is donated'")


@graded(2, "state is donated")
def test_state_donated(obs):
    record = obs["values"]["64"]
    _raised(record, f"{CALL} on length-64 arrays")
    helpers = _helpers(obs)
    if not _donated(obs, 64):
        fail("whether `state` is donated: the compiled helper marks one argument as "
             "donated, and state reads is_deleted() == True after the call",
             "state donated to a jitted helper",
             _describe(helpers) + ("" if record["state_deleted"] else "; state still alive"),
             "pass donate_argnums=(0,) to jax.jit when you build the helper")


@graded(1, "delta is kept, not donated")
def test_delta_kept(obs):
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
    for n in VALUE_LENGTHS:
        error = obs["values"][str(n)]["error"]
        if error:  # any error: a call that never returns cannot show a clean lifetime
            fail(f"{CALL} on length-{n} arrays", "no use of `state` once it was donated",
                 f"it raised {error}", DELETED_HINT if "deleted" in error.lower() else None)
    undonated = [n for n in VALUE_LENGTHS if n and not _donated(obs, n)]
    if undonated:
        _not_checked(f"{CALL} on length-{undonated[0]} arrays: no use of `state` once it was donated",
                     "state was not donated, so reading it after the call would not fail "
                     "and cannot be told apart from not reading it")
