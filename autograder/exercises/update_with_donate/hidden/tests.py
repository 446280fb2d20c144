"""Hidden tests for ``update_with_donate(state, delta)`` (10 points).

Each test reads the probe observations (``obs``, see
:mod:`autograder.exercises.update_with_donate.probe`) and recomputes what the answer
should have been from the same seed. Facts checked come from the task
statement: the sum ``state + delta``, float32 in and out, one jitted helper
built once with ``donate_argnums=(0,)``; the requirement rows each test grades are
in :mod:`autograder.exercises.update_with_donate.requirements`.

Weights (stated on the exercise page): 4 of the 10 points need ``state``
really donated (``test_state_donated`` 2, ``test_delta_kept`` 1,
``test_no_read_after_donation`` 1); the last two say "not checked" and score 0
when ``state`` was not donated, since a call that donates nothing cannot show
that ``delta`` was spared or that ``state`` was left unread. A hint names a cause
only when an observation shows it; otherwise it says what was observed and
which lesson section lists the possibilities.
"""
import numpy as np

from autograder.feedback import fail, graded, not_checked, where_text
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
                "failed: donate only state; the caller keeps delta")
    if record.get("state_deleted"):
        return DELETED_HINT
    return ("an array was read after it was deleted; lesson 1, \"The old value is gone, under "
            "every name\", says which names go with a donated buffer")


def _raised(record, what):
    if record["error"] is not None:
        fail(what, "a result", f"it raised {record['error']}", _deleted_hint(record))


def _result(record):
    result = decode_array(record.get("result"))
    if result is None:
        shape = record.get("shape")
        got = (f"{record.get('type')} of shape {tuple(shape)}" if shape is not None
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
    """Name a mistake only when the returned values show it: ``got`` fits ``a * state + b * delta``
    exactly (on at least three elements, so a fit means something); else say so."""
    if got.size >= 3 and got.shape == state.shape:
        basis = np.stack([state, delta], axis=1).astype(np.float64)
        (a, b), *_ = np.linalg.lstsq(basis, got.astype(np.float64), rcond=None)
        if np.allclose(basis @ [a, b], got, **VALUE_TOL):
            if abs(a - b) <= 1e-6 * abs(a):
                return (f"every returned value is state + delta times {a:.7g}: remove the "
                        "extra factor from the helper")
            return f"the values returned are {_combination(a, b)}: return state + delta"
    return ("the values fit no sum of state and delta times constants; compare your result with "
            "state + delta on a small example")


def _combination(a, b):
    """``a * state + b * delta`` in words: ``state - delta``, ``state + 2 * delta``, ``0``."""
    text = ""
    for c, name in ((a, "state"), (b, "delta")):
        if abs(c) < 1e-6:
            continue
        size = "" if abs(abs(c) - 1) < 1e-6 else f"{abs(c):.7g} * "
        text += (" - " if c < 0 else " + ") if text else ("-" if c < 0 else "")
        text += size + name
    return text or "0"


@graded(2, "values: the result equals state + delta")
def test_values(obs, seed):
    """The result equals `state + delta` for lengths 1, 32, 64 and 3000."""
    for n in sorted(VALUE_LENGTHS, reverse=True):  # the longest first: its values say the most
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
    """Two empty `float32` arrays give an empty `float32` `jax.Array` (a NumPy array fails)."""
    record = obs["empty"]
    what = f"{CALL} on two empty float32 arrays"
    if record["error"] is not None:
        fail(what, "an empty float32 jax.Array of shape (0,)", f"it raised {record['error']}",
             _deleted_hint(record), row="empty")
    got = (record["is_jax_array"], record["shape"], record["dtype"])
    if got != (True, [0], "float32"):
        fail(what, "an empty float32 jax.Array of shape (0,)",
             f"{record['type']}" + (f" of shape {tuple(record['shape'])}" if record["shape"] is not None
                                    else "") + (f" and dtype {record['dtype']}" if record["dtype"] else ""),
             None if record["is_jax_array"] else
             f"{record['type']} is not a jax.Array: return the helper's result"
             + (" (the task says a NumPy result fails, for empty inputs too)"
                if record["type"] == "ndarray" else ""),
             row="jax-array" if not obs["values"]["32"].get("is_jax_array") else "empty")


def _stray_read(obs, record):
    """Whether the loop stopped on its first call with the error the single donating calls
    raised at the same line of the learner's code, after state was donated."""
    if record["error"] is None or record.get("call") != 1 or record.get("delta_was_deleted"):
        return False
    single = obs["donation"][str(VALUE_LENGTHS[0])]
    return (single["error"] is not None and single["state_deleted"]
            and single["error"].split(":")[0] == record["error"].split(":")[0]
            and single.get("where") == record.get("where"))


@graded(1, "repeated updates with rebinding accumulate")
def test_rebinding(obs, seed):
    """`state = update_with_donate(state, delta)` fifty times accumulates fifty `delta`s."""
    record = obs["rebind"]
    what = f"`state = {CALL}` repeated {REBIND_STEPS} times"
    if _stray_read(obs, record):
        not_checked(what, f"the starting state plus {REBIND_STEPS} times delta",
                    "test_no_read_after_donation",
                    "the same error at the same line stopped the loop's first call")
    if record["error"] is not None:
        where = where_text(record.get("where"))
        fail(what, "a result", f"call {record.get('call')} raised {record['error']}"
             + (f", at {where}" if where else ""), _deleted_hint(record),
             row=None if record.get("delta_was_deleted") else "rebind")
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
             "a single call already returns other values than state + delta (the values check "
             "says which), and the loop repeats it" if _values_wrong(obs, seed)
             else _rebind_hint(got, start, delta), row="sum" if _values_wrong(obs, seed) else "rebind")


def _values_wrong(obs, seed):
    """Whether the single length-32 call already returned something other than state + delta."""
    got = decode_array(obs["values"]["32"].get("result"))
    state, delta = make_inputs(seed, 32)
    return got is None or got.shape != state.shape or _difference(got, state + delta, VALUE_TOL) is not None


def _rebind_hint(got, start, delta):
    for steps in (0, 1):
        if np.allclose(got, start + steps * delta, **REBIND_TOL):
            return (f"the final state is the starting state plus {steps} times delta: each "
                    "call must start from the state it is given (the previous result)")
    return ("single calls return state + delta, yet the loop's final state differs: something "
            "carries over from one call to the next")


def _recompile_hint(rows):
    """The cause the compile rows show: JAX's caches emptied during a call, or (caches kept)
    a helper JAX did not find in them, a new function jitted on every call."""
    tail = " Lesson 1, \"Compilation is reused, donation or not\", shows what JAX caches"
    cleared = [str(i + 1) for i, row in enumerate(rows) if row.get("caches_cleared")]
    if cleared:
        return (f"JAX's caches were emptied during call(s) {', '.join(cleared)} (jax.clear_caches()), "
                "so every later call traces and compiles the helper again: do not clear them." + tail)
    known = ("" if all(row.get("caches_cleared") is False for row in rows)
             else "; or a cache cleared between calls (jax.clear_caches())")
    return ("JAX did not find the helper in its cache: a jax.jit of a lambda, closure or "
            "functools.partial made inside update_with_donate wraps a new function on every "
            "call, so JAX traces and compiles it again; build the helper once at module scope"
            + known + "." + tail)


@graded(1, "compiled once: repeated calls reuse the compiled helper")
def test_compiled_once(obs):
    """The first call compiles, and a call with a length already seen lowers no module that was
    lowered for that length before (JAX's own trace and compile events are counted); an answer
    that never compiles fails it."""
    rows = obs["compiles"]
    for row in rows:
        _raised(row, f"{CALL} on length-{row['n']} arrays")
    # A module lowered again for a length already seen is a recompiled helper; a module
    # lowered for the first time (an eager jnp operation the answer runs once) is not.
    seen, extra = {}, []
    for i, row in enumerate(rows):
        again = sorted(set(row["modules"]) & seen.get(row["n"], set()))
        if again:
            extra.append(f"call {i + 1} (length {row['n']}) traced {row['traces']} and compiled "
                         f"{row['compiles']} time(s), lowering {', '.join(again)} again")
        seen.setdefault(row["n"], set()).update(row["modules"])
    if extra:
        fail(f"calls with lengths {', '.join(map(str, COMPILE_LENGTHS))} in that order",
             "a compile only the first time each length is seen (twice in all)",
             "; ".join(extra),
             _recompile_hint(rows))
    if not rows[0]["compiles"]:
        fail("the first call with a fresh compilation cache", "one compilation",
             "no compilation at all", "call a function made with jax.jit")


STATE_TYPE = "tensor<32xf32>"  # state's (and delta's) type in the length-32 calls


def _helpers(obs):
    """Modules lowered for the length-32 calls that take a float32[32] argument, whatever
    else they take (a constant, a scale, the arguments in another order): a helper is
    known by the arrays it receives, not by its parameter list."""
    return [m for m in obs["lowered"] if STATE_TYPE in m["args"]]


def _offered(module):
    """How many float32[32] arguments (state's type) ``module`` marks as donated."""
    return sum(d for t, d in zip(module["args"], module["donated"]) if t == STATE_TYPE)


def _describe(helpers):
    if not helpers:
        return "no jitted function taking a float32 array of state's shape was compiled"
    # One line per distinct helper: the same one is lowered once per input length.
    lines = dict.fromkeys(f"{m['module']} donates {sum(m['donated'])} of its "
                          f"{len(m['args'])} arguments" for m in helpers)
    return "; ".join(lines)


# Which module argument is `state` is not read from its position or its name: keyword
# calls reach the module in sorted-name order, and a helper may take more arguments. A
# compiled helper must donate exactly one array of state's type, and the is_deleted()
# flags after the call say whether that was the caller's `state` (not `delta`, not a copy).


def _donated(obs, n):
    """Evidence that the length-``n`` call donated ``state``: a compiled helper donated one
    array of state's type, and the caller's ``state`` was deleted by the call (``delta``'s
    fate decides the delta check)."""
    record = obs["donation"][str(n)]
    return record["state_deleted"] and any(_offered(m) == 1 for m in _helpers(obs))


ENTRY_MODULE = "jit_update_with_donate"  # JAX names a module after the jitted function
LESSONS = ("lesson 4, \"When donation silently does nothing\", lists what keeps a donation from "
           "taking effect (a jit inside another jit, a NumPy view of the input, a copy donated "
           "instead of the input); lesson 1, \"Offering an input with donate_argnums=(0,)\", "
           "shows the helper")


def _donation_hint(helpers, lowered, record, warned):
    """A cause only when the observations show it; else what was observed and where
    the lessons list the possibilities."""
    if warned and not any(any(m["donated"]) for m in helpers):
        return (f"JAX warned inside your call: {warned[0]} The helper offers an argument no "
                "output of the same shape and dtype can take, so JAX dropped the donation; "
                "lesson 1, \"Several outputs\", shows which outputs can take a donated buffer")
    if not helpers:
        return ("no compiled function took an array of state's shape: build the helper with "
                "jax.jit(..., donate_argnums=(0,)) and call it; " + LESSONS)
    if record["delta_deleted"] and not record["state_deleted"]:
        # which helper parameter receives state is the learner's choice: name the arrays
        return ("delta was donated instead (it reads is_deleted() == True after the call, state "
                "does not): donate the helper's parameter that receives state, not delta's")
    if any(_offered(m) == 1 for m in helpers) and record.get("state_held") is False:
        return ("the compiled helper donates one argument, yet the array passed as state was "
                "still alive after the call, and nothing held it: the grader donated it "
                "afterwards. So the helper received another buffer than state's, such as a "
                "copy; hand the helper state itself")
    if any(_offered(m) == 1 for m in helpers) and record.get("state_held"):
        return ("the compiled helper donates one argument, yet state was still alive after the "
                "call, and something outside the call still holds its buffer (the grader could "
                "not donate it afterwards either): a NumPy view of state kept alive "
                "(np.asarray(state)) stops JAX from donating it; lesson 4, \"A NumPy view of "
                "the input\"")
    if any(_offered(m) == 1 for m in helpers) and not record["state_deleted"]:
        return ("the compiled helper donates one argument, yet the array passed as state was "
                "still alive after the call, so the buffer the helper received was not state's, "
                "or JAX could not take it; " + LESSONS)
    if any(m["module"] == ENTRY_MODULE and not any(m["donated"]) for m in lowered):
        return ("update_with_donate itself is compiled by jax.jit without donation, and "
                "inside a jit the helper's donate_argnums is ignored: only the outermost "
                "jit donates. Remove the outer jax.jit (or give it donate_argnums=(0,))")
    if not any(any(m["donated"]) for m in helpers):
        return ("no function compiled for (state, delta) marks an argument as donated: the "
                "helper needs jax.jit(..., donate_argnums=(0,))")
    return LESSONS


@graded(2, "state is donated")
def test_state_donated(obs):
    """The compiled helper donates one of its two arguments, and `state` reads `is_deleted()
    == True` after the call."""
    record = obs["donation"]["64"]
    helpers = _helpers(obs)
    if _donated(obs, 64):
        return  # an error after the donation is the no-read check's evidence
    _raised(record, f"{CALL} on length-64 arrays")
    fail("whether `state` is donated: the compiled helper marks one argument as "
         "donated, and state reads is_deleted() == True after the call",
         "state donated to a jitted helper",
         _describe(helpers) + ("" if record["state_deleted"] else "; state still alive after the call"),
         _donation_hint(helpers, obs["lowered"], record, _unusable(obs)))


UNUSABLE = "donated buffers were not usable"  # JAX's warning, raised inside the learner's call


def _unusable(obs):
    return [w for row in (*obs["compiles"], *obs["donation"].values(), *obs["values"].values())
            for w in row["warnings"] if UNUSABLE in w]


@graded(1, "delta is kept, not donated")
def test_delta_kept(obs):
    """`delta` is not donated while `state` is: not deleted, not marked donated, and no
    "donated buffers were not usable" warning from JAX; scores 0, "not checked", when
    `state` is not donated."""
    record = obs["donation"]["64"]
    what = "whether `delta` is offered for donation"
    # A second donated float32[n] argument has no output left to alias, so JAX
    # drops it from the module and warns ("donated buffers were not usable"):
    # declaring delta donated is the mistake, even where JAX could not take it.
    helpers = _helpers(obs)
    # the warning names a shape, not an argument: it is delta's only when the module kept
    # the other argument, state, donated
    warned = _unusable(obs) if any(_offered(m) == 1 for m in helpers) else []
    both = [m for m in helpers if _offered(m) >= 2]
    if record["delta_deleted"] or both or warned:
        fail(what, "delta kept, not donated",
             "delta was donated (it reads is_deleted() == True after the call; compiled: "
             f"{_describe(helpers)})" if record["delta_deleted"]
             else f"JAX warned inside your call: {warned[0]}" if warned
             else "the compiled helper marks both arguments as donated",
             "donate state only: no jitted function that receives delta may donate it; the "
             "caller still owns delta, and JAX warns when it is offered a buffer no output can "
             "take", row="keep-delta")
    if not _donated(obs, 64):
        not_checked("whether `delta` is kept while `state` is donated", "delta kept, not donated",
                    "test_state_donated", "a live delta says nothing about which argument "
                    "is donated until state is")


@graded(1, "the donated state is not read after the call")
def test_no_read_after_donation(obs):
    """Each call (lengths 1, 32, 64, 3000) donates `state` and returns without error; scores
    0, "not checked", when `state` is not donated."""
    undonated = [n for n in VALUE_LENGTHS if not _donated(obs, n)]
    if undonated:
        not_checked(f"{CALL} on length-{undonated[0]} arrays: no use of `state` once it was donated",
                    "no use of `state` once it was donated", "test_state_donated",
                    "reading an undonated state would not fail, so it cannot be told apart "
                    "from not reading it")
    for n in VALUE_LENGTHS:
        record = obs["donation"][str(n)]
        if record["error"]:  # raised after donating state: it used state after the call
            fail(f"{CALL} on length-{n} arrays", "no use of `state` once it was donated",
                 f"it raised {record['error']} after state was donated"
                 + (f", at {where_text(record['where'])}" if where_text(record["where"]) else ""),
                 _deleted_hint(record), row="no-read")
