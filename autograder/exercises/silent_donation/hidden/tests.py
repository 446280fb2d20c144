"""Hidden tests for ``silent_donation`` (10 points).

Each repaired step gets two checks: it really donates (the evidence is the
inputs deleted after the call and, for the three jitted steps,
``alias_size_in_bytes`` of the compiled step equal to the donated bytes), and
it still computes the same values, recomputed here from the same seed (see
:mod:`autograder.exercises.silent_donation.probe`). A "donates" check never passes on
the ``donated`` flags of ``lowered.args_info`` alone: an unused argument reads
``donated=True`` there and is neither aliased nor deleted.
"""
import functools

import numpy as np

from autograder.feedback import fail, graded
from autograder.exercises.common import decode_array, quiet
from autograder.exercises.silent_donation.probe import (
    LEARNING_RATE, RUN_STEPS, loss, make_inputs, run_step)

TRAIN = "train_step(state, batch) on a linear model's state {'b', 'w'} and one batch"
RESET = "reset(acc) on a float32 vector holding nan, inf and -inf"
RUN = f"run(step, state, {RUN_STEPS}) with a donating step s -> s * 0.5 + 1"
APPLY = "apply_delta(delta, state) on two float32 vectors"
JITTED_HINT = "make it the function jax.jit returns (not a wrapper), so that it can be lowered"


@functools.lru_cache(maxsize=4)
def reference(seed):
    """The values every repaired step must still compute, as NumPy arrays."""
    import jax

    inputs = make_inputs(seed)
    with quiet():
        grads = jax.grad(loss)(inputs["state"], inputs["batch"])
        new = {k: np.asarray(inputs["state"][k] - LEARNING_RATE * grads[k]) for k in ("b", "w")}
    history, s = [], inputs["run_state"]
    for _ in range(RUN_STEPS):
        history.append(s)
        s = np.asarray(run_step(s), np.float32)
    return {"train": new, "reset": np.zeros_like(inputs["acc"]), "history": history, "final": s,
            "apply": inputs["apply_state"] + inputs["delta"]}


def _record(obs, name, what):
    record = obs[name]
    if record["error"] is not None:
        fail(what, "it runs", f"it raised {record['error']}",
             "a deleted-array error means something reads an input after donating it"
             if "deleted" in record["error"].lower() else None)
    return record


def _close(encoded, want):
    got = decode_array(encoded) if isinstance(encoded, str) else None
    return (got is not None and got.shape == np.shape(want)
            and bool(np.allclose(got, want, rtol=1e-5, atol=1e-5)))


def _aliased(record, want_bytes, what, fix):
    if record["alias_bytes"] is None:
        fail(f"memory_analysis().alias_size_in_bytes of {what}, compiled",
             f"{want_bytes} bytes aliased", "a function with no .lower method", JITTED_HINT)
    if record["alias_bytes"] != want_bytes:
        fail(f"memory_analysis().alias_size_in_bytes of {what}, compiled",
             f"{want_bytes} bytes aliased (every donated byte)", f"{record['alias_bytes']}", fix)


@graded(2, "train_step really donates the state (not the batch)")
def test_train_step_donates(obs):
    """`alias_size_in_bytes` of the compiled step equals the state's `nbytes`, every leaf of
    the old state is deleted after a call, and the batch is not deleted."""
    record = _record(obs, "train_step", TRAIN)
    fix = ("a donate_argnums on a jit called inside another jit does nothing: "
           "donate at the outermost jax.jit")
    _aliased(record, record["state_bytes"], TRAIN, fix)
    if not all(record["state_deleted"]):
        fail(f"the old state after {TRAIN}", "every leaf deleted (donated)",
             f"{record['state_deleted'].count(False)} of {len(record['state_deleted'])} leaves alive", fix)
    if any(record["batch_deleted"]):
        fail(f"the batch after {TRAIN}", "still readable", "deleted", "donate the state only")


@graded(1, "train_step still computes one SGD step")
def test_train_step_values(obs, seed):
    """The new state equals one SGD step of the given loss."""
    record, want = _record(obs, "train_step", TRAIN), reference(seed)["train"]
    if record["result"] is None:
        fail(f"what {TRAIN} returns", "a dict with the keys 'b' and 'w'", f"a {record['result_type']}")
    wrong = [k for k in ("b", "w") if not _close(record["result"][k], want[k])]
    if wrong:
        fail(f"the new state returned by {TRAIN}",
             f"state - {LEARNING_RATE} * grad(loss), as the given step computes",
             f"different values for {', '.join(wrong)}")


@graded(1, "reset really donates acc")
def test_reset_donates(obs):
    """`alias_size_in_bytes` equals `acc.nbytes`, and `acc` is deleted after the call."""
    record = _record(obs, "reset", RESET)
    fix = ("jit drops an argument the function never reads, and its donation with it: "
           "pass keep_unused=True to jax.jit")
    _aliased(record, record["acc_bytes"], RESET, fix)
    if not record["acc_deleted"]:
        fail(f"acc after {RESET}", "deleted (donated)", "still alive", fix)


@graded(1, "reset still returns zeros of acc's shape and dtype")
def test_reset_values(obs, seed):
    """`float32` zeros of `acc`'s shape, for an `acc` holding `nan`, `inf` and `-inf`."""
    record, want = _record(obs, "reset", RESET), reference(seed)["reset"]
    if not _close(record["result"], want) or record["dtype"] != "float32":
        got = decode_array(record["result"]) if isinstance(record["result"], str) else None
        fail(f"the value returned by {RESET}", f"float32 zeros of shape {want.shape}",
             f"{record['type']} of dtype {record['dtype']}" + (
                 "" if got is None else f", first values {got.ravel()[:3].tolist()}"),
             "zeros whatever acc holds: acc * 0 keeps nan and turns inf into nan")


@graded(2, "run really donates the state at every step")
def test_run_donates(obs):
    """Each of the `n` states handed to `step` is deleted after its call (the test hands
    `run` a step that records it)."""
    record = _record(obs, "run", RUN)
    flags = record["donated"]
    if len(flags) != RUN_STEPS or not all(flags):
        fail(f"each state given to step during {RUN}",
             f"{RUN_STEPS} calls of step, each state deleted after its call (donated)",
             f"{len(flags)} calls, {sum(flags)} states donated",
             "on CPU, np.asarray(state) and jax.device_get(state) are views of the state's "
             "buffer, and JAX does not donate a buffer a view still holds: keep "
             "np.array(state), a copy")


@graded(1, "run still returns the final state and the history")
def test_run_values(obs, seed):
    """The history (the state before each step) and the final state have the given loop's
    values."""
    record, want = _record(obs, "run", RUN), reference(seed)
    if record["history"] is None or len(record["history"]) != RUN_STEPS:
        fail(f"the history returned by {RUN}", f"a list of {RUN_STEPS} arrays, the state before each step",
             "no list" if record["history"] is None else f"{len(record['history'])} entries")
    wrong = [i for i, (got, w) in enumerate(zip(record["history"], want["history"])) if not _close(got, w)]
    if wrong:
        fail(f"the history returned by {RUN}", "the state before each step, in order",
             f"different values in entries {', '.join(map(str, wrong))}",
             "record a copy of the state before passing it to step")
    if not _close(record["final"], want["final"]):
        fail(f"the final state returned by {RUN}", "the state after the last step", "different values")


# A positional call donates and a keyword call does not: the argument number was right,
# but jit maps it to a name through the jitted function's signature, which was hidden.
HIDDEN_SIGNATURE = ("a positional call donates state but a keyword call does not: jax.jit maps "
                    "donate_argnums to argument names through the signature of the function it "
                    "jits, and that function hides it (a wrapper taking *args, **kwargs, "
                    "without functools.wraps). Lesson 4, \"When donation silently does nothing\", "
                    "section \"Keyword calls and donate_argnames\": use functools.wraps, or "
                    "donate_argnames='state'")


@graded(1, "apply_delta really donates state, positionally and by keyword")
def test_apply_delta_donates(obs):
    """`alias_size_in_bytes` equals `state.nbytes`; after a positional call and after a
    keyword call, `state` is deleted and `delta` is not."""
    record = _record(obs, "apply_delta", APPLY)
    fix = "donate the argument that is replaced: donate_argnums=1, or donate_argnames='state'"
    _aliased(record, record["state_bytes"], APPLY, fix)
    for how in ("positional", "keyword"):
        call = record[how]
        if not call["state_deleted"] or call["delta_deleted"]:
            positional = record["positional"]
            hidden = (how == "keyword" and positional["state_deleted"]
                      and not positional["delta_deleted"])
            fail(f"{APPLY}, called with {how} arguments", "state deleted (donated), delta kept",
                 f"state {'deleted' if call['state_deleted'] else 'alive'}, "
                 f"delta {'deleted' if call['delta_deleted'] else 'alive'}",
                 HIDDEN_SIGNATURE if hidden else fix)


@graded(1, "apply_delta still returns state + delta")
def test_apply_delta_values(obs, seed):
    """`state + delta`, called either way."""
    record, want = _record(obs, "apply_delta", APPLY), reference(seed)["apply"]
    for how in ("positional", "keyword"):
        if not _close(record[how]["result"], want):
            fail(f"the value returned by {APPLY}, called with {how} arguments",
                 "state + delta", f"a {record[how]['type']} with different values")
