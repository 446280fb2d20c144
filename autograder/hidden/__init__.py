"""Hidden tests: pytest modules that judge observations in the grader's process.

Never shipped to learners, never imported by learner processes (when grading
runs as root this folder is made readable by root only). One module per
exercise, named ``test_<exercise>.py``; each test takes the ``obs`` fixture
(the probe observations) and the ``seed`` fixture, and fails through
:func:`autograder.feedback.fail` so that feedback is plain words, not source.
"""
