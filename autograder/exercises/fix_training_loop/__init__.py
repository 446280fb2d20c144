"""The exercise ``fix_training_loop``: its metadata (see :mod:`autograder.exercises`)."""
TITLE = "Fix a training loop that reads donated buffers"
POINTS = 10
PRELOAD = ("optax",)  # imported once by the zygote (autograder.sandbox.learner.preload)
