"""Sphinx extension: the rules the lessons assert, collected from their records.

Each lesson asserts its rules through ``book/lessons/course_rules.py`` and glues
their records (``rules_records``) and its list of them (``rules_asserted``); this
extension, after the build, writes every page's records into one artefact,
``_static/rules.json`` (``[{"id", "statement", "page", "jax"}]``, in page order), and
copies the helper beside the lesson notebooks so that they run in JupyterLab too.

The build fails when a lesson published no records or its page does not show the
list, so no lesson can state rules that were not checked by the helper.

Under each list it adds, from the last drift report (``book/drift_report.json``,
committed by ``make drift``), on which other JAX the page's rules were checked and
how many held there.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

REPO = Path(__file__).resolve().parents[2]
HELPER = REPO / "book" / "lessons" / "course_rules.py"
LESSON_PREFIX = "book/lessons/"
LANDING = "book/intro"  # the landing page asserts its rules the same way


def asserts_rules(docname: str) -> bool:
    return docname.startswith(LESSON_PREFIX) or docname == LANDING
ARTEFACT = "_static/rules.json"
NOTEBOOK_DIR = "_notebooks/lessons"  # where course_run.py writes the lesson notebooks
LIST_DIRECTIVE = "```{glue:md} rules_asserted"
DRIFT_REPORT = REPO / "book" / "drift_report.json"
SECTION_ID = "what-this-page-asserts"


def _drift_compare():
    spec = importlib.util.spec_from_file_location("_course_drift_compare", REPO / "scripts" / "drift_compare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
    app.env.note_dependency(str(DRIFT_REPORT))  # a new report re-renders the sentence


def add_drift_sentence(app: Sphinx, doctree, docname: str) -> None:
    """The last drift report's sentence for this lesson, under its list of rules."""
    from docutils import nodes

    if not asserts_rules(docname) or not DRIFT_REPORT.is_file():
        return
    sentence = _drift_compare().page_summary(json.loads(DRIFT_REPORT.read_text()), docname)
    for section in doctree.findall(nodes.section):
        if SECTION_ID in section["ids"] and sentence:
            section += nodes.paragraph(text=sentence, classes=["course-drift"])


def write_records(app: Sphinx, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    from myst_nb.ext.glue.crossref import read_glue_cache

    rows = []
    for docname in sorted(d for d in app.env.found_docs if asserts_rules(d)):
        rows += page_records(read_glue_cache(app.env.mystnb_config.output_folder, docname), docname)
    out = Path(app.outdir)
    (out / ARTEFACT).parent.mkdir(parents=True, exist_ok=True)
    (out / ARTEFACT).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    (out / NOTEBOOK_DIR).mkdir(parents=True, exist_ok=True)
    shutil.copyfile(HELPER, out / NOTEBOOK_DIR / HELPER.name)


def setup(app: Sphinx) -> dict:
    app.connect("source-read", check_source)
    app.connect("doctree-resolved", add_drift_sentence)
    app.connect("build-finished", write_records)
    # Pages are re-read when this extension changes (so each notes the report as a dependency).
    env_version = int(hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:8], 16)
    return {"version": "1", "env_version": env_version,
            "parallel_read_safe": True, "parallel_write_safe": True}
