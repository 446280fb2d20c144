"""A lesson page's MyST markdown as the plain Markdown JupyterLab renders.

The lessons are MyST notebooks: their prose uses roles (``{glue:text}`key```,
``{ref}`text <label>```, ``{doc}`path```), targets (``(label)=``) and
directives (``{exercise-start}``, ``{glue:figure}``) that only Sphinx
understands. JupyterLab shows those raw, so a learner who opens a lesson there
(or downloads its ``.ipynb``) would read ``{glue:text}`old_deleted``` where the
page says ``True``. :func:`lab_notebook` rewrites every markdown cell:

* glued values become the text the page shows (myst-nb's own glue cache and
  ``format_plain_text``), glued Markdown (``{glue:md}``) its text, glued figures
  become a cell attachment;
* ``{ref}`` and ``{doc}`` become links to the other lesson notebooks (same
  folder) or to an exercise notebook in the learner workspace
  (``../<exercise>/<exercise>.ipynb``), else their text;
* ``{rule}`id``` becomes "(checked: `id`)", an explanation keeps its mark;
* targets disappear; an exercise or solution block starts with a bold word.

Cells the page hides (tags ``remove-cell``, ``remove-input``: the lesson's
asserted rules) stay in the notebook, collapsed (JupyterLab's
``metadata.jupyter.source_hidden`` / ``outputs_hidden``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

# MyST role: {name}`body` (the body may wrap lines); a name starts with a letter,
# so Python format fields such as `{0}` in inline code are not roles.
ROLE = re.compile(r"\{(?P<name>[a-z][\w:+-]*)\}`(?P<body>[^`]+)`")
TARGET = re.compile(r"^\([\w:.-]+\)=[ \t]*\n?", re.M)
DIRECTIVE = re.compile(
    r"^(?P<fence>```+|:::+)\{(?P<name>[\w:-]+)\}(?P<arg>[^\n]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$\n?",
    re.M | re.S)
OPTION = re.compile(r"^:(?P<key>[\w-]+):[ \t]*(?P<value>.*)$\n?", re.M)
EXPLICIT = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.S)
HIDDEN_TAGS = {"remove-cell": ("source_hidden", "outputs_hidden"), "remove-input": ("source_hidden",)}
BLOCK_WORDS = {"exercise-start": "Practice.", "solution-start": "Solution."}


@dataclass
class Context:
    """What the rewrite needs to know about the rest of the book.

    ``glue``: key -> glue output (``{"data": {mime: value}}``, as myst-nb caches it);
    ``link(kind, target)``: ``(title, href)`` for a ``{ref}`` label or a ``{doc}`` path
    written on this page (``href`` None: no notebook to link to, so text only);
    ``attachments``: filled by :func:`rewrite` with the cell's glued figures.
    """

    glue: dict = field(default_factory=dict)
    link: Callable[[str, str], tuple] = lambda kind, target: (target, None)
    attachments: dict = field(default_factory=dict)


def _glue_text(ctx: Context, body: str, format_plain_text) -> str:
    key = body.split("::")[-1]
    key, _, spec = key.partition(":")
    output = ctx.glue.get(key)
    if output is None:
        raise KeyError(f"glue key {key!r} is not in this page's glue cache")
    text = output["data"].get("text/plain", "")
    return format_plain_text(text, spec) if spec else text


def _role(ctx: Context, match: re.Match, format_plain_text) -> str:
    name, body = match["name"], " ".join(match["body"].split())
    if name.startswith("glue"):
        return _glue_text(ctx, body, format_plain_text)
    if name in ("ref", "doc"):
        explicit = EXPLICIT.match(body)
        text, target = (explicit["text"], explicit["target"]) if explicit else (None, body)
        title, href = ctx.link(name, target)
        text = text or title
        return f"[{text}]({href})" if href else text
    if name == "math":
        return f"${body}$"
    if name == "rule":  # the rule that checks the sentence (book/_ext/rules_site.py)
        return f"(checked: `{body}`)"
    if name == "explanation":
        return f"{body} *(explanation, not checked)*"
    return f"`{body}`" if name in ("code", "literal") else body


def _directive(ctx: Context, match: re.Match) -> str:
    name, body = match["name"], match["body"]
    options = {m["key"]: m["value"] for m in OPTION.finditer(body)}
    body = OPTION.sub("", body).strip("\n")
    if name.endswith("-end"):
        return ""
    if name in BLOCK_WORDS:
        return f"**{BLOCK_WORDS[name]}**{' ' + body if body else ''}\n"
    if name == "glue:md":  # a glued Markdown text, e.g. the page's list of asserted rules
        key = match["arg"].strip()
        text = ctx.glue.get(key, {}).get("data", {}).get("text/markdown")
        if text is None:
            raise KeyError(f"glued Markdown {key!r} is not in this page's glue cache")
        return text.rstrip("\n") + "\n"
    if name == "glue:figure":
        key = match["arg"].strip()
        png = ctx.glue.get(key, {}).get("data", {}).get("image/png")
        if png is None:
            raise KeyError(f"glued figure {key!r} has no PNG in this page's glue cache")
        ctx.attachments[f"{key}.png"] = {"image/png": png}
        alt = options.get("alt", key).replace("]", ")")
        return f"![{alt}](attachment:{key}.png)\n\n{body}\n"
    title = match["arg"].strip() or name.capitalize()
    quoted = "\n".join("> " + line if line else ">" for line in body.split("\n"))
    return f"> **{title}.**\n>\n{quoted}\n"


def rewrite(text: str, ctx: Context) -> str:
    """``text`` (a markdown cell's MyST source) as plain Markdown.

    Raises KeyError when a glued key or figure is missing from ``ctx.glue`` (a page
    the build did not execute): the build fails rather than write a wrong notebook.
    """
    from myst_nb.core.variables import format_plain_text

    text = TARGET.sub("", text)
    text = DIRECTIVE.sub(lambda m: _directive(ctx, m), text)
    return ROLE.sub(lambda m: _role(ctx, m, format_plain_text), text)


def lab_notebook(notebook, ctx: Context):
    """Rewrite ``notebook`` (nbformat v4, in place) for JupyterLab; returns it."""
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            ctx.attachments = {}
            cell.source = rewrite(cell.source, ctx)
            if ctx.attachments:
                cell["attachments"] = ctx.attachments
        hidden = [flag for tag in cell.metadata.get("tags", []) for flag in HIDDEN_TAGS.get(tag, ())]
        if hidden:
            cell.metadata.setdefault("jupyter", {}).update({flag: True for flag in hidden})
    return notebook
