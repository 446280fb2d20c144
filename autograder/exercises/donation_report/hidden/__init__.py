"""Private to the grader: the hidden tests (``tests.py``) and sample answers (``samples/``).

Learner code never reads this folder: grading as root makes it root-only and
covers it with an empty mount in the learner's process (autograder.sandbox).
"""
