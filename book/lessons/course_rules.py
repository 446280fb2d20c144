"""The rules a lesson asserts, as data.

A lesson states each rule it checks in a hidden cell through :func:`rule`, which
asserts it and records it with the JAX version it held on. The lesson's last
hidden cell calls :func:`publish`, which glues the records (``rules_records``,
JSON text) and the page's list of what it asserts (``rules_asserted``, Markdown) into
the executed notebook, so the list comes from the records, also when myst-nb
serves the page from its execution cache. ``book/_ext/rules_site.py`` collects
the records of every page into the site's ``_static/rules.json``.

This file sits beside the lessons because the lessons' kernels start in this
folder (at build, and in the learner's workspace, where the build copies it).
"""

from __future__ import annotations

import json
import os
import re

# id -> {"id", "statement", "jax", "held"}, in the order the page first asserted them
_RECORDS: dict[str, dict] = {}
_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
RECORDS_KEY = "rules_records"
# Set by the drift report (scripts/drift.py): a rule that does not hold on another JAX
# is recorded with held False instead of stopping the lesson, so every rule is reported.
KEEP_GOING = "COURSE_RULES_KEEP_GOING"
LIST_KEY = "rules_asserted"


def laid_out_bytes(tree) -> int:
    """The bytes a compiled call gives ``tree`` (a pytree of arrays) as its argument,
    as ``memory_analysis().argument_size_in_bytes`` of an identity compiled on the
    default device reports them: the leaves' ``nbytes`` on CPU; a TPU pads each array to
    its tiled layout (an f32[4] takes 512 bytes there; ``book/drift_report_tpu.json``).
    The lessons compare aliased bytes with this, not with ``nbytes``."""
    import jax

    return jax.jit(lambda t: t).lower(tree).compile().memory_analysis().argument_size_in_bytes


class RuleBroken(AssertionError):
    """A rule's condition was false on this JAX: the page would state something untrue."""


def _jax_version() -> str:
    import jax

    return jax.__version__


def rule(rule_id: str, statement: str, condition) -> None:
    """Assert one rule the page states, and record it.

    ``rule_id``: lowercase words joined by ``-``, one per rule on a page;
    ``statement``: the rule as one sentence, as the page's list shows it;
    ``condition``: anything ``bool()`` accepts (a Python or NumPy/JAX scalar bool),
    computed by the cell on this JAX.

    Raises :class:`RuleBroken` when ``condition`` is false (unless the environment
    sets :data:`KEEP_GOING`: then the record says ``held: False``), and ``ValueError``
    when ``rule_id`` is malformed or was used before with another statement.
    """
    if not _ID.match(rule_id):
        raise ValueError(f"rule id {rule_id!r}: lowercase words joined by '-'")
    known = _RECORDS.get(rule_id)
    if known is not None and known["statement"] != statement:
        raise ValueError(f"rule id {rule_id!r} is already used for: {known['statement']}")
    held = bool(condition)
    if not held and not os.environ.get(KEEP_GOING):
        raise RuleBroken(f"{rule_id}: {statement}")
    known = _RECORDS.setdefault(rule_id, {"id": rule_id, "statement": statement,
                                          "jax": _jax_version(), "held": held})
    known["held"] = known["held"] and held


def records() -> list[dict]:
    """Every rule asserted so far in this kernel, in first-asserted order (copies)."""
    return [dict(r) for r in _RECORDS.values()]


def render(rows: list[dict]) -> str:
    """The page's list of what it asserts, as MyST Markdown: one bullet per record,
    its id in code and its statement. Raises ValueError on an empty list (a page
    that asserts nothing has no list to show)."""
    if not rows:
        raise ValueError("no rule was asserted on this page")
    versions = sorted({r["jax"] for r in rows})
    lines = [f"- `{r['id']}`: {r['statement']}" for r in rows]
    return "\n".join(lines) + f"\n\nEach held on JAX {', '.join(versions)} when this page was built.\n"


class _Json:
    """Records displayed as JSON text: nbformat lets a glued (prefixed) output hold
    strings only, so they travel as ``text/plain``."""

    def __init__(self, rows):
        self.rows = rows

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": json.dumps(self.rows)}


def publish() -> None:
    """Glue this page's records and its rendered list (call once, in the last cell)."""
    from IPython.display import Markdown
    from myst_nb import glue

    rows = records()
    glue(LIST_KEY, Markdown(render(rows)), display=False)
    glue(RECORDS_KEY, _Json(rows), display=False)
