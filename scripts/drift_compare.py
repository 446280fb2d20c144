"""The drift report's comparison: what the course observed on its own JAX against
what another JAX gives, rule by rule, glued value by glued value, sample by sample.

An *observation* is a dict (JSON) with:

* ``jax``, ``python``: the versions it was made on;
* ``rules``: ``[{"id", "statement", "page", "jax", "held"}]`` (``held`` missing: True,
  as in a normal build, where a rule that does not hold stops the build);
* ``glue``: ``{page: {key: text}}``, each glued value as ``{glue:text}`` shows it;
* ``errors``: ``{page: [message]}``, cells that raised where no error was expected;
* ``samples``: ``{"<exercise>/<sample>": {"score": int, "failed": [test names] or "all"}``
  or ``{"error": message}}``.

:func:`compare` gives one row per rule, value and sample; standard library only, so
the command and its tests run anywhere.
"""
from __future__ import annotations

import re
from functools import lru_cache

from autograder.defaults import CHECKOUT

SAME, CHANGED, FAILED = "same", "changed", "failed"
# A glued value that is the version itself (the JAX or Python a page ran on): it must
# differ, so it is shown but is no drift.
VERSION = "version"


def _row(kind, where, name, status, old=None, new=None, error=None):
    return {"kind": kind, "where": where, "id": name, "status": status,
            "old": old, "new": new, "error": error}


def _page_error(new, page):
    errors = new.get("errors", {}).get(page) or []
    return errors[0] if errors else "not reached on this JAX (its cell did not run)"


def _held(record):
    return "holds" if record.get("held", True) else "does not hold"


def compare_rules(old, new):
    """One row per rule of ``old`` (then any rule only ``new`` asserts)."""
    theirs = {(r["page"], r["id"]): r for r in new.get("rules", [])}
    rows = []
    for mine in old.get("rules", []):
        key = (mine["page"], mine["id"])
        other = theirs.pop(key, None)
        if other is None:
            rows.append(_row("rule", *key, FAILED, _held(mine), error=_page_error(new, mine["page"])))
        else:
            status = SAME if _held(mine) == _held(other) else CHANGED
            rows.append(_row("rule", *key, status, _held(mine), _held(other)))
        rows[-1]["prose"] = mine.get("prose", [])  # the pages whose sentences name it
    rows += [_row("rule", *key, CHANGED, "not asserted", _held(r)) for key, r in theirs.items()]
    return rows


def compare_glue(old, new):
    """One row per glued value of ``old``."""
    rows = []
    for page, values in sorted(old.get("glue", {}).items()):
        theirs = new.get("glue", {}).get(page, {})
        for key, text in sorted(values.items()):
            if key not in theirs:
                rows.append(_row("glue", page, key, FAILED, text, error=_page_error(new, page)))
            else:
                rows.append(_row("glue", page, key, _glue_status(old, new, text, theirs[key]),
                                 text, theirs[key]))
    return rows


def _glue_status(old, new, mine, theirs):
    if mine == theirs:
        return SAME
    versions = [(old.get(k), new.get(k)) for k in ("jax", "python")]
    unquoted = (mine.strip("'\""), theirs.strip("'\""))  # a glued str shows as its repr
    return VERSION if unquoted in versions else CHANGED


def drifted(rows):
    """Whether any row shows drift: a rule, value or sample that changed or failed."""
    return any(r["status"] in (CHANGED, FAILED) for r in rows)


# Differences a run on another JAX is known to find, each with why; keyed by that JAX
# release, then by (kind, where, id, status) of the row. A run that finds only these
# succeeded: make drift says so and exits 0. Any other change or failure fails it.
KNOWN = {
    "0.10.2": {
        ("rule", "book/lessons/sharded_optax", "integer-labels-need-out-sharding", CHANGED):
            "JAX 0.10.2 differentiates a loss on batch-split integer labels without the "
            "ShardingTypeError the course's JAX raises; the lesson states it of the course's JAX",
    },
}


def known(row, new_jax, table=None):
    """Why ``row`` (a report row) is a known difference on JAX ``new_jax`` (str), or None;
    keyed by the page that asserts the rule now (:func:`current_page`), so a known row of a
    report made before a page was split stays known."""
    table = KNOWN if table is None else table
    return table.get(new_jax, {}).get((row["kind"], current_page(row), row["id"], row["status"]))


def unknown_drift(rows, new_jax, table=None):
    """The rows that changed or failed and are not :func:`known` (a list of rows)."""
    return [r for r in rows if r["status"] in (CHANGED, FAILED) and not known(r, new_jax, table)]


def verdict(rows, new_jax, table=None):
    """``(exit status, sentence)`` of a run: 0 when nothing changed or failed but the
    known differences (the sentence says how many), else 1 naming how many others."""
    others = unknown_drift(rows, new_jax, table)
    expected = sum(r["status"] in (CHANGED, FAILED) for r in rows) - len(others)
    if others:
        return 1, (f"drift: FAILED: {len(others)} unknown difference(s) on JAX {new_jax} "
                   f"(and {expected} known)")
    if expected:
        return 0, (f"drift: succeeded with {expected} known difference(s) on JAX {new_jax} "
                   "(marked 'known' above); nothing else changed or failed")
    return 0, f"drift: succeeded: nothing changed or failed on JAX {new_jax}"


def _grade(result):
    failed = result.get("failed")
    failed = "all" if failed == "all" else sorted(failed or [])
    return {"score": result.get("score"), "failed": failed}


def compare_samples(old, new):
    """One row per sample answer of ``old``: its score and failed checks; none where
    ``new`` graded no samples at all (a run on a device with ``--no-samples``)."""
    rows = []
    if "samples" not in new:
        return rows
    for name, mine in sorted(old.get("samples", {}).items()):
        exercise, _, sample = name.partition("/")
        other = new.get("samples", {}).get(name)
        if other is None or "error" in other:
            error = (other or {}).get("error", "not graded on this JAX")
            rows.append(_row("sample", exercise, sample, FAILED, _grade(mine), error=error))
            continue
        a, b = _grade(mine), _grade(other)
        # "all" (nothing could be graded) has no list to compare: the score says it
        same = a["score"] == b["score"] and ("all" in (a["failed"], b["failed"]) or a == b)
        rows.append(_row("sample", exercise, sample, SAME if same else CHANGED, a, b))
    return rows


def compare(old, new):
    """Every row of the report: rules, then glued values, then samples."""
    return compare_rules(old, new) + compare_glue(old, new) + compare_samples(old, new)


def _show(value):
    if isinstance(value, dict):
        failed = value["failed"]
        return f"{value['score']} points, failed {failed if failed == 'all' else ', '.join(failed) or 'none'}"
    return str(value)


def format_report(rows, old_jax, new_jax):
    """The report as lines of text: a header, one line per row (a :func:`known` one says
    so, and why), the totals."""
    lines = [f"drift report: JAX {old_jax} (the course) against JAX {new_jax}"]
    for r in rows:
        line = f"{r['kind']:6} {r['where']} {r['id']}: {r['status']}"
        if r["status"] in (CHANGED, VERSION):
            line += f" ({_show(r['old'])} -> {_show(r['new'])})"
        elif r["status"] == FAILED:
            line += f" ({r['error']})"
        if r.get("prose") and r["status"] != SAME:
            line += f"; the prose of {', '.join(r['prose'])} relies on it"
        if known(r, new_jax):
            line += f"; known: {known(r, new_jax)}"
        lines.append(line)
    counts = {s: sum(r["status"] == s for r in rows) for s in (SAME, CHANGED, FAILED)}
    total = ", ".join(f"{n} {s}" for s, n in counts.items())
    versions = sum(r["status"] == VERSION for r in rows)
    lines.append(total + (f", {versions} version numbers (glued as values: expected to differ)"
                          if versions else ""))
    return lines


# What a report's ``platform`` (``jax.default_backend()`` where it ran) says of the device,
# and how a page names it; a report without one, or "cpu", ran on the CPU.
ACCELERATORS = {"gpu": "gpu", "cuda": "gpu", "rocm": "gpu", "tpu": "tpu"}
A_DEVICE = {"gpu": "a GPU", "tpu": "a TPU"}


def accelerator(report):
    """"gpu" or "tpu" where a saved report was made on one, else None (the CPU)."""
    return ACCELERATORS.get(report.get("platform", "cpu"))


def on_gpu(report):
    """Whether a saved report was made on a GPU (``platform``: what
    ``jax.default_backend()`` said there; a report without one ran on the CPU)."""
    return accelerator(report) == "gpu"


# Lessons split into several pages since a report was made: the old page -> the pages that
# took some of its rules and glued values, under the same ids. A report made before the
# split names the old page in every row; :func:`current_page` gives each row the page that
# asserts (or glues) it now.
SPLIT_PAGES = {"book/lessons/sharded_state": ("book/lessons/sharded_auto_axes",
                                              "book/lessons/sharded_pmap",
                                              "book/lessons/sharded_device_put",
                                              "book/lessons/sharded_optax")}
# how a page's source names a rule it asserts and a value it glues, by row kind
NAMED_IN_SOURCE = {"rule": re.compile(r"""\brule\(\s*["']([a-z0-9-]+)["']"""),
                   "glue": re.compile(r"""\bglue\(\s*["']([\w-]+)["']""")}


@lru_cache(None)
def named_in_source(page, kind):
    """The ids of ``kind`` ("rule" or "glue") page ``page`` (a docname) asserts or glues,
    read from its MyST source; an empty set when the page has no source here."""
    source = CHECKOUT / f"{page}.md"
    if kind not in NAMED_IN_SOURCE or not source.is_file():
        return frozenset()
    return frozenset(NAMED_IN_SOURCE[kind].findall(source.read_text(encoding="utf-8")))


def current_page(row):
    """The page that holds report row ``row``'s rule or glued value now: its ``where``,
    or, for a page since split (:data:`SPLIT_PAGES`) whose source no longer names the id,
    the new page whose source does (a value such as ``jax_version`` that the old page and a
    new one both glue stays with the old page)."""
    if row["where"] in SPLIT_PAGES and row["id"] in named_in_source(row["where"], row["kind"]):
        return row["where"]
    for page in SPLIT_PAGES.get(row["where"], ()):
        if row["id"] in named_in_source(page, row["kind"]):
            return page
    return row["where"]


def page_summary(report, page):
    """One sentence for lesson ``page`` from a saved report (``{"old_jax", "new_jax",
    "python", "date", "rows"}``, and ``platform``, ``device_kind`` where it recorded
    them): on which JAX, and on an accelerator which device, its rules were checked, and
    how they fared. ``""`` when the report has no rule of the page."""
    rules = [r for r in report["rows"] if r["kind"] == "rule" and current_page(r) == page]
    if not rules:
        return ""
    held = sum(r["status"] == SAME and r["old"] == "holds" for r in rules)
    others = [r["id"] for r in rules if not (r["status"] == SAME and r["old"] == "holds")]
    if accelerator(report):
        return _accelerator_summary(report, rules, held)
    text = (f"The drift report of {report['date']} also ran them on JAX {report['new_jax']} "
            f"(Python {report['python']}): {held} of {len(rules)} held")
    return text + (f"; not: {', '.join(others)}." if others else ".")


def _accelerator_summary(report, rules, held):
    """The sentence of a report made on a GPU or a TPU: which rules held there, which did
    not, and which were not reached (their cell did not run there); and, where it ran on
    another JAX than the course's (a machine's own), that it did."""
    device = report.get("device_kind") or report["platform"]
    jax = f"JAX {report['new_jax']}"
    if report["new_jax"] != report["old_jax"]:
        jax += f" (the machine's own, not the course's pinned {report['old_jax']})"
    text = (f"On {A_DEVICE[accelerator(report)]} ({device}), the drift report of {report['date']} "
            f"ran them on {jax}: {held} of {len(rules)} held there")
    broke = [r["id"] for r in rules if r["status"] == CHANGED]
    unreached = [r["id"] for r in rules if r["status"] == FAILED]
    parts = ([f"did not hold: {', '.join(broke)}"] if broke else []) + (
        [f"not reached: {', '.join(unreached)}"] if unreached else [])
    return text + (f"; {'; '.join(parts)}." if parts else ".")
