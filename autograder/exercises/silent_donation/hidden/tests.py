"""Hidden tests for ``silent_donation`` (10 points).

Each repaired step gets two checks: it really donates (the evidence is the
inputs deleted after the call and, for the three jitted steps,
``alias_size_in_bytes`` of the compiled step equal to the donated bytes), and
it still computes the same values, recomputed here from the same seed (see
:mod:`autograder.exercises.silent_donation.probe`). A "donates" check never passes on
the ``donated`` flags of ``lowered.args_info`` alone: an unused argument reads
``donated=True`` there and is neither aliased nor deleted. Declaring donated an
argument the task says to keep fails even where JAX could not take its buffer: JAX's
"Some donated buffers were not usable" warning, raised while the step was lowered or
called, is the evidence. The requirement rows each check grades are in
:mod:`autograder.exercises.silent_donation.requirements`; a failure names the row its
observations show violated (``row=``), and a hint names a cause only when an
observation shows it, else the lesson section that lists the possibilities.
"""
import functools

import numpy as np

from autograder.feedback import fail, graded, not_checked, where_text
from autograder.exercises.common import decode_array, quiet
from autograder.exercises.silent_donation.probe import (
    LEARNING_RATE, RUN_STEPS, loss, make_inputs, run_step)

TRAIN = "train_step(state, batch) on a linear model's state {'b', 'w'} and one batch"
RESET = "reset(acc) on a float32 vector holding nan, inf and -inf"
RUN = f"run(step, state, {RUN_STEPS}) with a donating step s -> s * 0.5 + 1"
APPLY = "apply_delta(delta, state) on two float32 vectors"
JITTED_HINT = ("it has no .lower method, so it is not the function jax.jit returns: make the step "
               "jax.jit(...) itself, not a function that calls it")
LESSON = "Lesson 4, \"When donation silently does nothing\""
UNUSABLE = "donated buffers were not usable"


@functools.lru_cache(maxsize=1)
def _gradient():
    """``jax.grad(loss)`` compiled as one program: its shapes change with the seed, and one
    compilation per shape costs a grading far less than JAX compiling each operation of
    the loss and its gradient on its own (about a dozen). Kept for the grader's process."""
    import jax

    return jax.jit(jax.grad(loss))


@functools.lru_cache(maxsize=4)
def reference(seed):
    """The values every repaired step must still compute, as NumPy arrays."""
    inputs = make_inputs(seed)
    with quiet():
        grads = _gradient()(inputs["state"], inputs["batch"])
        new = {k: inputs["state"][k] - LEARNING_RATE * np.asarray(grads[k]) for k in ("b", "w")}
    history, s = [], inputs["run_state"]
    for _ in range(RUN_STEPS):
        history.append(s)
        s = np.asarray(run_step(s), np.float32)
    return {"train": new, "reset": np.zeros_like(inputs["acc"]), "history": history, "final": s,
            "apply": inputs["apply_state"] + inputs["delta"]}


def _record(obs, name, what, first=None):
    """``obs[name]`` when the step ran; fails when it is not defined or the call raised.
    ``first``: the step's check that says so; this one then says "not checked" only."""
    record = obs[name]
    if first is not None and record.get("missing"):
        not_checked(what, "it runs", first, "it needs the same step")
    if record.get("missing"):
        fail(what, f"`{name}` defined by the answer cell", f"`{name}` is not defined after the answer cell ran",
             "it is named otherwise, or an error stopped the cell before it (the summary lists "
             "the cell's errors)")
    if record["error"] is not None:
        where = where_text(record.get("error_where"))
        fail(what, "it runs", f"it raised {record['error']}" + (f", at {where}" if where else ""),
             "an input was read after it was donated (deleted)"
             if "deleted" in record["error"].lower() else None)
    return record


def _raised_before(obs, name, what, donated):
    """Fail on the step's error unless ``donated``: an error raised after the inputs were
    donated is the value check's to report (it has no values), not the donation's."""
    if obs[name].get("missing") or not donated:
        _record(obs, name, what)


def _lowered(obs, name, what, row):
    """``obs[name]`` when it could be lowered; fails (naming ``row``, the is-jit row) when the
    step is not jax.jit's function, and when lowering raised."""
    record = obs[name]
    if record.get("missing"):
        _record(obs, name, what)
    if record.get("lower_error"):
        where = where_text(record.get("lower_error_where"))
        fail(f"{what}, lowered and compiled", "it compiles",
             f"lowering it raised {record['lower_error']}" + (f", at {where}" if where else ""))
    if record["alias_bytes"] is None:
        fail(f"memory_analysis().alias_size_in_bytes of {what}, compiled", "a compiled step",
             "a function with no .lower method", JITTED_HINT, row=row)
    return record


def _warned(record):
    return [w for w in record.get("warnings", []) if UNUSABLE in w]


def _close(encoded, want):
    got = decode_array(encoded) if isinstance(encoded, str) else None
    return (got is not None and got.shape == np.shape(want)
            and bool(np.allclose(got, want, rtol=1e-5, atol=1e-5)))


def _aliased(record, want_bytes, what, hint, row):
    if record["alias_bytes"] != want_bytes:
        fail(f"memory_analysis().alias_size_in_bytes of {what}, compiled",
             f"{want_bytes} bytes aliased (every donated byte)",
             f"{record['alias_bytes']} bytes", hint, row=row)


@graded(2, "train_step really donates the state (not the batch)")
def test_train_step_donates(obs):
    """`train_step` is the function `jax.jit` made; `alias_size_in_bytes` of the compiled step
    equals the state's `nbytes`; every leaf of the old state is deleted after a call; the batch
    is neither deleted nor declared donated (no "donated buffers were not usable" warning)."""
    record = _lowered(obs, "train_step", TRAIN, "train-is-jit")
    warned = _warned(record)
    if warned:
        fail(f"JAX's warnings while lowering and calling {TRAIN}", "no donated buffer left unused",
             f"JAX warned: {warned[0]}", "a buffer declared donated that no output can take is "
             "not saved memory: the batch is the caller's, so leave it out of donate_argnums",
             row="train-keeps-batch")
    _raised_before(obs, "train_step", TRAIN, all(record["state_deleted"]))
    if any(record["batch_deleted"]):
        fail(f"the batch after {TRAIN}", "still readable", "deleted",
             "donate the state only (argument 0)", row="train-keeps-batch")
    hint = (f"the compiled train_step aliases fewer bytes than the state holds: the jax.jit that "
            f"train_step is must donate state, since a donate_argnums on a jit called inside it "
            f"has no effect. {LESSON}, section \"Inside another jit, and under jax.grad\", "
            "shows where a donation counts")
    _aliased(record, record["state_bytes"], TRAIN, hint, "train-donates-state")
    if not all(record["state_deleted"]):
        fail(f"the old state after {TRAIN}", "every leaf deleted (donated)",
             f"{record['state_deleted'].count(False)} of {len(record['state_deleted'])} leaves alive",
             hint, row="train-donates-state")


@graded(1, "train_step still computes one SGD step")
def test_train_step_values(obs, seed):
    """The new state equals one SGD step of the given loss."""
    record, want = _record(obs, "train_step", TRAIN, "test_train_step_donates"), reference(seed)["train"]
    if record["result"] is None:
        fail(f"what {TRAIN} returns", "a dict with the keys 'b' and 'w'", f"a {record['result_type']}",
             row="train-values")
    wrong = [k for k in ("b", "w") if not _close(record["result"][k], want[k])]
    if wrong:
        fail(f"the new state returned by {TRAIN}",
             f"state - {LEARNING_RATE} * grad(loss), as the given step computes",
             f"different values for {', '.join(wrong)}", row="train-values")


@graded(1, "reset really donates acc")
def test_reset_donates(obs):
    """`reset` is the function `jax.jit` made; `alias_size_in_bytes` equals `acc.nbytes`, and
    `acc` is deleted after the call."""
    record = _lowered(obs, "reset", RESET, "reset-is-jit")
    _raised_before(obs, "reset", RESET, record["acc_deleted"])
    if record.get("params") == 0:
        hint = ("the compiled reset takes no parameter: jit dropped acc, which the function never "
                "reads, and its donation with it; keep_unused=True keeps it. " + LESSON +
                ", section \"A donated input the step never reads\"")
    else:
        hint = (f"{LESSON} lists what keeps a declared donation from taking effect; its audit "
                "recipe reads the same two numbers")
    _aliased(record, record["acc_bytes"], RESET, hint, "reset-donates")
    if not record["acc_deleted"]:
        fail(f"acc after {RESET}", "deleted (donated)", "still alive", hint, row="reset-donates")


@graded(1, "reset still returns zeros of acc's shape and dtype")
def test_reset_values(obs, seed):
    """`float32` zeros of `acc`'s shape, for an `acc` holding `nan`, `inf` and `-inf`."""
    record, want = _record(obs, "reset", RESET, "test_reset_donates"), reference(seed)["reset"]
    if not _close(record["result"], want) or record["dtype"] != "float32":
        got = decode_array(record["result"]) if isinstance(record["result"], str) else None
        first = None if got is None else got.ravel()[:3].tolist()
        fail(f"the value returned by {RESET}", f"float32 zeros of shape {want.shape}",
             f"{record['type']} of dtype {record['dtype']}" + ("" if first is None else f", first values {first}"),
             "the first three entries of acc are nan, inf and -inf: whatever multiplies or adds "
             "to acc keeps them (nan * 0 and inf * 0 are nan)"
             if first is not None and not all(np.isfinite(first)) else None, row="reset-zeros")


@graded(2, "run really donates the state at every step")
def test_run_donates(obs):
    """Each of the `n` states handed to `step` is deleted after its call, and is the state
    itself: the caller's on the first call, the previous result after (the test hands `run`
    a step that records which buffer it received), not a copy."""
    record = obs["run"]
    _raised_before(obs, "run", RUN, len(record.get("donated", [])) == RUN_STEPS and all(record["donated"]))
    flags = record["donated"]
    copies = [i + 1 for i, ok in enumerate(record.get("received", flags)) if not ok]
    if len(flags) == RUN_STEPS and all(flags) and copies:
        fail(f"the buffer each call of step received during {RUN}",
             "the caller's state on call 1, then the array the previous call returned, "
             "each donated",
             f"call{'s' * (len(copies) > 1)} {', '.join(map(str, copies))} received another "
             "buffer (a copy), which was donated"
             + ("; the caller's state was still alive after run" if not record.get("caller_deleted")
                else ""),
             "donating a copy frees the copy and keeps the state it was made from: hand step "
             "the state itself (state = step(state))", row="run-donates")
    if len(flags) != RUN_STEPS or not all(flags):
        views = [i for i, v in enumerate(record.get("history_views") or []) if v]
        fail(f"each state given to step during {RUN}",
             f"{RUN_STEPS} calls of step, each state deleted after its call (donated)",
             f"{len(flags)} calls, {sum(flags)} states donated"
             + (f"; history entries {', '.join(map(str, views))} are NumPy arrays that do not own "
                "their data (views)" if views else ""),
             "JAX does not donate a buffer a NumPy view still holds: keep np.array(state), a copy. "
             + LESSON + ", section \"A NumPy view of the input\"" if views else
             LESSON + " lists what keeps a buffer from being donated", row="run-donates")


@graded(1, "run still returns the final state and the history")
def test_run_values(obs, seed):
    """The history (the state before each step, as NumPy arrays) and the final state have the
    given loop's values."""
    record, want = _record(obs, "run", RUN, "test_run_donates"), reference(seed)
    if record["history"] is None or len(record["history"]) != RUN_STEPS:
        fail(f"the history returned by {RUN}", f"a list of {RUN_STEPS} arrays, the state before each step",
             "no list" if record["history"] is None else f"{len(record['history'])} entries",
             row="run-history")
    others = sorted({t for t in record["history_types"] if t != "ndarray"})
    if others:
        fail(f"the type of each history entry returned by {RUN}", "NumPy copies (numpy.ndarray)",
             f"{', '.join(others)} entries", "the task asks for NumPy copies, np.array(state)",
             row="run-numpy-copies")
    wrong = [i for i, (got, w) in enumerate(zip(record["history"], want["history"])) if not _close(got, w)]
    if wrong:
        fail(f"the history returned by {RUN}", "the state before each step, in order",
             f"different values in entries {', '.join(map(str, wrong))}",
             "entry i is the state handed to step on call i + 1, recorded before the call",
             row="run-history")
    if not _close(record["final"], want["final"]):
        fail(f"the final state returned by {RUN}", "the state after the last step", "different values",
             row="run-history")


KEYWORD_SECTION = "section \"Keyword calls and donate_argnames\""


def _apply_hint(record, how):
    """What the observations of ``how`` (a positional or keyword call) show."""
    call, positional = record[how], record["positional"]
    if how == "keyword" and positional["state_deleted"] and not positional["delta_deleted"]:
        hidden = record.get("signature") is not None and "state" not in record["signature"]
        return ((f"the jitted function's parameters are named {', '.join(record['signature'])}: "
                 "they hide the name state, so jax.jit cannot map donate_argnums to it for a "
                 "keyword call (a wrapper taking *args, **kwargs without functools.wraps). "
                 if hidden else "a positional call donates state, a keyword call does not. ")
                + f"{LESSON}, {KEYWORD_SECTION}: donate_argnames='state' names it for both")
    if call["delta_deleted"]:
        return ("delta was donated: apply_delta(delta, state) takes delta first; "
                "donate_argnames='state' names the argument to donate, for positional and "
                "keyword calls alike")
    return (f"state is argument 1 of apply_delta(delta, state); donate_argnames='state' names "
            f"it for positional and keyword calls alike ({LESSON}, {KEYWORD_SECTION})")


@graded(1, "apply_delta really donates state, positionally and by keyword")
def test_apply_delta_donates(obs):
    """`apply_delta` is the function `jax.jit` made; `alias_size_in_bytes` equals `state.nbytes`;
    after a positional call and after a keyword call, `state` is deleted and `delta` is not."""
    record = _lowered(obs, "apply_delta", APPLY, "apply-is-jit")
    for how in ("positional", "keyword"):
        call = record[how]
        if call["error"] is not None and not call["state_deleted"]:
            where = where_text(call.get("error_where"))
            fail(f"{APPLY}, called with {how} arguments", "it runs",
                 f"it raised {call['error']}" + (f", at {where}" if where else ""))
    for how in ("positional", "keyword"):
        call = record[how]
        if call["delta_deleted"] or not call["state_deleted"]:
            row = ("apply-keeps-delta" if call["delta_deleted"] and call["state_deleted"] or
                   call["delta_deleted"] and _warned(record) else
                   "apply-keyword" if how == "keyword" and record["positional"]["state_deleted"]
                   and not record["positional"]["delta_deleted"] else "apply-donates-state")
            fail(f"{APPLY}, called with {how} arguments", "state deleted (donated), delta kept",
                 f"state {'deleted' if call['state_deleted'] else 'alive'}, "
                 f"delta {'deleted' if call['delta_deleted'] else 'alive'}"
                 + (f"; JAX warned: {_warned(record)[0]}" if _warned(record) else ""),
                 _apply_hint(record, how), row=row)
    warned = _warned(record)
    if warned:
        fail(f"JAX's warnings while lowering and calling {APPLY}", "no donated buffer left unused",
             f"JAX warned: {warned[0]}", "only state is donated: delta is the caller's",
             row="apply-keeps-delta")
    _aliased(record, record["state_bytes"], APPLY, _apply_hint(record, "positional"),
             "apply-donates-state")


@graded(1, "apply_delta still returns state + delta")
def test_apply_delta_values(obs, seed):
    """`state + delta`, called either way."""
    record, want = obs["apply_delta"], reference(seed)["apply"]
    if record.get("missing"):
        _record(obs, "apply_delta", APPLY, "test_apply_delta_donates")
    for how in ("positional", "keyword"):
        call = record[how]
        if call["error"] is not None:
            where = where_text(call.get("error_where"))
            fail(f"{APPLY}, called with {how} arguments", "state + delta",
                 f"it raised {call['error']}" + (f", at {where}" if where else ""))
        if not _close(call["result"], want):
            fail(f"the value returned by {APPLY}, called with {how} arguments",
                 "state + delta", f"{call['type']} with different values", row="apply-values")
