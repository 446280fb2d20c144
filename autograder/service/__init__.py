"""The grading service: learners submit a notebook over HTTP and read feedback.

``python -m autograder.service`` (started by ``make serve``) runs it;
``python -m autograder.service <command>`` runs one of its commands. Its rooms:

- :mod:`~autograder.service.api`: the HTTP API (tornado), the one room that answers
  HTTP; its replies carry results in Gradescope's format
  (:meth:`~autograder.results.GradingResult.to_gradescope`);
- :mod:`~autograder.service.store`: the database of submissions (SQLite or PostgreSQL)
  and results (every submission is committed before it is acknowledged), the one room
  that runs SQL, with its migrations;
- :mod:`~autograder.service.grading`: grading threads that grade queued
  submissions with :mod:`autograder.pipeline` (the learner's code sandboxed) and
  store each typed result (:meth:`autograder.results.GradingResult.to_record`);
- :mod:`~autograder.service.gradebook`: mirrors results into nbgrader's gradebook so
  formgrader and ``nbgrader export`` see the same grades, and decides which is a grade;
- :mod:`~autograder.service.lms`: grades back to an LMS (LTI 1.3);
- :mod:`~autograder.service.class_views`: the class as instructors read it;
- :mod:`~autograder.service.commands`: the instructors' and deployments' commands.

The API is documented in ``autograder/SERVICE.md``; every module is named in
``docs/layout.md``.
"""
