"""Speed against baselines (README.md here). Each is run as a file
(``.venv/bin/python benchmarks/run.py``) and imports the others and the tests'
helpers by name (``benchmarks.run``, ``tests.grading.helpers``)."""
