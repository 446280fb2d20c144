"""scripts/mutation_checks.py still applies: each mutation's code to break is in its
file exactly once, and each test it names exists (a refactor that moved either would
leave the check reporting "no longer in" only when someone runs it, tens of minutes later)."""
from __future__ import annotations

import pytest

from scripts import mutation_checks as checks
from tests.course import REPO


def _test_exists(node_id):
    path, _, name = node_id.partition("::")
    source = (REPO / path).read_text(encoding="utf-8") if (REPO / path).is_file() else None
    return source is not None and (not name or f"def {name.split('[')[0]}(" in source)


@pytest.mark.parametrize("name", sorted(checks.MUTATIONS))
def test_each_mutation_still_finds_its_code_and_tests(name):
    _what, rel, edits, tests = checks.MUTATIONS[name]
    text = (REPO / rel).read_text(encoding="utf-8")
    assert all(text.count(old) == 1 for old, _new in edits), f"{name}: its code moved out of {rel}"
    assert all(map(_test_exists, tests)), f"{name}: a test it names is gone: {tests}"


@pytest.mark.parametrize("name", sorted(checks.ORDER))
def test_each_order_check_names_existing_tests(name):
    _what, tests = checks.ORDER[name]
    assert all(_test_exists(t) for t in tests if not t.startswith("-")), name
