"""The requirements of ``update_with_donate``'s task (book/exercises/update_with_donate.md),
one row per sentence that asks for something (:mod:`autograder.requirements`)."""
from autograder.exercises.requirement import Requirement

REQUIREMENTS = (
    Requirement(
        "sum", "the result is state + delta",
        "Write a function `update_with_donate(state, delta)` that returns the elementwise sum "
        "`state + delta`.",
        ("test_values", "test_rebinding")),
    Requirement(
        "donate-state", "state is donated to a jitted helper",
        "The sum is computed by a jitted helper that donates `state`, made with "
        "`jax.jit(..., donate_argnums=(0,))` and called from `update_with_donate`.",
        ("test_state_donated", "test_delta_kept", "test_no_read_after_donation")),
    Requirement(
        "helper-once", "the helper is made once, at module level",
        "Create the helper once, at module level: a `jax.jit` made inside the function "
        "traces and compiles again on every call.",
        ("test_compiled_once",)),
    Requirement(
        "keep-delta", "delta is not donated",
        "Only argument 0, `state`, is offered for reuse. `delta` is not donated: the caller "
        "may still want it.",
        ("test_delta_kept",)),
    Requirement(
        "no-read", "state is not read after the call",
        "The caller has finished with the old `state` once the call returns: nothing reads "
        "it after it is donated.",
        ("test_no_read_after_donation", "test_rebinding")),
    Requirement(
        "rebind", "the result can be passed back in as the next state",
        "The caller passes the result back in as the next `state`.",
        ("test_rebinding",)),
    Requirement(
        "jax-array", "the result is a float32 jax.Array, never NumPy",
        "Return the helper's result as it is: a `float32` JAX array (`jax.Array`) of the "
        "inputs' shape. A NumPy array, e.g. from `np.asarray(...)`, fails.",
        ("test_result_type", "test_empty")),
    Requirement(
        "empty", "empty inputs give an empty result",
        "Empty inputs give an empty result (a `float32` `jax.Array` of shape `(0,)`).",
        ("test_empty",)),
)
