"""Sphinx extension: the rules the lessons assert, collected from their records.

Each lesson asserts its rules through ``book/lessons/course_rules.py`` and glues
their records (``rules_records``) and its list of them (``rules_asserted``); this
extension, after the build, writes every page's records into one artefact,
``_static/rules.json`` (``[{"id", "statement", "page", "jax", "held", "prose"}]``, in page
order; ``prose``: the pages whose sentences name the rule), and
copies the helper beside the lesson notebooks so that they run in JupyterLab too.

The build fails when a lesson published no records or its page does not show the
list, so no lesson can state rules that were not checked by the helper.

Prose is bound to the rules too: ``{rule}`id``` after a sentence names the rule that
checks it (shown as a small check mark linking to the item of the list that states it); the build fails when no page
asserted that id, or when it did not hold. ``{explanation}`text``` and an
``{explanation}`` block mark what no check can carry (shown as an explanation);
tests/book/test_prose_claims.py holds every behaviour sentence to one of the two.

Under each list it adds, from the last drift report (``book/drift_report.json``,
committed by ``make drift``), on which other JAX the page's rules were checked and
how many held there; and, where a run on an accelerator was made
(``book/drift_report_gpu.json``, written by ``make drift`` on a machine with a CUDA GPU;
``book/drift_report_tpu.json``, from a run on a TPU, see docs/testing.md), on which
device and which of the page's rules held, did not hold, or were not reached there.
Without those files the pages say nothing of a GPU or a TPU.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

from autograder.defaults import CHECKOUT as REPO
from scripts import drift_compare

HELPER = REPO / "book" / "lessons" / "course_rules.py"
LESSON_PREFIX = "book/lessons/"
LANDING = "book/intro"  # the landing page asserts its rules the same way


def asserts_rules(docname: str) -> bool:
    return docname.startswith(LESSON_PREFIX) or docname == LANDING
ARTEFACT = "_static/rules.json"
NOTEBOOK_DIR = "_notebooks/lessons"  # where course_run.py writes the lesson notebooks
LIST_DIRECTIVE = "```{glue:md} rules_asserted"
DRIFT_REPORT = REPO / "book" / "drift_report.json"
GPU_DRIFT_REPORT = REPO / "book" / "drift_report_gpu.json"  # only where a GPU run was made
TPU_DRIFT_REPORT = REPO / "book" / "drift_report_tpu.json"  # only where a TPU run was made
SECTION_ID = "what-this-page-asserts"
EXPLANATION_MARK = "explanation, not checked"
EXPLANATION_TITLE = "Explanation: why it happens, which no check on this page can carry"


def page_records(glue: dict, docname: str) -> list[dict]:
    """The records lesson ``docname`` glued (``glue``: its myst-nb glue cache), each
    with its ``page``. Raises ExtensionError when there are none."""
    output = glue.get("rules_records")
    text = (output or {}).get("data", {}).get("text/plain")
    rows = json.loads(text) if text else None
    if not rows:
        raise ExtensionError(f"{docname}: no rule records glued; end the lesson with "
                             "course_rules.publish() and state each rule through rule()")
    return [dict(row, page=docname) for row in rows]


def check_source(app: Sphinx, docname: str, source: list[str]) -> None:
    """A lesson must show the list rendered from its records (not one typed by hand)."""
    if not asserts_rules(docname):
        return
    if LIST_DIRECTIVE not in source[0]:
        raise ExtensionError(f"{docname}: the page does not show its rules "
                             f"({LIST_DIRECTIVE!r} ... ```)")


def reports_stamp() -> dict[str, str | None]:
    """Each drift report's content hash, None where there is none (an accelerator's)."""
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
            for path, _ in drift_reports()}


def pages_of_changed_reports(app: Sphinx, env, added, changed, removed) -> list[str]:
    """Every page that asserts rules, to be read again when a drift report appeared,
    changed or went (a dependency on a file that is absent would re-read them on every
    build, so the reports are compared here instead)."""
    stamp = reports_stamp()
    if getattr(env, "course_drift_reports", None) == stamp:
        return []
    env.course_drift_reports = stamp
    return sorted(d for d in env.found_docs if asserts_rules(d) and d not in added | changed)


def drift_reports() -> list[tuple[Path, list[str]]]:
    """Each drift report a page may speak of, with its paragraph's classes: the last one
    (another JAX), then the GPU run's and the TPU run's."""
    return [(DRIFT_REPORT, ["course-drift"]), (GPU_DRIFT_REPORT, ["course-drift", "course-drift-gpu"]),
            (TPU_DRIFT_REPORT, ["course-drift", "course-drift-tpu"])]


def drift_sentences(docname: str) -> list[tuple[str, list[str]]]:
    """(sentence, classes) for ``docname`` from each drift report there is: the last
    one's (another JAX), then the GPU run's and the TPU run's, where one was made."""
    found = []
    for path, classes in drift_reports():
        if path.is_file():
            sentence = drift_compare.page_summary(json.loads(path.read_text()), docname)
            if sentence:
                found.append((sentence, classes))
    return found


def add_drift_sentence(app: Sphinx, doctree, docname: str) -> None:
    """The drift reports' sentences for this lesson, under its list of rules."""
    if not asserts_rules(docname):
        return
    sentences = drift_sentences(docname)
    for section in doctree.findall(nodes.section):
        if SECTION_ID in section["ids"]:
            for sentence, classes in sentences:
                section += nodes.paragraph(text=sentence, classes=classes)


class rule_ref(nodes.inline):
    """A ``{rule}`id``` in prose, resolved once every page's records are read."""


def rule_role(name, rawtext, text, lineno, inliner, options=None, content=()):
    rule_id = text.strip()
    node = rule_ref(rawtext, "", rule_id=rule_id, classes=["course-rule"])
    return [node], []


def explanation_role(name, rawtext, text, lineno, inliner, options=None, content=()):
    """An explanation inside a sentence: shown with a mark that no check carries it."""
    node = nodes.inline(rawtext, "", classes=["course-explanation"])
    node += nodes.Text(text)
    node += nodes.inline("", EXPLANATION_MARK, classes=["course-explanation-mark"])
    return [node], []


class Explanation(SphinxDirective):
    """A block of explanation no check can carry (why XLA does what the rules show)."""

    has_content = True
    optional_arguments = 1  # a title of its own, e.g. "Not measured here"
    final_argument_whitespace = True

    def run(self):
        title = f"{self.arguments[0]} (not checked by the build)" if self.arguments else EXPLANATION_TITLE
        box = nodes.container(classes=["course-explanation-block"])
        box += nodes.paragraph("", title, classes=["course-explanation-title"])
        self.state.nested_parse(self.content, self.content_offset, box)
        return [box]


def all_records(app: Sphinx) -> dict[str, dict]:
    """id -> record (with ``page``) of every page that asserts rules, first page first."""
    from myst_nb.ext.glue.crossref import read_glue_cache

    found: dict[str, dict] = {}
    for docname in sorted(d for d in app.env.found_docs if asserts_rules(d)):
        for row in page_records(read_glue_cache(app.env.mystnb_config.output_folder, docname), docname):
            found.setdefault(row["id"], row)
    return found


def rule_named(known: dict[str, dict], rule_id: str, docname: str) -> dict:
    """The record of ``rule_id`` (``known``: :func:`all_records`); raises ExtensionError
    when no page asserted it or it did not hold (a drift run records such rules)."""
    row = known.get(rule_id)
    if row is None:
        raise ExtensionError(f"{docname}: {{rule}}`{rule_id}` names no rule a page asserted")
    if row.get("held") is False:
        raise ExtensionError(f"{docname}: {{rule}}`{rule_id}` did not hold on JAX {row['jax']}")
    return row


RULE_ANCHOR = "rule-"  # + the rule's id: the list item that states it
CHECK_MARK = "\u2713"


def rule_anchor(rule_id: str) -> str:
    """The HTML id of the item that states rule ``rule_id`` in its page's list."""
    return RULE_ANCHOR + rule_id


def resolve_rule_refs(app: Sphinx, doctree, docname: str) -> None:
    """Each ``{rule}`id``` becomes a small check mark after its sentence, a link to the
    item of the list that states the rule (its id and statement in the link's title and
    accessible name), so the prose reads without the ids and an auditor still reaches
    each sentence's check; an id no page asserted, or a rule recorded as not holding,
    fails the build."""
    refs = list(doctree.findall(rule_ref))
    if not refs:
        return
    known = all_records(app)
    for ref in refs:
        row = rule_named(known, ref["rule_id"], docname)
        uri = app.builder.get_relative_uri(docname, row["page"]) + "#" + rule_anchor(ref["rule_id"])
        link = nodes.reference("", "", refuri=uri, classes=["course-rule-link"],
                               reftitle=f"checked while this page was built: {ref['rule_id']}: {row['statement']}")
        link += nodes.inline("", CHECK_MARK, classes=["course-rule-mark"])
        link += nodes.inline("", ref["rule_id"], classes=["course-rule-id"])  # read out, not shown
        ref.replace_self(nodes.inline("", "", link, classes=["course-rule"]))


def anchor_rule_items(app: Sphinx, doctree, docname: str) -> None:
    """Each item of the page's "What this page asserts" list gets the id
    :func:`rule_anchor` of the rule it states (the item starts with the id, in code),
    so a check mark in the prose leads to its own rule."""
    if not asserts_rules(docname):
        return
    for section in doctree.findall(nodes.section):
        if SECTION_ID not in section["ids"]:
            continue
        for item in section.findall(nodes.list_item):
            first = next(iter(item.findall(nodes.literal)), None)
            if first is not None:
                item["ids"].append(rule_anchor(first.astext()))


RULE_ROLE = re.compile(r"\{rule\}`([^`]+)`")


def prose_names(sources: dict[str, str]) -> dict[str, list[str]]:
    """rule id -> the pages (docnames, in order) whose prose names it with ``{rule}``;
    ``sources``: docname -> MyST source. The drift report shows them beside each rule."""
    named: dict[str, list[str]] = {}
    for docname, text in sources.items():
        for rule_id in dict.fromkeys(RULE_ROLE.findall(text)):
            named.setdefault(rule_id.strip(), []).append(docname)
    return named


def write_records(app: Sphinx, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    from myst_nb.ext.glue.crossref import read_glue_cache

    rows = []
    docs = sorted(d for d in app.env.found_docs if asserts_rules(d))
    for docname in docs:
        rows += page_records(read_glue_cache(app.env.mystnb_config.output_folder, docname), docname)
    named = prose_names({d: Path(app.env.doc2path(d)).read_text(encoding="utf-8") for d in docs})
    rows = [dict(row, prose=named.get(row["id"], [])) for row in rows]
    out = Path(app.outdir)
    (out / ARTEFACT).parent.mkdir(parents=True, exist_ok=True)
    # written whole or not at all: scripts/drift.py may read it while a build runs
    partial = out / (ARTEFACT + ".partial")
    partial.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    partial.replace(out / ARTEFACT)
    (out / NOTEBOOK_DIR).mkdir(parents=True, exist_ok=True)
    shutil.copyfile(HELPER, out / NOTEBOOK_DIR / HELPER.name)


def setup(app: Sphinx) -> dict:
    app.connect("source-read", check_source)
    app.connect("env-get-outdated", pages_of_changed_reports)
    app.add_node(rule_ref, html=(lambda self, node: None, lambda self, node: None))
    app.add_role("rule", rule_role)
    app.add_role("explanation", explanation_role)
    app.add_directive("explanation", Explanation)
    app.connect("doctree-resolved", resolve_rule_refs)
    app.connect("doctree-resolved", anchor_rule_items)
    app.connect("doctree-resolved", add_drift_sentence)
    app.connect("build-finished", write_records)
    # Pages are re-read when this extension changes (so each notes the report as a dependency).
    env_version = int(hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:8], 16)
    return {"version": "1", "env_version": env_version,
            "parallel_read_safe": True, "parallel_write_safe": True}
