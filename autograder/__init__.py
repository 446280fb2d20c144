"""Autograder for the JAX buffer donation course.

``python -m autograder PATH... --out DIR`` grades notebooks, nbgrader
``submitted/`` trees or ``.py`` files and writes Gradescope ``results.json``
files plus ``summary.csv``. The order of the steps is in
:mod:`autograder.pipeline`; :mod:`autograder.nbgrader_bridge` runs the same
hidden tests inside ``nbgrader autograde``.
"""
