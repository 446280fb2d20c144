"""The exercise ``donation_report``: its metadata (see :mod:`autograder.exercises`)."""
TITLE = "Report, leaf by leaf, which donated buffers the compiler reuses"
POINTS = 10
PRELOAD = ()  # imported once by the zygote (autograder.sandbox.learner.preload)
