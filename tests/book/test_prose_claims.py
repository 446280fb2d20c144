"""Every lesson sentence that states JAX behaviour is bound to a check, read from the
MyST sources (fast: no site build, no kernel).

A sentence that names a JAX behaviour (a word of :data:`BEHAVIOUR`: what donates,
aliases, is deleted, warns, recompiles, costs memory) must name the rule that checks
it with ``{rule}`id``` (book/_ext/rules_site.py resolves it at build time: an
unknown id, or a rule that did not hold, fails the build), or sit in an
``{explanation}`` block or role (an explanation no check can carry, shown as such).
A rule's own statement reaches the page through the "What this page asserts" list,
which is generated from the records, so it needs no mark in the prose.
"""

from __future__ import annotations

import ast
import re

import pytest

from tests.book.sitebuild import LESSONS, REPO

PAGES = [f"lessons/{name}" for name in LESSONS] + ["intro"]

# What a sentence says JAX does (words in the prose, not inside inline code).
BEHAVIOUR = re.compile(
    r"\b(donates|is donated|are donated|was donated|aliases|aliased|aliasing|deleted|deletes|"
    r"warns|warning|warned|recompiles?|recompil\w+|compiles|compiled once|compiles once|"
    r"copies|reuses?d?|costs?|bytes|memory|freed|frees|declines?|takes? (?:its|the|their|that|a) buffers?)\b",
    re.I)
RULE_ROLE = re.compile(r"\{rule\}`(?P<id>[^`]+)`")
EXPLAIN_ROLE = re.compile(r"\{explanation\}`[^`]*`", re.S)
RULE_CALL = re.compile(r"""\brule\(\s*["'](?P<id>[a-z0-9-]+)["']""")
FENCE = re.compile(r"^(?P<fence>```+|:::+)\{(?P<name>[\w:-]+)\}[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$",
                   re.M | re.S)
# Blocks whose text is not prose claims: code, glued output, the practice tasks
# (instructions to the reader), and explanations (marked as such on the page).
NOT_CLAIMS = {"code-cell", "glue:md", "glue:figure", "explanation"}
FRONT = re.compile(r"\A---\n.*?\n---\n", re.S)
INLINE_CODE = re.compile(r"``?[^`]+``?")
ROLE_TEXT = re.compile(r"\{(?!rule\})[a-z][\w:+-]*\}`[^`]*`")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"*{`])")


def prose(source: str) -> str:
    """The page's prose: front matter, code cells, glued blocks, practice tasks and
    explanation blocks removed, other directives' bodies kept."""
    text = FRONT.sub("", source)
    text = re.sub(r"(?s)```\{exercise-start\}.*?```\{exercise-end\}\n```", "\n\n", text)

    def block(match: re.Match) -> str:
        return "\n\n" if match["name"] in NOT_CLAIMS else "\n\n" + match["body"] + "\n\n"

    text = FENCE.sub(block, text)
    # headings, targets, options, and table rows (measured values; their prose says what they show)
    text = re.sub(r"(?m)^(#.*|\([\w:.-]+\)=|:[\w-]+:.*|\|.*)$", "", text)
    return text


# A list item is a sentence of its own; one that starts with a link to a page
# ({doc}) is a summary of that page, whose own sentences are held to the rule.
LIST_ITEM = re.compile(r"\n(?=\s*(?:[-*]|\d+\.)\s)")
PAGE_SUMMARY = re.compile(r"^\s*(?:[-*]|\d+\.)\s+\{doc\}")


def sentences(source: str):
    """Each prose sentence of ``source`` (whitespace folded)."""
    for paragraph in re.split(r"\n\s*\n", prose(source)):
        for item in LIST_ITEM.split("\n" + paragraph):
            if PAGE_SUMMARY.match(item):
                continue
            item = " ".join(item.split())
            yield from (s for s in SENTENCE_END.split(item) if s)


def unbound(source: str) -> list[str]:
    """Sentences naming a JAX behaviour with neither a {rule} role nor an explanation."""
    found = []
    for sentence in sentences(source):
        if RULE_ROLE.search(sentence) or EXPLAIN_ROLE.search(sentence):
            continue
        words = INLINE_CODE.sub(" ", ROLE_TEXT.sub(" ", sentence))
        if BEHAVIOUR.search(words):
            found.append(sentence)
    return found


def test_a_behaviour_sentence_needs_a_rule_or_an_explanation():
    page = ("---\nkernelspec: {}\n---\n# Title\n\nThe input is deleted after the call. "
            "It stays deleted {rule}`taken-donation-deletes`. Plain words here.\n\n"
            "```{code-cell} ipython3\nx.is_deleted()  # deleted\n```\n\n"
            ":::{explanation}\nXLA frees the buffer at its last use.\n:::\n\n"
            "So it costs no memory {explanation}`(buffer lifetimes)`. `aliased` is code.\n\n"
            "1. {doc}`lessons/x`: the warning, summarised.\n"
            "2. A list item that warns.\n")
    assert unbound(page) == ["The input is deleted after the call.", "A list item that warns."]


@pytest.mark.parametrize("page", PAGES)
def test_every_behaviour_sentence_is_bound(page):
    source = (REPO / "book" / f"{page}.md").read_text(encoding="utf-8")
    loose = unbound(source)
    assert not loose, (f"book/{page}.md: {len(loose)} sentences state JAX behaviour with no "
                       "{rule}`id` and no {explanation}:\n- " + "\n- ".join(loose))


def test_every_rule_named_in_prose_is_asserted_by_a_lesson():
    asserted, named = set(), {}
    for page in PAGES:
        source = (REPO / "book" / f"{page}.md").read_text(encoding="utf-8")
        asserted |= set(RULE_CALL.findall(source))
        for rule_id in RULE_ROLE.findall(source):
            named.setdefault(rule_id, page)
    unknown = {rule_id: page for rule_id, page in named.items() if rule_id not in asserted}
    assert not unknown, f"rules named in prose that no lesson asserts: {unknown}"


# ------------------------------------------------------- a check as general as its sentence
# A sentence that says one of these claims something of every case of a kind.
GENERAL = re.compile(r"\b(never|always|any|every|everything|whatever|a loop|loops)\b", re.I)
COMPREHENSION = (ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)


def _over_cases(condition: ast.AST, cell: ast.Module) -> bool:
    """Whether a rule's ``condition`` observes several cases: it holds a comprehension,
    or compares a list or tuple of two or more per-case results (or a list repeated, one
    item per device), or the cell that asserts it runs a ``for`` loop."""
    for node in ast.walk(condition):
        if isinstance(node, COMPREHENSION):
            return True
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                if isinstance(side, (ast.List, ast.Tuple)) and len(side.elts) >= 2:
                    return True
                if isinstance(side, ast.BinOp) and isinstance(side.op, ast.Mult) and isinstance(side.left, ast.List):
                    return True
    return any(isinstance(node, ast.For) for node in cell.body)


def general_rules(source: str) -> dict[str, bool]:
    """rule id -> whether its check runs over several cases (:func:`_over_cases`), for each
    ``rule("id", statement, condition)`` in ``source``'s code cells."""
    found = {}
    for match in FENCE.finditer(FRONT.sub("", source)):
        if match["name"] != "code-cell":
            continue
        code = "\n".join(line for line in match["body"].splitlines() if not line.startswith((":", "%")))
        cell = ast.parse(code)
        for node in ast.walk(cell):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "rule"
                    and len(node.args) == 3 and isinstance(node.args[0], ast.Constant)):
                found[node.args[0].value] = found.get(node.args[0].value, False) or _over_cases(node.args[2], cell)
    return found


def broader_than_checks(source: str, general: dict[str, bool]) -> list[str]:
    """Sentences of ``source`` that say never/always/any/every/a loop (:data:`GENERAL`,
    outside inline code and roles) and cite only rules checked on one case (``general``:
    rule id -> :func:`_over_cases`, of every page)."""
    found = []
    for sentence in sentences(source):
        cited = RULE_ROLE.findall(sentence)
        words = INLINE_CODE.sub(" ", ROLE_TEXT.sub(" ", RULE_ROLE.sub(" ", sentence)))
        if cited and GENERAL.search(words) and not any(general.get(c.strip()) for c in cited):
            found.append(sentence)
    return found


def test_a_general_sentence_needs_a_check_over_cases():
    page = ("---\nkernelspec: {}\n---\n# T\n\n```{code-cell} ipython3\n:tags: [remove-cell]\n"
            "rule(\"one-case\", \"s\", x.is_deleted())\n"
            "rule(\"many\", \"s\", all(y.is_deleted() for y in ys))\n"
            "rule(\"per-leaf\", \"s\", flags == [True, False])\n```\n\n"
            "A loop never copies its carry {rule}`one-case`. Every leaf is deleted {rule}`many`. "
            "Each leaf is deleted {rule}`one-case`. Any leaf says so {rule}`per-leaf`.\n")
    general = general_rules(page)
    assert general == {"one-case": False, "many": True, "per-leaf": True}
    assert broader_than_checks(page, general) == ["A loop never copies its carry {rule}`one-case`."]


def test_every_general_sentence_cites_a_check_over_cases():
    sources = {page: (REPO / "book" / f"{page}.md").read_text(encoding="utf-8") for page in PAGES}
    general: dict[str, bool] = {}
    for source in sources.values():
        for rule_id, over_cases in general_rules(source).items():
            general[rule_id] = general.get(rule_id, False) or over_cases
    broad = {page: found for page, source in sources.items() if (found := broader_than_checks(source, general))}
    assert not broad, ("sentences that say never/always/any/every/a loop but cite only rules checked on "
                       f"one case (check over the cases that could break it, or narrow the sentence): {broad}")


# ------------------------------------------------------- a rule cited for what it tests
# Words that say nothing of what a sentence or a rule is about.
FUNCTION_WORDS = frozenset("""that this with from they them their there then than when where which what while
have does done into onto over under each every some more most less also only just like same such very
other another both here page above below rule rules call calls gives give given takes take still""".split())
SHARED_WORDS = 2  # content words a sentence shares with the rules it cites, at least


def content_words(text: str) -> set[str]:
    """``text``'s content words: role targets and identifiers split at ``.`` and ``_``,
    words of four letters or more that are not :data:`FUNCTION_WORDS`, each cut to its
    first five letters (a crude stem: "donated" and "donation" meet)."""
    text = re.sub(r"\{[\w:]+\}`([^`]*)`", r"\1", text)
    found = set()
    for word in re.findall(r"[A-Za-z_][\w.]*", text.lower()):
        found |= {part[:5] for part in re.split(r"[._]", word) if len(part) >= 4 and part not in FUNCTION_WORDS}
    return found


def rule_statements(source: str) -> dict[str, str]:
    """rule id -> its statement, for each ``rule("id", "statement", condition)`` in
    ``source``'s code cells (a statement made of string literals)."""
    found = {}
    for match in FENCE.finditer(FRONT.sub("", source)):
        if match["name"] == "code-cell":
            code = "\n".join(line for line in match["body"].splitlines() if not line.startswith((":", "%")))
            for node in ast.walk(ast.parse(code)):
                if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "rule"
                        and len(node.args) == 3 and isinstance(node.args[0], ast.Constant)):
                    found[node.args[0].value] = ast.literal_eval(node.args[1])
    return found


def cited_for_more(source: str, statements: dict[str, str]) -> list[str]:
    """Sentences of ``source`` that share fewer than :data:`SHARED_WORDS` content words
    with the statements and ids of the rules they cite (``statements``: of every page):
    the rule tests something else than what the sentence says."""
    found = []
    for sentence in sentences(source):
        cited = [c.strip() for c in RULE_ROLE.findall(sentence)]
        if not cited:
            continue
        said = content_words(RULE_ROLE.sub(" ", sentence))
        tested = set().union(*(content_words(statements.get(c, "") + " " + c.replace("-", " ")) for c in cited))
        if len(said & tested) < SHARED_WORDS:
            found.append(sentence)
    return found


def test_a_cited_rule_must_speak_of_what_its_sentence_says():
    page = ("---\nkernelspec: {}\n---\n# T\n\n```{code-cell} ipython3\n"
            "rule(\"values-right\", \"every case gives the right values\", ok)\n"
            "rule(\"input-deleted\", \"the donated input is deleted after the call\", x.is_deleted())\n```\n\n"
            "A shared buffer is counted once {rule}`values-right`. "
            "After the call the donated input reads as deleted {rule}`input-deleted`.\n")
    statements = rule_statements(page)
    assert set(statements) == {"values-right", "input-deleted"}
    assert cited_for_more(page, statements) == ["A shared buffer is counted once {rule}`values-right`."]


def test_every_cited_rule_speaks_of_its_sentence():
    sources = {page: (REPO / "book" / f"{page}.md").read_text(encoding="utf-8") for page in PAGES}
    statements = {}
    for source in sources.values():
        statements.update(rule_statements(source))
    loose = {page: found for page, source in sources.items() if (found := cited_for_more(source, statements))}
    assert not loose, ("sentences whose cited rules share fewer than two content words with them (cite the "
                       f"rule that tests what the sentence says, or say what the rule tests): {loose}")
