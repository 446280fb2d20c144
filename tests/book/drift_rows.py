"""Rows of a drift report as ``scripts/drift.py`` writes them, for the accelerator
reports' tests (tests/book/test_drift_gpu.py, test_drift_tpu.py)."""

PAGE = "book/lessons/state_tree"


def rule_row(rule_id, status, old="holds", new="holds", error=None, where=PAGE):
    """One rule's row (``status``: same, changed or failed) on the page ``where``."""
    return {"kind": "rule", "where": where, "id": rule_id, "status": status,
            "old": old, "new": new, "error": error, "prose": []}
