"""The core path's reading time, counted from its lessons while the site is built.

The lessons of the table of contents' part captioned "The core path" (_toc.yml) are
read as MyST notebooks (jupytext) and their Markdown cells' words counted (code cells
not). The count and the minutes at 200 words a minute become the MyST substitutions
``core_words`` and ``core_minutes`` the landing page shows. They are set as Sphinx
configuration, so a lesson edit that changes the count makes Sphinx re-read every page
(myst-nb's cache answers for the code) and the landing page never shows a count the
lessons have moved away from; an unchanged rebuild reads nothing.
"""
from __future__ import annotations

import re
from pathlib import Path

import jupytext
import yaml
from sphinx.application import Sphinx
from sphinx.config import Config

CORE_CAPTION = "The core path"
WORDS_PER_MINUTE = 200


def core_lessons(toc: Path) -> list[str]:
    """Docnames (``book/lessons/<name>``) of the part captioned "The core path", or []
    for a book without one (a page that shows the count then fails the strict build
    on its unknown substitution)."""
    parts = yaml.safe_load(toc.read_text(encoding="utf-8")).get("parts", [])
    for part in parts:
        if part.get("caption") == CORE_CAPTION:
            return [chapter["file"] for chapter in part.get("chapters", [])]
    return []


def prose_words(path: Path) -> int:
    """Words (``\\w+`` runs) in the Markdown cells of the MyST notebook at ``path``."""
    return sum(len(re.findall(r"\w+", cell.source)) for cell in jupytext.read(path).cells
               if cell.cell_type == "markdown")


def set_reading_time(app: Sphinx, config: Config) -> None:
    root = Path(app.srcdir)
    lessons = core_lessons(root / "_toc.yml")
    if not lessons:
        return
    words = sum(prose_words(root / f"{doc}.md") for doc in lessons)
    config.myst_substitutions = {**config.myst_substitutions, "core_words": str(words),
                                 "core_minutes": str(round(words / WORDS_PER_MINUTE))}


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", set_reading_time)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
