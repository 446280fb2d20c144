"""Run the hidden tests under pytest, on saved observations.

    AUTOGRADER_OBSERVATIONS=obs.json pytest autograder/exercises/<exercise>/hidden/tests.py

``obs.json`` holds ``{"obs": <probe observations>, "seed": <int>}``, as the
probes return them. The grader itself calls the same test functions directly
(:mod:`autograder.judge`).
"""
import json
import os

import pytest


@pytest.fixture(scope="session")
def _saved():
    path = os.environ.get("AUTOGRADER_OBSERVATIONS")
    if not path:
        pytest.skip("set AUTOGRADER_OBSERVATIONS to a saved observations file")
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


@pytest.fixture
def obs(_saved):
    return _saved["obs"]


@pytest.fixture
def seed(_saved):
    return _saved["seed"]
