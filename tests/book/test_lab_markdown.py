"""A lesson's MyST prose becomes Markdown JupyterLab renders (book/_ext/lab_markdown.py).

Fast: no site build. The built notebooks themselves are checked in
tests/browser/test_offline.py."""
from __future__ import annotations

import nbformat
import pytest

from book._ext import lab_markdown

GLUE = {"n_calls": {"data": {"text/plain": "7"}},
        "ratio": {"data": {"text/plain": "0.123456"}},
        "deleted": {"data": {"text/plain": "True"}},
        "fig": {"data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}}}
LINKS = {("ref", "lesson-lifetimes"): ("Buffer lifetimes", "lifetimes.ipynb"),
         ("doc", "../exercises/index"): ("How the exercises work", None)}


def ctx():
    return lab_markdown.Context(glue=GLUE, link=lambda kind, target: LINKS[(kind, target)])


def test_glued_values_are_the_texts_the_page_shows():
    text = "Of {glue:text}`n_calls` calls, a ratio of {glue:text}`ratio:.2f`; deleted: {glue}`deleted`."
    assert lab_markdown.rewrite(text, ctx()) == "Of 7 calls, a ratio of 0.12; deleted: True."


def test_links_go_to_notebooks_or_stay_text_and_targets_go():
    text = ("(lesson-x)=\n# Title\n\nSee the {ref}`next\n lesson <lesson-lifetimes>` and\n"
            "{doc}`../exercises/index`; `{0}` is not a role.")
    assert lab_markdown.rewrite(text, ctx()) == (
        "# Title\n\nSee the [next lesson](lifetimes.ipynb) and\nHow the exercises work; `{0}` is not a role.")


def test_blocks_become_markdown_and_figures_attachments():
    c = ctx()
    text = ("```{exercise-start}\n:label: ex-a\n```\n\nDo it.\n\n```{exercise-end}\n```\n\n"
            "```{glue:figure} fig\n:name: fig-a\n:alt: A bar chart\n\nCaption with {glue:text}`n_calls`.\n```\n")
    out = lab_markdown.rewrite(text, c)
    assert out == ("**Practice.**\n\nDo it.\n\n\n![A bar chart](attachment:fig.png)\n\n"
                   "Caption with 7.\n")
    assert c.attachments == {"fig.png": {"image/png": "iVBORw0KGgo="}}


def test_a_missing_glue_key_fails_instead_of_writing_a_wrong_notebook():
    with pytest.raises(KeyError, match="not_glued"):
        lab_markdown.rewrite("{glue:text}`not_glued`", ctx())


def test_hidden_cells_are_collapsed_not_dropped():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("assert rule", metadata={"tags": ["remove-cell"]}),
        nbformat.v4.new_code_cell("plot()", metadata={"tags": ["remove-input"]}),
        nbformat.v4.new_markdown_cell("{glue:text}`n_calls` calls")])
    cells = lab_markdown.lab_notebook(nb, ctx()).cells
    assert cells[0].metadata.jupyter == {"source_hidden": True, "outputs_hidden": True}
    assert cells[1].metadata.jupyter == {"source_hidden": True}
    assert cells[2].source == "7 calls" and "attachments" not in cells[2]


def test_glued_markdown_becomes_its_text():
    glue = dict(GLUE, rules={"data": {"text/markdown": "- `a-rule`: it holds\n", "text/plain": "<Markdown>"}})
    text = "Before.\n\n```{glue:md} rules\n:format: myst\n```\n\nAfter."
    assert lab_markdown.rewrite(text, lab_markdown.Context(glue=glue)) == (
        "Before.\n\n- `a-rule`: it holds\n\nAfter.")
    with pytest.raises(KeyError, match="rules"):
        lab_markdown.rewrite(text, ctx())


def test_rule_references_and_explanations_stay_visible_as_such():
    text = ("It is deleted {rule}`taken-donation-deletes`; XLA {explanation}`frees it at its last use`.\n\n"
            ":::{explanation}\nBuffer lifetimes.\n:::\n")
    assert lab_markdown.rewrite(text, ctx()) == (
        "It is deleted (checked: `taken-donation-deletes`); XLA frees it at its last use "
        "*(explanation, not checked)*.\n\n> **Explanation.**\n>\n> Buffer lifetimes.\n")
