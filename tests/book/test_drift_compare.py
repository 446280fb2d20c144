"""The drift report's comparison (scripts/drift_compare.py) on small observations.
Fast: no venv, no lesson is executed (the command itself is `make drift`)."""
from __future__ import annotations

from scripts import drift_compare

PAGE = "book/lessons/x"
OLD = {"jax": "0.12.0", "python": "3.12.3",
       "rules": [{"id": "a", "statement": "A", "page": PAGE, "jax": "0.12.0"},
                 {"id": "b", "statement": "B", "page": PAGE, "jax": "0.12.0"},
                 {"id": "c", "statement": "C", "page": PAGE, "jax": "0.12.0"}],
       "glue": {PAGE: {"n": "16", "m": "True", "late": "4"}},
       "samples": {"ex/reference": {"score": 10, "failed": []},
                   "ex/broken": {"score": 7, "failed": ["test_y", "test_x"]},
                   "ex/misnamed": {"score": 0, "failed": "all"},
                   "ex/timeout": {"score": 3, "failed": ["test_x"]}}}
NEW = {"jax": "0.10.2", "python": "3.11.2",
       "rules": [{"id": "a", "statement": "A", "page": PAGE, "jax": "0.10.2", "held": True},
                 {"id": "b", "statement": "B", "page": PAGE, "jax": "0.10.2", "held": False}],
       "glue": {PAGE: {"n": "16", "m": "False"}},
       "errors": {PAGE: ["cell 9: ValueError: no such option"]},
       "samples": {"ex/reference": {"score": 10, "failed": []},
                   "ex/broken": {"score": 7, "failed": ["test_x", "test_y"]},
                   "ex/misnamed": {"score": 0, "failed": ["test_x", "test_y"]},
                   "ex/timeout": {"error": "timed out after 60 s"}}}


def _status(rows):
    return [(r["kind"], r["id"], r["status"]) for r in rows]


def test_rules_same_changed_or_failed_with_the_page_error():
    rows = drift_compare.compare_rules(OLD, NEW)
    assert _status(rows) == [("rule", "a", "same"), ("rule", "b", "changed"), ("rule", "c", "failed")]
    assert (rows[1]["old"], rows[1]["new"]) == ("holds", "does not hold")
    assert rows[2]["error"] == "cell 9: ValueError: no such option"


def test_glued_values_compared_as_the_page_shows_them():
    rows = drift_compare.compare_glue(OLD, NEW)
    assert _status(rows) == [("glue", "late", "failed"), ("glue", "m", "changed"), ("glue", "n", "same")]
    assert (rows[1]["old"], rows[1]["new"]) == ("True", "False")


def test_samples_by_score_and_failed_checks_in_any_order():
    rows = drift_compare.compare_samples(OLD, NEW)
    assert _status(rows) == [("sample", "broken", "same"), ("sample", "misnamed", "same"),
                             ("sample", "reference", "same"), ("sample", "timeout", "failed")]
    assert rows[3]["error"] == "timed out after 60 s"
    changed = drift_compare.compare_samples(OLD, {"samples": {"ex/reference": {"score": 8, "failed": ["t"]}}})
    assert changed[2]["status"] == "changed" and changed[2]["new"] == {"score": 8, "failed": ["t"]}


def test_the_printed_report_and_the_site_sentence():
    rows = drift_compare.compare(OLD, NEW)
    lines = drift_compare.format_report(rows, "0.12.0", "0.10.2")
    assert lines[0] == "drift report: JAX 0.12.0 (the course) against JAX 0.10.2"
    assert f"rule   {PAGE} b: changed (holds -> does not hold)" in lines
    assert "sample ex timeout: failed (timed out after 60 s)" in lines
    assert lines[-1] == "5 same, 2 changed, 3 failed"
    report = {"old_jax": "0.12.0", "new_jax": "0.10.2", "python": "3.11.2", "date": "2026-12-02", "rows": rows}
    assert drift_compare.page_summary(report, PAGE) == (
        "The drift report of 2026-12-02 also ran them on JAX 0.10.2 (Python 3.11.2): 1 of 3 held; not: b, c.")
    assert drift_compare.page_summary(report, "book/lessons/other") == ""


def test_a_glued_version_is_shown_but_is_no_drift():
    old = dict(OLD, glue={PAGE: {"built_jax": "'0.12.0'", "built_python": "'3.12.3'"}}, rules=[],
               samples={})
    new = dict(NEW, glue={PAGE: {"built_jax": "'0.10.2'", "built_python": "'3.11.2'"}}, rules=[],
               samples={}, errors={})
    rows = drift_compare.compare(old, new)
    assert [r["status"] for r in rows] == [drift_compare.VERSION] * 2
    assert not drift_compare.drifted(rows)
    assert drift_compare.drifted(drift_compare.compare(OLD, NEW))


def test_a_rule_the_prose_names_says_so_when_it_drifts():
    old = dict(OLD, rules=[dict(OLD["rules"][0], prose=[PAGE]), dict(OLD["rules"][1], prose=[PAGE, "book/intro"])])
    rows = drift_compare.compare_rules(old, NEW)
    assert [r["prose"] for r in rows] == [[PAGE], [PAGE, "book/intro"]]
    lines = drift_compare.format_report(rows, "0.12.0", "0.10.2")
    assert f"rule   {PAGE} a: same" in lines  # a rule that held is not flagged
    assert (f"rule   {PAGE} b: changed (holds -> does not hold); the prose of {PAGE}, book/intro "
            "relies on it") in lines


def test_a_run_with_only_known_differences_succeeds_and_says_so():
    rows = drift_compare.compare_rules(OLD, NEW)[:2]  # a same, b changed
    table = {"0.10.2": {("rule", PAGE, "b", "changed"): "b is known to differ there"}}
    status, said = drift_compare.verdict(rows, "0.10.2", table)
    assert status == 0 and said.startswith("drift: succeeded with 1 known difference(s) on JAX 0.10.2")
    assert drift_compare.verdict(rows, "0.10.3", table)[0] == 1  # known of 0.10.2 only
    failed = [dict(rows[1], status="failed")]  # the same rule failing another way is not known
    assert drift_compare.verdict(failed, "0.10.2", table) == (
        1, "drift: FAILED: 1 unknown difference(s) on JAX 0.10.2 (and 0 known)")
    everything = drift_compare.compare_rules(OLD, NEW)  # c failed: unknown
    assert drift_compare.verdict(everything, "0.10.2", table)[0] == 1
    assert drift_compare.verdict(rows[:1], "0.10.2", table) == (
        0, "drift: succeeded: nothing changed or failed on JAX 0.10.2")


def test_the_committed_report_has_no_unknown_difference():
    """What make drift JAX=<its JAX> found last is all known (drift_compare.KNOWN, with
    why), so that run exits 0; each known difference is printed as known."""
    import json

    from tests.course import REPO

    report = json.loads((REPO / "book" / "drift_report.json").read_text())
    rows = report["rows"]
    assert drift_compare.unknown_drift(rows, report["new_jax"]) == []
    assert drift_compare.verdict(rows, report["new_jax"])[0] == 0
    lines = drift_compare.format_report(rows, report["old_jax"], report["new_jax"])
    for row in rows:
        if row["status"] in ("changed", "failed"):
            assert any(line.startswith(f"{row['kind']:6} {row['where']} {row['id']}: ") and "; known: " in line
                       for line in lines), row


# ------------------------------------------------------------ a lesson split into pages
def test_a_split_page_hands_each_row_to_the_page_that_now_names_it():
    old = "book/lessons/sharded_state"
    moved = {"device-put-reorder-consumes": "book/lessons/sharded_device_put",
             "pmap-keyword-not-donated": "book/lessons/sharded_pmap",
             "auto-mesh-drops-silently": "book/lessons/sharded_auto_axes",
             "shard-map-aliases-per-device": "book/lessons/sharded_pmap",
             "opt-alias-is-state": "book/lessons/sharded_optax",
             "alias-is-per-device": old}
    for rule_id, page in moved.items():
        assert drift_compare.current_page({"kind": "rule", "where": old, "id": rule_id}) == page
    glued = {"kind": "glue", "where": old, "id": "opt_alias_bytes"}
    assert drift_compare.current_page(glued) == "book/lessons/sharded_optax"
    # a value the old page still glues, though a new page glues it too, stays
    version = {"kind": "glue", "where": old, "id": "jax_version"}
    assert drift_compare.current_page(version) == old
    # the same id on a page that was not split stays there
    other = {"kind": "rule", "where": "book/lessons/lifetimes", "id": "cpu-no-memory-stats"}
    assert drift_compare.current_page(other) == "book/lessons/lifetimes"


def test_every_row_of_the_committed_reports_maps_to_a_page_that_names_it():
    """No rule or glued value of a committed drift report (the last one, a TPU's or a
    GPU's) is lost when pages are split or renamed: each row's page, read through
    current_page, still asserts the rule or glues the value under the same id, until the
    report is made again."""
    import json

    from tests.course import REPO

    for name in ("drift_report.json", "drift_report_tpu.json", "drift_report_gpu.json"):
        path = REPO / "book" / name
        if not path.is_file():
            continue
        lost = [(r["where"], r["id"]) for r in json.loads(path.read_text())["rows"]
                if r["kind"] in ("rule", "glue") and r.get("old") != "not asserted"
                and r["id"] not in drift_compare.named_in_source(drift_compare.current_page(r), r["kind"])]
        assert not lost, f"{name}: rows whose page no longer names them: {lost}"
