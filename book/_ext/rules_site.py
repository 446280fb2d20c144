"""Sphinx extension: the rules the lessons assert, collected from their records.

Each lesson asserts its rules through ``book/lessons/course_rules.py`` and glues
their records (``rules_records``) and its list of them (``rules_asserted``); this
extension, after the build, writes every page's records into one artefact,
``_static/rules.json`` (``[{"id", "statement", "page", "jax"}]``, in page order), and
copies the helper beside the lesson notebooks so that they run in JupyterLab too.

The build fails when a lesson published no records or its page does not show the
list, so no lesson can state rules that were not checked by the helper.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

REPO = Path(__file__).resolve().parents[2]
HELPER = REPO / "book" / "lessons" / "course_rules.py"
LESSON_PREFIX = "book/lessons/"
ARTEFACT = "_static/rules.json"
NOTEBOOK_DIR = "_notebooks/lessons"  # where course_run.py writes the lesson notebooks
LIST_DIRECTIVE = "```{glue:md} rules_asserted"


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
    if docname.startswith(LESSON_PREFIX) and LIST_DIRECTIVE not in source[0]:
        raise ExtensionError(f"{docname}: the page does not show its rules "
                             f"({LIST_DIRECTIVE!r} ... ```)")


def write_records(app: Sphinx, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    from myst_nb.ext.glue.crossref import read_glue_cache

    rows = []
    for docname in sorted(d for d in app.env.found_docs if d.startswith(LESSON_PREFIX)):
        rows += page_records(read_glue_cache(app.env.mystnb_config.output_folder, docname), docname)
    out = Path(app.outdir)
    (out / ARTEFACT).parent.mkdir(parents=True, exist_ok=True)
    (out / ARTEFACT).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    (out / NOTEBOOK_DIR).mkdir(parents=True, exist_ok=True)
    shutil.copyfile(HELPER, out / NOTEBOOK_DIR / HELPER.name)


def setup(app: Sphinx) -> dict:
    app.connect("source-read", check_source)
    app.connect("build-finished", write_records)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
