"""The exercise ``silent_donation``: its metadata (see :mod:`autograder.exercises`)."""
TITLE = "Repair four steps whose donation silently does nothing"
POINTS = 10
PRELOAD = ()  # imported once by the zygote (autograder.sandbox.learner.preload)
