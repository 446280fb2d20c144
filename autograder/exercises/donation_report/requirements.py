"""The requirements of the ``donation_report`` task, one row per sentence that asks for
something (see :mod:`autograder.requirements`)."""
from autograder.exercises.requirement import Requirement

REQUIREMENTS = (
    Requirement("compile-only", "compiles with the state donated, never runs the step",
                "The report compiles `fn` with the state donated (`donate_argnums=0`, nothing "
                "else) and never runs it, so the caller's `state` is still readable afterwards.",
                ("test_state_untouched",)),
    Requirement("format", "exactly the promised keys",
                "It returns a dict with exactly the keys `leaves`, `aliased_bytes` and "
                "`total_bytes`, and one dict per leaf with exactly the keys `path`, `shape`, "
                "`dtype`, `nbytes`, `aliased` and `output`.",
                ("test_format",)),
    Requirement("leaf-descriptions", "each leaf described, in jax.tree order",
                "Each entry gives its leaf's `keystr` path, shape, `str(dtype)` and `nbytes`, "
                "in `jax.tree` order.",
                ("test_leaf_descriptions",)),
    Requirement("aliased-from-map", "aliased: read from input_output_alias",
                "`aliased` is `True` exactly for the leaves whose parameter number appears in "
                "the compiled module's `input_output_alias`, read from the module, not "
                "predicted from shapes, sizes or order.",
                ("test_aliased_flags",)),
    Requirement("output-from-map", "output: read from the alias entry's output index",
                "`output` is the path of the output leaf numbered by the leaf's alias entry "
                "(`None` when not aliased), read from the module, not predicted.",
                ("test_outputs",)),
    Requirement("aliased-bytes", "aliased_bytes equals alias_size_in_bytes",
                "`aliased_bytes` is the bytes of the aliased leaves and equals "
                "`compiled.memory_analysis().alias_size_in_bytes`.",
                ("test_aliased_bytes",)),
    Requirement("total-bytes", "total_bytes: every leaf's bytes",
                "`total_bytes` is the bytes of all leaves of the state.",
                ("test_total_bytes",)),
    Requirement("empty-tree", "an empty tree",
                "An empty tree gives `{\"leaves\": [], \"aliased_bytes\": 0, \"total_bytes\": 0}` "
                "(Python ints, or NumPy integer scalars).",
                ("test_empty_tree",)),
)
