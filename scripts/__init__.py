"""The course's scripts: ``make serve``'s and ``make hub``'s launchers, the learner
JupyterLab, the drift report, the mutation checks.

``make`` runs them as files (``python scripts/serve.py``); they and the tests import
one another by name (``from scripts import stopping``), from the checkout that
``make venv`` installs editable (pyproject.toml).
"""
