"""The requirements of ``silent_donation``'s task (book/exercises/silent_donation.md),
one row per sentence that asks for something (:mod:`autograder.requirements`)."""
from autograder.exercises.requirement import Requirement

TRAIN = ("test_train_step_donates",)
APPLY = ("test_apply_delta_donates",)

REQUIREMENTS = (
    Requirement(
        "train-donates-state", "train_step donates every leaf of state",
        "Repaired, `train_step(state, batch)` donates every leaf of `state`.", TRAIN),
    Requirement(
        "train-keeps-batch", "train_step leaves batch readable",
        "`train_step` leaves `batch` readable: leave it out of `donate_argnums`, the caller "
        "still owns it.", TRAIN),
    Requirement(
        "train-is-jit", "train_step is the function jax.jit made",
        "`train_step` is the function made by `jax.jit` (not a wrapper), so it can be lowered.",
        TRAIN),
    Requirement(
        "train-values", "train_step computes one SGD step",
        "`train_step` still computes one SGD step (learning rate 0.1) of the linear model.",
        ("test_train_step_values",)),
    Requirement(
        "reset-zeros", "reset returns float32 zeros, whatever acc holds",
        "`reset(acc)` returns `float32` zeros of `acc`'s shape, whatever `acc` holds (it may "
        "hold `nan` or `inf`).", ("test_reset_values",)),
    Requirement(
        "reset-donates", "reset donates acc",
        "Repaired, `reset` donates `acc`.", ("test_reset_donates",)),
    Requirement(
        "reset-is-jit", "reset is the function jax.jit made",
        "`reset` is the function made by `jax.jit`.", ("test_reset_donates",)),
    Requirement(
        "run-history", "run returns the final state and the states before each step",
        "`run(step, state, n)` calls `step` `n` times and returns `(final_state, history)`, "
        "`history` holding the values of the `n` states before each step.", ("test_run_values",)),
    Requirement(
        "run-numpy-copies", "run's history holds NumPy copies",
        "The history holds NumPy copies, `np.array(state)`, that keep the values without "
        "holding the state's buffer.", ("test_run_values",)),
    Requirement(
        "run-donates", "run donates every state it hands to step",
        "Repaired, every state `run` hands to `step` is donated.", ("test_run_donates",)),
    Requirement(
        "apply-values", "apply_delta returns state + delta",
        "`apply_delta(delta, state)` returns `state + delta` for two `float32` vectors of one "
        "shape, called with positional or with keyword arguments.", ("test_apply_delta_values",)),
    Requirement(
        "apply-donates-state", "apply_delta donates state",
        "Repaired, `apply_delta` donates `state`.", APPLY),
    Requirement(
        "apply-keeps-delta", "apply_delta does not donate delta",
        "`apply_delta` does not donate `delta`, the array the caller keeps.", APPLY),
    Requirement(
        "apply-keyword", "apply_delta donates state when called by keyword too",
        "`apply_delta` donates `state` called with positional or with keyword arguments.", APPLY),
    Requirement(
        "apply-is-jit", "apply_delta is the function jax.jit made",
        "`apply_delta` is the function made by `jax.jit`.", APPLY),
)
