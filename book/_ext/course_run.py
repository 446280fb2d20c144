"""Sphinx extension: a way to run every lesson, offline.

For each lesson page (``book/lessons/<name>``) it

* writes the lesson as a notebook (jupytext, MyST -> .ipynb, no outputs) to
  ``_notebooks/lessons/<name>.ipynb`` in the built site, for download and for the
  learner's JupyterLab, its prose rewritten as plain Markdown with the values the
  page shows (:mod:`lab_markdown`);
* puts a "Run this lesson" bar at the top of the page: open the same notebook in
  the local JupyterLab that ``make serve`` starts, download the ``.ipynb``, or run
  the code cells in the page itself (thebe, talking to that JupyterLab);

and each exercise page with a released notebook (``exercises/release/<name>/``)
gets an "Open in JupyterLab" link to that notebook in the learner workspace.

thebe is served from the site: ``node_modules/thebe/lib`` (installed from the npm
registry by ``npm ci``, see package.json) is copied to ``_static/thebe/``, so no
page loads anything from the internet.

The pages' defaults (the ports of JupyterLab and the grading service, the
learner-id pattern) come from ``autograder/defaults.py``: each build writes them
to ``_static/course-defaults.js`` as ``window.COURSE_DEFAULTS``, read by
``course-run.js`` and ``grader.js``, so no script repeats a value. A page
overrides the addresses with ``?jupyter=``, ``?token=`` and ``?grader=``.
"""

from __future__ import annotations

import hashlib
import html
import json
import posixpath
import re
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

from autograder import defaults  # standard library only
from autograder.defaults import CHECKOUT as REPO
from scripts import jupyter_local
from scripts.jupyter_local import write_if_changed

THEBE_LIB = REPO / "node_modules" / "thebe" / "lib"
STATIC = REPO / "book" / "_static"
LANDING = "book/intro"
LESSON_PREFIX = "book/lessons/"
EXERCISE_PREFIX = "book/exercises/"
NOTEBOOK_DIR = "_notebooks/lessons"
DEFAULTS_JS = "course-defaults.js"  # written into the site's _static/ by write_defaults
LOCAL_JSON = "course-local.json"  # the running make serve's servers (scripts/serve.py)
NO_LOCAL_SERVERS = "{}\n"


def _rel(pagename: str, target: str) -> str:
    """``target`` (relative to the site root) as seen from page ``pagename``."""
    depth = pagename.count("/")
    return "../" * depth + target


def _lab_link(path: str, label: str) -> str:
    href = jupyter_local.lab_url(defaults.HOST, defaults.JUPYTER_PORT, jupyter_local.DEFAULT_TOKEN, path)
    return (f'<a class="course-run-lab" href="{html.escape(href)}" data-lab-path="{html.escape(path)}" '
            f'target="_blank" rel="noopener">{html.escape(label)}</a>')


def _page_session(name: str) -> str:
    """The Jupyter session path the page ``name`` runs its code at (course-run.js): one of
    its own, so each lesson page gets a kernel of its own, and never the lesson notebook's
    (JupyterLab may have that one open). In ``lessons/``: the kernel's working folder."""
    return f"lessons/{name}.page.ipynb"


def lesson_bar(pagename: str) -> str:
    name = pagename[len(LESSON_PREFIX):]
    notebook = f"lessons/{name}.ipynb"
    download = _rel(pagename, f"{NOTEBOOK_DIR}/{name}.ipynb")
    return (
        '<nav class="course-run" aria-label="Run this lesson">'
        '<span class="course-run-title">Run this lesson:</span>'
        f'{_lab_link(notebook, "Open in JupyterLab")}'
        f'<a class="course-run-ipynb" href="{html.escape(download)}" download="{html.escape(name)}.ipynb">'
        'Download .ipynb</a>'
        '<button type="button" class="course-run-here" hidden '
        f'data-kernel-path="{html.escape(_page_session(name))}">Run the code on this page</button>'
        '<span class="course-run-status" role="status" aria-live="polite"></span>'
        '</nav>'
    )


def exercise_bar(name: str) -> str:
    notebook = f"{name}/{name}.ipynb"
    return (
        '<nav class="course-run" aria-label="Work on this exercise">'
        '<span class="course-run-title">Work on it in the course JupyterLab:</span>'
        f'{_lab_link(notebook, "Open the notebook in JupyterLab")}'
        '</nav>'
    )


def _is_sphinx_thebe(script) -> bool:
    body = getattr(script, "attributes", {}).get("body", "") or ""
    return "THEBE_JS_URL" in body or str(getattr(script, "filename", script)).endswith("sphinx-thebe.js")


def drop_sphinx_thebe_config(app: Sphinx, doctree, docname: str) -> None:
    """Remove sphinx-thebe's per-page Binder config: thebe is configured by course-run.js."""
    from docutils import nodes

    for node in list(doctree.findall(nodes.raw)):
        if "text/x-thebe-config" in node.astext() or "kernelName = " in node.astext():
            node.parent.remove(node)


# Python's warning format: "<file>:<line>: <Category>: <message>" then, indented by
# two spaces, the source line that warned (warnings.formatwarning).
_WARNING = re.compile(r"^(?P<file>[^\s:]+\.py):\d+: (?P<category>\w+): ", re.M)


def warning_messages(text: str) -> str:
    """``text`` (a cell's stderr) with each Python warning shown as ``Category: message``:
    no file path of the machine that built the site, no echoed source line."""
    lines, out, echo_next = text.split("\n"), [], False
    for line in lines:
        header = _WARNING.match(line)
        if header:
            out.append(line[header.start("category"):])
            echo_next = True
        elif echo_next and line.startswith("  ") and not line.startswith("   "):
            echo_next = False  # the source line that raised the warning
        else:
            out.append(line)
    return "\n".join(out)


def clean_warnings(app: Sphinx, doctree, docname: str) -> None:
    """Cell stderr on the pages shows warnings' messages, never the build machine's paths."""
    from docutils import nodes

    for block in list(doctree.findall(nodes.literal_block)):
        if "stderr" not in block.get("classes", []):
            continue
        text = block.astext()
        cleaned = warning_messages(text)
        if cleaned != text:
            block.children = [nodes.Text(cleaned)]
            if "rawsource" in block:
                block.rawsource = cleaned


def add_run_bar(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    # jupyter-book always loads sphinx-thebe, whose script points at thebe 0.8.2 on a
    # CDN (unpkg.com); this site serves thebe 0.9 itself, so those scripts go.
    if "script_files" in context:
        context["script_files"] = [s for s in context["script_files"] if not _is_sphinx_thebe(s)]
    # no favicon request (the browser would log a 404 for /favicon.ico)
    context["metatags"] = context.get("metatags", "") + '\n<link rel="icon" href="data:,">'
    if doctree is None or "body" not in context:
        return
    if pagename.startswith(LESSON_PREFIX):
        bar = lesson_bar(pagename)
    elif pagename.startswith(EXERCISE_PREFIX):
        name = pagename[len(EXERCISE_PREFIX):]
        if not (REPO / "exercises" / "release" / name / f"{name}.ipynb").is_file():
            return
        bar = exercise_bar(name)
    else:
        return
    context["body"] = bar + context["body"]


def notebook_href(docname: str) -> str | None:
    """Where page ``docname``'s notebook is, seen from a lesson notebook (the lessons
    share a folder; a released exercise is ``<name>/<name>.ipynb`` in the workspace)."""
    if docname.startswith(LESSON_PREFIX):
        return f"{docname[len(LESSON_PREFIX):]}.ipynb"
    name = docname[len(EXERCISE_PREFIX):] if docname.startswith(EXERCISE_PREFIX) else None
    if name and (REPO / "exercises" / "release" / name / f"{name}.ipynb").is_file():
        return f"../{name}/{name}.ipynb"
    return None


def link(env, docname: str, kind: str, target: str) -> tuple[str, str | None]:
    """``(title, href)`` of a ``{ref}`` label or ``{doc}`` path on page ``docname``."""
    if kind == "ref":
        to_doc, _anchor, title = env.domaindata["std"]["labels"][target.lower()]
        if to_doc == docname:  # JupyterLab's heading anchors: the title, spaces as dashes
            return title, "#" + title.replace(" ", "-")
    else:
        base = "" if target.startswith("/") else posixpath.dirname(docname)
        to_doc = posixpath.normpath(posixpath.join(base, target.lstrip("/")))
        title = env.titles[to_doc].astext()
    return title, notebook_href(to_doc)


def lesson_notebook(app: Sphinx, docname: str) -> str:
    """Lesson ``docname`` (a MyST notebook) as .ipynb JSON text, without outputs,
    its markdown as JupyterLab renders it (glued values from this build). Its cells' ids
    come from the page and the cell's place, not at random: an unchanged lesson gives the
    same bytes, so a rebuild leaves its notebook (and the workspace's copy) alone."""
    import functools

    import jupytext
    from myst_nb.ext.glue.crossref import read_glue_cache

    from book._ext.lab_markdown import Context, lab_notebook

    notebook = jupytext.read(Path(app.env.doc2path(docname)))
    notebook.metadata.pop("jupytext", None)
    glue = read_glue_cache(app.env.mystnb_config.output_folder, docname)
    lab_notebook(notebook, Context(glue=glue, link=functools.partial(link, app.env, docname)))
    for i, cell in enumerate(notebook.cells):
        cell.id = hashlib.sha256(f"{docname}\0{i}".encode()).hexdigest()[:8]
    return jupytext.writes(notebook, fmt="ipynb")


def write_outputs(app: Sphinx, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    notebooks = out / NOTEBOOK_DIR
    notebooks.mkdir(parents=True, exist_ok=True)
    # Only what changed is written, each file whole (jupyter_local.write_if_changed): pages served
    # meanwhile (make serve, make hub, other test workers) never load half a file.
    for docname in sorted(app.env.found_docs):
        if docname.startswith(LESSON_PREFIX):
            write_if_changed(notebooks / f"{docname[len(LESSON_PREFIX):]}.ipynb",
                             lesson_notebook(app, docname).encode("utf-8"))
    write_if_changed(out / "favicon.ico", _favicon())
    sync_tree(THEBE_LIB, out / "_static" / "thebe", keep=_thebe_file)


def sync_tree(source: Path, target: Path, keep) -> None:
    """Make ``target`` a copy of ``source``'s files for which ``keep(relative path)`` holds:
    changed and new files written by ``write_if_changed``, files no longer in
    ``source`` removed, unchanged ones left alone (the folder never disappears)."""
    source, target = Path(source), Path(target)
    wanted = {p.relative_to(source) for p in source.rglob("*")
              if p.is_file() and keep(p.relative_to(source))}
    for rel in sorted(wanted):
        write_if_changed(target / rel, (source / rel).read_bytes())
    for old in sorted(target.rglob("*"), reverse=True) if target.exists() else []:
        rel = old.relative_to(target)
        if old.is_file() and rel not in wanted:
            old.unlink()
        elif old.is_dir() and not any(old.iterdir()):
            old.rmdir()


def _thebe_file(rel: Path) -> bool:
    """Whether thebe's file ``rel`` (relative to its lib/) is served: no source maps,
    type declarations or licence texts."""
    return not ("types" in rel.parts or rel.name.endswith((".map", ".d.ts", ".txt")))


def defaults_script() -> str:
    """``_static/course-defaults.js``: the pages' defaults, from autograder/defaults.py."""
    values = dict(defaults.for_pages(), jupyterToken=jupyter_local.DEFAULT_TOKEN)
    return ("/* Written by book/_ext/course_run.py from autograder/defaults.py at each build. */\n"
            f"window.COURSE_DEFAULTS = {json.dumps(values, sort_keys=True)};\n")


def write_defaults(app: Sphinx) -> None:
    """Write ``_static/course-defaults.js`` before any page, so each page's ``?v=``
    checksum is of this build's copy."""
    if app.builder.format == "html":
        static = Path(app.outdir) / "_static"
        static.mkdir(parents=True, exist_ok=True)
        write_if_changed(static / DEFAULTS_JS, defaults_script().encode("utf-8"))
        # Until a make serve runs: scripts/serve.py writes its servers here while it runs,
        # and this again when it stops, so a page never asks for a file that is not there
        # (and a rebuild while it runs keeps what it wrote).
        if not (static / LOCAL_JSON).exists():
            (static / LOCAL_JSON).write_text(NO_LOCAL_SERVERS, encoding="utf-8")


def _favicon() -> bytes:
    """A small icon at the site root (ICO bytes): browsers ask for /favicon.ico (e.g. on the
    redirect page)."""
    import io

    from PIL import Image, ImageDraw

    image = Image.new("RGBA", (32, 32), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    draw.rounded_rectangle((1, 1, 30, 30), radius=6, fill=(17, 119, 187, 255))
    draw.rectangle((9, 14, 22, 18), fill=(255, 255, 255, 255))  # an arrow: input -> output
    draw.polygon([(20, 9), (28, 16), (20, 23)], fill=(255, 255, 255, 255))
    data = io.BytesIO()
    image.save(data, format="ICO", sizes=[(32, 32)])
    return data.getvalue()


def static_changed(app: Sphinx, env, added, changed, removed) -> list[str]:
    """Sphinx copies ``html_static_path`` only when some page is rebuilt, so a changed
    course script or style alone (book/_static/) would leave the old copy in the
    site. Then re-read the landing page (no code: nothing executes) to get the copy."""
    out = Path(app.outdir) / "_static"
    for source in sorted(STATIC.iterdir()):
        copy = out / source.name
        if source.is_file() and (not copy.is_file() or copy.read_bytes() != source.read_bytes()):
            return [LANDING] if LANDING in env.found_docs else []
    return []


def check_thebe(app: Sphinx) -> None:
    if not (THEBE_LIB / "index.js").is_file():
        raise ExtensionError(f"{THEBE_LIB} is missing: run `npm ci` (make book does) to install thebe "
                             "from the npm registry")


def setup(app: Sphinx) -> dict:
    app.connect("builder-inited", check_thebe)
    app.connect("builder-inited", write_defaults)
    app.connect("env-get-outdated", static_changed)
    app.connect("html-page-context", add_run_bar)
    app.connect("doctree-resolved", drop_sphinx_thebe_config, priority=900)
    app.connect("doctree-resolved", clean_warnings)
    app.connect("build-finished", write_outputs)
    app.add_js_file(DEFAULTS_JS)  # not deferred: the deferred scripts below read it
    app.add_js_file("course-run.js", defer="defer")
    app.add_js_file("grader.js", defer="defer")  # acts only on pages with a submit form
    app.add_css_file("course-run.css")
    # Pages are rewritten when this extension changes (Sphinx re-reads when env_version differs).
    env_version = int(hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:8], 16)
    return {"version": "1", "env_version": env_version,
            "parallel_read_safe": True, "parallel_write_safe": True}
