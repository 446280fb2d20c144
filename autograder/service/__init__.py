"""The grading service: learners submit a notebook over HTTP and read feedback.

``python -m autograder.service`` (started by ``make serve``) runs it. Modules:

- :mod:`~autograder.service.store`: the database of submissions (SQLite or PostgreSQL) and
  results (every submission is committed before it is acknowledged);
- :mod:`~autograder.service.grading`: grading threads that grade queued
  submissions with :mod:`autograder.pipeline` (the learner's code sandboxed) and
  store each typed result (:meth:`autograder.results.GradingResult.to_record`);
- :mod:`~autograder.service.gradebook.mirror`: mirrors results into nbgrader's
  gradebook so formgrader and ``nbgrader export`` see the same grades;
- :mod:`~autograder.service.api.app`: the HTTP API (tornado); its replies carry
  results in Gradescope's format (:meth:`~autograder.results.GradingResult.to_gradescope`).

The API is documented in ``autograder/SERVICE.md``.
"""
