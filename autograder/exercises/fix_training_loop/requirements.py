"""The requirements of the ``fix_training_loop`` task, one row per sentence that asks for
something (see :mod:`autograder.requirements`). A step that donates nothing can delete
nothing, so the checks about what donation deletes, and the memory it saves, say "not
checked" or fail with it: they belong to the donation row too."""
from autograder.exercises.requirement import Requirement

REQUIREMENTS = (
    Requirement("jit-itself", "make_train_step returns jax.jit's function",
                "`make_train_step(loss_fn, optimizer)` returns the function made by `jax.jit` "
                "itself, not a wrapper around it.",
                ("test_train_state_donated",)),
    Requirement("donate-state", "the whole train state donated",
                "The step donates argument 0, the whole train state: every leaf donated, every "
                "byte aliased, the old state deleted after a step.",
                ("test_train_state_donated", "test_runs_without_deleted_reads",
                 "test_metric_copies", "test_batch_kept", "test_memory_saved")),
    Requirement("keep-batch", "the batch not donated",
                "The step keeps the batch: it is not donated.",
                ("test_batch_kept",)),
    Requirement("step-loss", "the step returns the loss before the update",
                "`train_step(train_state, batch)` returns `(new_train_state, loss)`, `loss` "
                "being `loss_fn(params, batch)` for the params before the update.",
                ("test_step_values", "test_losses")),
    Requirement("train-steps", "one step per batch, in order, from optimizer.init",
                "`train` starts from `(params, optimizer.init(params))` and takes one step per "
                "batch, in order, carrying the train state from step to step.",
                ("test_losses", "test_final_results")),
    Requirement("losses", "metrics['losses']: each step's loss",
                "`metrics[\"losses\"]` is the loss each step returned, in order.",
                ("test_losses",)),
    Requirement("final-results", "final params, final_loss and max_change",
                "`train` returns the params after the last step; `final_loss` is "
                "`loss_fn(final_params, batches[-1])` and `max_change` the largest absolute "
                "change of any parameter entry.",
                ("test_final_results",)),
    Requirement("readable-results", "what train returns is readable",
                "`train` runs to the end and returns params and metrics that are all readable: "
                "nothing it returns was donated to a later step.",
                ("test_runs_without_deleted_reads", "test_final_results")),
    Requirement("metric-keys", "metrics has exactly the four keys",
                "`metrics` has exactly the keys `losses`, `start_params`, `final_loss` and "
                "`max_change`.",
                ("test_metric_copies",)),
    Requirement("start-copy", "start_params: an independent copy",
                "`metrics[\"start_params\"]` is an independent copy of the params given: it stays "
                "readable when the caller later donates its own params.",
                ("test_metric_copies",)),
    Requirement("caller-arrays", "the caller's params and batches survive",
                "After `train` returns, the caller's `params` and `batches` are readable.",
                ("test_metric_copies",)),
    Requirement("one-state", "donation saves memory: one train state held",
                "Donation saves memory: right after each step, `train` holds one train state "
                "(with the start copy and the losses), not a copy of what it donated.",
                ("test_memory_saved",)),
    Requirement("no-unused-donation", "nothing donated goes unused",
                "Nothing `train` donates goes unused: JAX warns \"Some donated buffers were not "
                "usable\" (to stderr, which Validate fails on) for a buffer no output can take.",
                ("test_memory_saved",)),
)
