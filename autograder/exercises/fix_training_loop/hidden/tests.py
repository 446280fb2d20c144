"""Hidden tests for ``fix_training_loop`` (10 points).

Each test reads the probe observations (``obs``, see
:mod:`autograder.exercises.fix_training_loop.probe`) and compares them with a reference
run computed here, in the grader's process, from the same seed: the same
model, loss, optimizer and batches, one step per batch. Facts checked come
from the task statement: the train state (params and optimizer state) is
donated, every byte of it is aliased, the batch is not donated, and the
metrics hold copies that outlive any later donation.

Checks about what donation deletes ("runs without reading a deleted buffer",
"the caller's params and batches survive", "the batch is kept") need the
evidence they name: a step that really donates the train state. When one step
of ``make_train_step`` leaves the old state alive, nothing can be deleted, so
those checks score 0 and say "not checked" instead of passing vacuously.

"Donation saves memory" reads what ``train`` held right after each step returned
(live arrays and bytes beyond its caller's, as the lesson on lifetimes measures a
loop) and JAX's warnings that a donated buffer was not usable. When ``train``
raised, the check that runs it first says so, and the others that read its
results say "not checked" once each, naming it.
"""
import functools

import numpy as np

from autograder.feedback import fail, graded
from autograder.exercises.common import decode_array, quiet
from autograder.exercises.fix_training_loop.probe import (
    METRIC_KEYS, STEPS, loss_fn, make_inputs, make_optimizer, param_paths)

TRAIN = f"train(params, batches, loss_fn, optimizer) on a tiny MLP with Adam, {STEPS} batches"
STEP = "one call of make_train_step(loss_fn, optimizer) on (params, opt_state) and the first batch"
DELETED_HINT = ("an array given to a donating step is deleted afterwards, under every name: "
                "the lesson 'Leaf aliasing and lifetimes' shows which names go with it")
RUNS = "train runs without reading a deleted buffer"
DONATED = "the whole train state is donated and aliased"
LIFETIMES = ("the lesson 'Leaf aliasing and lifetimes', section 'A donating training loop "
             "and the memory it saves'")


@functools.lru_cache(maxsize=1)
def _programs():
    """``(optimizer, step)`` of the reference run, ``step`` jitted once for the grader's
    process: a grading whose seed draws model sizes already seen reuses its compilation
    (about 0.25 s of a grading's CPU on two cores). The loss
    stays unjitted, as a learner's ``train`` computes ``final_loss``: the values
    feedback quotes are the same to the last digit."""
    import jax
    import optax

    optimizer = make_optimizer()

    @jax.jit
    def step(state, batch):
        p, opt_state = state
        loss, grads = jax.value_and_grad(loss_fn)(p, batch)
        updates, opt_state = optimizer.update(grads, opt_state, p)
        return (optax.apply_updates(p, updates), opt_state), loss

    return optimizer, step


@functools.lru_cache(maxsize=4)
def reference(seed):
    """The run a correct answer reproduces, as NumPy values."""
    import jax
    import jax.numpy as jnp

    params, batches = make_inputs(seed)
    optimizer, step = _programs()
    with quiet():
        state = (jax.tree.map(jnp.asarray, params), optimizer.init(params))
        losses, after, first = [], [], None
        for batch in batches:
            state, loss = step(state, batch)
            losses.append(float(loss))
            after.append(float(loss_fn(state[0], batch)))
            first = first or (jax.tree.map(np.asarray, state[0]), float(loss))
        final = jax.tree.map(np.asarray, state[0])
        return {"start": params, "losses": np.asarray(losses, np.float32), "final": final,
                "after": np.asarray(after, np.float32),
                "final_loss": float(loss_fn(state[0], batches[-1])),
                "max_change": max(float(np.max(np.abs(f - p))) for f, p in
                                  zip(jax.tree.leaves(final), jax.tree.leaves(params))),
                "first_params": first[0], "first_loss": first[1]}


def _close(got, want):
    got = decode_array(got) if isinstance(got, str) else got
    if got is None:
        return False
    got, want = np.asarray(got), np.asarray(want)
    return got.shape == want.shape and bool(np.allclose(got, want, rtol=1e-4, atol=1e-5))


def _show(encoded):
    value = decode_array(encoded) if isinstance(encoded, str) else None
    if value is None or value.size == 0:
        return "no readable number"
    return f"{float(value.ravel()[0]):.5f}"


def _params_differ(encoded, want):
    """Paths of the params that differ from the tree ``want`` (all of them if unreadable or
    of another structure)."""
    import jax

    paths = param_paths(want)
    if encoded is None or sorted(encoded) != sorted(paths):
        return paths
    return [p for p, w in zip(paths, jax.tree.leaves(want)) if not _close(encoded[p], w)]


def _train(obs, lead=False):
    """The observations of the ``train`` run; when it raised, the ``lead`` check says so
    and the others say "not checked", naming it."""
    record = obs["train"]
    for key, when in (("error", "while training"), ("read_error", "while the grader read the returned metrics")):
        if record.get(key) and not lead:
            fail(TRAIN, "a run that returns (params, metrics)",
                 f"not checked: train raised {when} (said under \"{RUNS}\")")
        if record.get(key):
            deleted = "has been deleted" in record[key]
            fail(TRAIN, "it runs to the end and returns (params, metrics)",
                 f"it raised {record[key]} {when}", DELETED_HINT if deleted else None)
    return record


def _step_donates(obs):
    """Evidence that the learner's step donates: every leaf of the old state deleted."""
    deleted = obs["step"].get("state_deleted") or []
    return bool(deleted) and all(deleted)


def _not_checked(what, why, obs=None):
    """Fail as "not checked" for want of a donating step; ``why`` says what the step did,
    unless ``obs`` shows that the step raised (then that is what was observed)."""
    error = obs["step"]["error"] if obs is not None else None
    if error is not None:
        why = f"one step on (params, opt_state) raised {error}, so no donation was seen"
    fail(what, "a step that donates the train state, so that this can be checked",
         f"not checked: {why} (see the check \"{DONATED}\")")


@graded(1, RUNS)
def test_runs_without_deleted_reads(obs):
    """`train` returns, and every array in the params and metrics it returns is readable."""
    record = _train(obs, lead=True)
    if record.get("returned_deleted"):
        fail(TRAIN, "params and metrics whose arrays are all readable",
             "a returned array is deleted: it was donated to a later step", DELETED_HINT)
    if not _step_donates(obs):
        _not_checked(TRAIN + ", reading nothing deleted",
                     "one step left the old train state alive, so nothing could be deleted", obs)


@graded(1, "losses equal a reference run")
def test_losses(obs, seed):
    """`metrics["losses"]` equals the reference run's five losses."""
    record, ref = _train(obs), reference(seed)
    if not _close(record["losses"], ref["losses"]):
        got = decode_array(record["losses"])
        fail(f"metrics['losses'] after {TRAIN}",
             f"{STEPS} losses, one per step, equal to a reference run "
             f"(first {ref['losses'][0]:.4f}, last {ref['losses'][-1]:.4f})",
             "no list (or one-dimensional array) of losses" if got is None else
             f"{got.size} values: {', '.join(f'{v:.4f}' for v in got.ravel()[:STEPS])}",
             "these are the losses of the params after each update, loss_fn(new params, batch)"
             if _close(record["losses"], ref["after"]) else
             "metrics['losses'] holds the loss each step returned, in order, from "
             "(params, optimizer.init(params)) on")


@graded(1, "final params, final_loss and max_change")
def test_final_results(obs, seed):
    """The returned params, `final_loss` and `max_change` equal the reference run's."""
    record, ref = _train(obs), reference(seed)
    wrong = _params_differ(record["final_params"], ref["final"])
    if wrong:
        fail(f"the params returned by {TRAIN}", "the params after the last step, a tree of "
             f"the given params' structure ({', '.join(param_paths(ref['final']))})",
             f"different values for {', '.join(wrong)}" if record["final_params"] is not None
             else "a tree of another structure")
    how = {"final_loss": "final_loss is loss_fn(final params, batches[-1])",
           "max_change": "max_change is the largest absolute change of any parameter entry "
                         "between start and end"}
    for key in ("final_loss", "max_change"):
        if not _close(record[key], ref[key]):
            fail(f"metrics['{key}'] after {TRAIN}", f"{ref[key]:.5f}", _show(record[key]),
                 "this is the loss the last step returned (of the params before its update)"
                 if key == "final_loss" and _close(record[key], ref["losses"][-1]) else how[key])


@graded(1, "metrics hold independent copies; the caller's params and batches survive")
def test_metric_copies(obs, seed):
    """`metrics` has exactly the four keys; `start_params` equals the params given; after
    `train` returns, the caller's `params` and `batches` are readable, and `start_params`
    stays readable after the caller donates its own `params` to another step; scores 0, "not
    checked", when the step donates nothing."""
    record, ref = _train(obs), reference(seed)
    if record["metric_keys"] != sorted(METRIC_KEYS):
        fail(f"the metrics dict returned by {TRAIN}", f"exactly the keys {', '.join(METRIC_KEYS)}",
             "not a dict" if record["metric_keys"] is None else
             f"the keys {', '.join(record['metric_keys'])}")
    wrong = _params_differ(record["start_params"], ref["start"])
    if wrong:
        fail(f"metrics['start_params'] after {TRAIN}", "the params train was given",
             f"different values for {', '.join(wrong)}")
    if record["caller_params_deleted"]:
        fail(f"the caller's params after {TRAIN}", "still readable",
             "deleted: train donated the caller's arrays",
             "donate a copy of the params, not the arrays you were given")
    if record["batches_deleted"]:
        fail(f"the caller's batches after {TRAIN}", "still readable",
             "deleted: train donated the caller's batches",
             "never donate an array the caller gave you; donate a copy, or do not donate it")
    if not record["start_survives_caller_donation"]:
        fail("metrics['start_params'] after the caller donates its own params to another step",
             "still readable (an independent copy)", "deleted with the caller's params: they "
             "share the caller's buffers", "the lesson 'jit with donate_argnums', section "
             "'Keeping an independent copy'")
    if not _step_donates(obs):
        _not_checked(f"the caller's params and batches after {TRAIN}",
                     "one step left the old train state alive, so train could not delete them", obs)


@graded(2, "the whole train state is donated and aliased")
def test_train_state_donated(obs):
    """`make_train_step` returns the function made by `jax.jit`; every leaf of `(params,
    opt_state)` is donated; `alias_size_in_bytes` of the compiled step equals the state's
    total `nbytes`; the old state is deleted after one step."""
    record = obs["step"]
    if not record["jitted"]:
        fail("what make_train_step returns", "the function made by jax.jit(...)",
             "a function with no .lower method, so not the one jax.jit made"
             if record["error"] is None else f"nothing: it raised {record['error']}")
    if record["jitted"] and "state_donated" not in record:  # lowering it raised: no flags
        fail(f"the donation flags of the train state in {STEP}",
             "every leaf of (params, opt_state) donated",
             f"not read: lowering the step on (params, opt_state) raised {record['error']}")
    flags = record.get("state_donated") or []
    if not flags or not all(flags):
        fail(f"the donation flags of the train state in {STEP}",
             "every leaf of (params, opt_state) donated",
             f"{sum(flags)} of {len(flags)} leaves donated (the lowered step's args_info)",
             "the lesson 'jit with donate_argnums' shows how donate_argnums and "
             "donate_argnames choose what is donated")
    if record["alias_bytes"] != record["state_bytes"]:
        fail(f"memory_analysis().alias_size_in_bytes of the compiled step in {STEP}",
             f"{record['state_bytes']} (every byte of params and opt_state)",
             f"{record['alias_bytes']}",
             "return the new state with the same structure, shapes and dtypes as the old one")
    if record["error"] is not None:
        fail(STEP, "a new state and a loss", f"it raised {record['error']}")
    if not all(record["state_deleted"]):
        fail(f"the old train state after {STEP}", "every leaf deleted (donated and reused)",
             f"{record['state_deleted'].count(False)} leaves still alive")


@graded(1, "the batch is kept, not donated")
def test_batch_kept(obs):
    """The batch is not donated and is readable after one step; scores 0, "not checked",
    when the step donates nothing."""
    record = obs["step"]
    if record["error"] is not None:
        fail(STEP, "a new state and a loss", f"it raised {record['error']}")
    if any(record.get("batch_donated") or []) or record["batch_deleted"]:
        warned = record.get("warnings") or []
        fail(f"the batch after {STEP}", "the batch not donated, and readable",
             "the batch was donated (the lowered step's args_info)"
             + (" and deleted" if record["batch_deleted"] else
                ", and JAX warned: " + warned[0] if warned else ""),
             "JAX could not reuse the batch's buffers, so it kept them; Validate fails on "
             "that warning (stderr)" if warned and not record["batch_deleted"] else None)
    if not _step_donates(obs):
        _not_checked(f"the batch after {STEP}, while the train state is donated",
                     "the old train state was not deleted either, so a live batch says nothing "
                     "about which argument the step donates")


@graded(1, "one step gives the reference loss and params")
def test_step_values(obs, seed):
    """One step returns the reference loss and params."""
    record, ref = obs["step"], reference(seed)
    if record["error"] is not None:
        fail(STEP, "a new state and a loss", f"it raised {record['error']}")
    if not _close(record["loss"], ref["first_loss"]):
        fail(f"the loss returned by {STEP}", f"{ref['first_loss']:.5f}", _show(record["loss"]),
             "this is the loss of the params after the update" if _close(record["loss"], ref["after"][0])
             else "the step returns (new_train_state, loss), the loss of the params before the update")
    wrong = _params_differ(record["new_params"], ref["first_params"])
    if wrong:
        fail(f"the new params returned by {STEP}", "one Adam update of every parameter",
             f"different values for {', '.join(wrong)}")


SLACK = 64  # bytes a loop may hold beyond one state, the start copy and the losses (scalars)


def _sizes(seed):
    """``(train state bytes, params bytes)`` of the run the probe made."""
    import jax

    params, _ = make_inputs(seed)
    with quiet():
        state = (params, make_optimizer().init(params))
    return (sum(int(leaf.nbytes) for leaf in jax.tree.leaves(state)),
            sum(int(leaf.nbytes) for leaf in jax.tree.leaves(params)))


def _what_more(extra, state_bytes, params_bytes):
    """What ``extra`` bytes held beyond one state are exactly, when they are one of the
    trees the run has: the model's sizes come from the seed, so feedback names the tree."""
    named = {state_bytes: "one whole train state", params_bytes: "one params tree",
             state_bytes - params_bytes: "one optimizer state"}
    return f" ({named[extra]} more)" if extra in named else ""


@graded(2, "donation saves memory: train holds one train state")
def test_memory_saved(obs, seed):
    """Right after each step returns, `train` holds (live arrays beyond its caller's) one
    train state, the `start_params` copy and the losses so far, and at most
    :data:`SLACK` bytes more; and nothing `train` donates goes unused (JAX's warning "Some
    donated buffers were not usable", which Validate fails on, beyond what the step's own
    donation of the batch raises, a check of its own)."""
    record = _train(obs)
    state_bytes, params_bytes = _sizes(seed)
    held = record.get("held") or []
    if not held:
        fail(f"what {TRAIN} holds right after each step", "one train state",
             "not checked: train took no step through the step make_train_step returned, "
             "so what it holds between steps was not seen")
    for k, (arrays, nbytes) in enumerate(held, 1):
        expected = state_bytes + params_bytes + 4 * k
        if nbytes - expected > SLACK:
            fail(f"what {TRAIN} holds right after step {k} returned (live arrays beyond its caller's)",
                 f"about {expected} bytes: one train state ({state_bytes}), the start_params "
                 f"copy ({params_bytes}) and {k} float32 loss(es), at most {SLACK} bytes more",
                 f"{nbytes} bytes in {arrays} arrays, {nbytes - expected} more"
                 + _what_more(nbytes - expected, state_bytes, params_bytes),
                 f"what a donating loop holds, and how it is measured: {LIFETIMES}")
    step_warnings = set(obs["step"].get("warnings") or [])
    extra = [w for w in record.get("warnings") or [] if w not in step_warnings]
    if extra:
        fail(f"JAX's warnings while {TRAIN}", "none: every donated buffer used",
             f"JAX warned: {extra[0]}",
             "a buffer donated to a jitted function that no output can take is kept, not "
             "reused, so donating it saves nothing (the lesson 'jit with donate_argnums', "
             "section 'Donation is permission, not a guarantee'); in the notebook the "
             "warning goes to stderr, and Validate fails")
