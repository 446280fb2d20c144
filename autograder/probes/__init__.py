"""Probes: trusted code that runs *inside* the learner's process.

A probe calls the learner's functions on inputs drawn from a seed and records
what happened (values, dtypes, ``is_deleted()`` flags, trace and compile
counts) as plain data. Probes never decide a score and hold no expected
values: the hidden tests in :mod:`autograder.hidden` compare observations with
expectations in the grader's own process.
"""
