"""The exercise ``update_with_donate``: its metadata (see :mod:`autograder.exercises`)."""
TITLE = "Add a delta to a state in a jitted helper that donates the state"
POINTS = 10
PRELOAD = ()  # imported once by the zygote (autograder.sandbox.learner.preload)
